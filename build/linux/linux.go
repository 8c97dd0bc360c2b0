// Package linux carries the Linux desktop files to the programs that write
// them: the desktop app's "Start at login" writes Autostart to
// $XDG_CONFIG_HOME/autostart/capabilities.desktop (default ~/.config/autostart).
// The Debian package installs the files of this folder itself
// (build/linux/nfpm.yaml).
package linux

import _ "embed"

// Autostart is the XDG autostart entry (capabilities-autostart.desktop). Its
// Exec is capabilities-desktop, found on PATH; a program started from
// elsewhere may put its own absolute path there.
//
//go:embed capabilities-autostart.desktop
var Autostart []byte

// Icon is the app's icon, 256×256 PNG.
//
//go:embed icons/hicolor/256x256/apps/capabilities.png
var Icon []byte
