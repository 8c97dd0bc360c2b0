package app

import (
	"fmt"
	"os/exec"
	"runtime"

	"github.com/capabilities-sh/capabilities/app/screen"
)

// watcherName is the tray host (StatusNotifierWatcher) on the session bus.
const watcherName = "org.kde.StatusNotifierWatcher"

// trayView is what the tray shows.
type trayView struct {
	// gone is set when the hub's folder is gone: the tray says so and
	// offers a new hub there, and nothing else.
	gone  *hubGone
	calls []*call // pending, oldest first
	// interrupted are the runs whose process stopped while they ran: the
	// Approvals screen resumes or cancels them.
	interrupted []string
	review      int      // new or changed tools not reviewed
	failing     []string // the sources whose last check failed
	paused      bool
	signIn      string // "Sign in to github…", "" when no connection needs it
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// openPage opens the console at a screen (from the tray).
func (a *App) openPage(screen string) {
	if err := a.win.Show(screen, false); err != nil {
		a.log.Warn("opening the console", "screen", screen, "err", err)
	}
}

// openCall opens the console at the i-th pending call of the tray's menu
// (the calls in the order the menu lists them), or at the pending calls
// when it is gone.
func (a *App) openCall(i int) {
	calls := a.sorted()
	if i >= len(calls) {
		a.openPage("")
		return
	}
	a.openPage(screen.Call(calls[i].run, calls[i].id))
}

// openFolder shows a folder in the system's file manager.
func openFolder(dir string) error {
	name, args := "xdg-open", []string{dir}
	switch runtime.GOOS {
	case "darwin":
		name = "open"
	case "windows":
		name = "explorer"
	}
	cmd := exec.Command(name, args...)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("opening %s with %s: %w", dir, name, err)
	}
	go func() { _ = cmd.Wait() }()
	return nil
}
