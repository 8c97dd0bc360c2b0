package main

// helpText is what --help prints, in every build.
const helpText = `capabilities-window: the capabilities desktop app's window.

It shows the console's screens (the approval window for a call that waits for a
person, the review window for sources and decisions) in a native window
(WebKitGTK 4.1 on Linux) over the hub's store, $CAPABILITIES_HOME/hub. It is not
started by hand: capabilities-desktop starts it, from beside its own binary, when
a screen is first shown, writes one line per screen on its stdin
(show "<screen>" <auto>), and closes its stdin when nothing needs the window; it
ends then, or when the person closes the window. Where it is missing or
--check fails, the app opens the same screens in the browser.

Usage:
  capabilities-window           (started by capabilities-desktop)
  capabilities-window --check   prints "capabilities-window: ok" when the window's
                                libraries load (the app asks before using it)
  capabilities-window --help    this text

Built only with go build -tags desktop,production,webkit2_41 (cgo, libgtk-3-dev,
libwebkit2gtk-4.1-dev; scripts/setup.sh does); a build without the desktop tag
has no window and exits 1.

Environment:
  CAPABILITIES_HOME        the hub's folder is $CAPABILITIES_HOME/hub (default ~/.capabilities)
  DISPLAY, WAYLAND_DISPLAY the graphical session; with neither set it exits 2
  NO_KEYRING               set: credentials in the mode-600 file, not the OS keychain

Exit codes:
  0  the window was closed, or its stdin ended
  1  the window could not run (or this build has none)
  2  no graphical session, or a wrong command line
`
