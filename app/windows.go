package app

import (
	"context"
	"io"
	"log/slog"

	"github.com/capabilities-sh/capabilities/engine/hub"
)

// windows shows the console's screens to the person: the app's own window
// (Wails, in a build with the desktop tag) or, in the pure-Go build, a page
// in the browser. Screens: "" (the pending calls), "review", "runs",
// "sources".
type windows interface {
	// Show brings the screen up; auto is true when the app opens it by
	// itself (a pending call with no notification daemon) rather than
	// because the person asked.
	Show(screen string, auto bool) error
	// Withdraw takes away a screen the app opened by itself once nothing
	// waits any more (the call was decided elsewhere); a page in the
	// browser cannot be taken away.
	Withdraw()
	// NoTray says the tray is unavailable: the app's own window shows
	// itself, as the one way to reach the app (pages do nothing: pending
	// calls open them).
	NoTray()
	Close()
}

// shell runs the app's body beside the window system. The pure-Go build
// (shell_plain.go) runs body as is, with pages in the browser; the Wails
// build (shell_wails.go) runs Wails' main loop on this goroutine and body
// beside it, and makes sure one app runs per hub and person.
type shell interface {
	// run calls body with a way to make the windows once the hub is open.
	run(ctx context.Context, body func(ctx context.Context, open func(*hub.Hub) windows) error) error
}

// shellOptions are what a shell needs before the hub is open.
type shellOptions struct {
	log    *slog.Logger
	stderr io.Writer
	open   func(link string) error // the browser, for the pure-Go build
	dir    string                  // the hub's directory: one app per hub
}
