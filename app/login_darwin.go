package app

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/capabilities-sh/capabilities/store"
)

// loginSupported: on macOS "Start at login" is a LaunchAgent.
func loginSupported() bool { return true }

// launchAgentPath is ~/Library/LaunchAgents/sh.capabilities.desktop.plist.
func launchAgentPath() (string, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("finding the LaunchAgents folder: %w", err)
	}
	return filepath.Join(home, "Library", "LaunchAgents", launchAgentLabel+".plist"), nil
}

// startsAtLogin says whether the LaunchAgent is there.
func startsAtLogin() bool {
	p, err := launchAgentPath()
	if err != nil {
		return false
	}
	_, err = os.Stat(p)
	return err == nil
}

// setStartAtLogin writes the LaunchAgent starting this program, or removes
// it. launchd reads it at the next login.
func setStartAtLogin(on bool) error {
	p, err := launchAgentPath()
	if err != nil {
		return err
	}
	if !on {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("turning off start at login: %w", err)
		}
		return nil
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("turning on start at login: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("turning on start at login: %w", err)
	}
	if err := store.WriteFileAtomic(p, launchAgent(self)); err != nil {
		return fmt.Errorf("turning on start at login: %w", err)
	}
	return nil
}
