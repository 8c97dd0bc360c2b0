package app

import (
	"log/slog"

	"github.com/capabilities-sh/capabilities/engine/hub"
)

// windows shows the console's screens to the person: the app's own window
// (capabilities-window beside the app: window_process.go) or, where there
// is none or it cannot start, a page in the browser (pages.go). Screens:
// "" (the pending calls), "review", "runs", "sources", "settings".
type windows interface {
	// Show brings the screen up; auto is true when the app opens it by
	// itself (a pending call with no notification daemon) rather than
	// because the person asked.
	Show(screen string, auto bool) error
	// Withdraw takes away the pending calls' screen once nothing waits any
	// more (decided there, in a notification, or elsewhere); a page in the
	// browser cannot be taken away.
	Withdraw()
	// NoTray says the tray is unavailable: the app's own window shows
	// itself, as the one way to reach the app (pages do nothing: pending
	// calls open them).
	NoTray()
	Close()
}

// windowsOptions are what the windows need.
type windowsOptions struct {
	hub  *hub.Hub
	log  *slog.Logger
	open func(link string) error // the browser, for the pure-Go build
	// gone says what happened to the hub once its folder is gone ("" while
	// it is there): the console's API answers every request with it.
	gone func() string
}
