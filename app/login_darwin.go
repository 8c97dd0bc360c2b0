package app

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/capabilities-sh/capabilities/store"
)

// loginSupported: on macOS "Start at login" is a LaunchAgent.
func loginSupported() bool { return true }

// loginPath is ~/Library/LaunchAgents/sh.capabilities.desktop.plist.
func loginPath() (string, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("finding the LaunchAgents folder: %w", err)
	}
	return filepath.Join(home, "Library", "LaunchAgents", launchAgentLabel+".plist"), nil
}

// loginEntry is the LaunchAgent starting this program; launchd reads it at
// the next login.
func loginEntry() ([]byte, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	home, err := store.OtherHome()
	if err != nil {
		return nil, err
	}
	return launchAgent(self, home), nil
}
