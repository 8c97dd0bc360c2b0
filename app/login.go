package app

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/capabilities-sh/capabilities/store"
)

// "Start at login" is one file the system reads at login: where it goes and
// what it holds are per system (loginPath, loginEntry: login_xdg.go for
// the XDG autostart entry on Linux and the BSDs, login_darwin.go for a
// LaunchAgent on macOS).

// startsAtLogin says whether the login entry is there.
func startsAtLogin() bool {
	p, err := loginPath()
	if err != nil {
		return false
	}
	_, err = os.Stat(p)
	return err == nil
}

// setStartAtLogin writes the login entry, or removes it.
func setStartAtLogin(on bool) error {
	p, err := loginPath()
	if err != nil {
		return err
	}
	if !on {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("turning off start at login: %w", err)
		}
		return nil
	}
	entry, err := loginEntry()
	if err != nil {
		return fmt.Errorf("turning on start at login: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("turning on start at login: %w", err)
	}
	if err := store.WriteFileAtomic(p, entry); err != nil {
		return fmt.Errorf("turning on start at login: %w", err)
	}
	return nil
}

// toggleLogin turns "Start at login" on or off (the tray's checkbox).
func (a *App) toggleLogin() {
	on := !startsAtLogin()
	if err := setStartAtLogin(on); err != nil {
		a.log.Warn("start at login", "err", err)
	}
	a.log.Info("start at login", "on", startsAtLogin())
	if a.tray != nil {
		a.tray.showLogin(startsAtLogin())
	}
}
