// Package window is the desktop app's window process (cmd/capabilities-window):
// the console's screens in a Wails window, over the shared store. It is
// built with the Wails build tags (desktop,production,webkit2_41) and cgo;
// the app (pure Go) starts it while a window is open, so the app itself
// links no webview.
package window
