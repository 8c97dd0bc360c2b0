//go:build !darwin && !windows

package app

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/capabilities-sh/capabilities/build/linux"
	"github.com/capabilities-sh/capabilities/store"
)

// loginSupported says whether "Start at login" is built for this system:
// here the XDG autostart entry (Linux, the BSDs); on macOS a LaunchAgent
// (login_darwin.go). Windows is not a target yet.
func loginSupported() bool { return true }

// autostartPath is $XDG_CONFIG_HOME/autostart/capabilities.desktop
// (default ~/.config/autostart).
func autostartPath() (string, error) {
	cfg := os.Getenv("XDG_CONFIG_HOME")
	if cfg == "" || !filepath.IsAbs(cfg) {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("finding the autostart folder: %w", err)
		}
		cfg = filepath.Join(home, ".config")
	}
	return filepath.Join(cfg, "autostart", "capabilities.desktop"), nil
}

// startsAtLogin says whether the autostart entry is there.
func startsAtLogin() bool {
	p, err := autostartPath()
	if err != nil {
		return false
	}
	_, err = os.Stat(p)
	return err == nil
}

// setStartAtLogin writes the autostart entry (build/linux), or removes it.
// When capabilities-desktop on PATH is not this program, the entry starts
// this program by its absolute path.
func setStartAtLogin(on bool) error {
	p, err := autostartPath()
	if err != nil {
		return err
	}
	if !on {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("turning off start at login: %w", err)
		}
		return nil
	}
	entry := linux.Autostart
	if self, err := os.Executable(); err == nil && !onPath(self) && !strings.ContainsAny(self, " \t\n\"'\\`$") {
		entry = bytes.ReplaceAll(entry, []byte("Exec=capabilities-desktop\n"), []byte("Exec="+self+"\n"))
		entry = bytes.ReplaceAll(entry, []byte("TryExec=capabilities-desktop\n"), []byte("TryExec="+self+"\n"))
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("turning on start at login: %w", err)
	}
	if err := store.WriteFileAtomic(p, entry); err != nil {
		return fmt.Errorf("turning on start at login: %w", err)
	}
	return nil
}

// onPath says whether capabilities-desktop found on PATH is the program at
// self.
func onPath(self string) bool {
	found, err := exec.LookPath("capabilities-desktop")
	if err != nil {
		return false
	}
	a, err1 := os.Stat(found)
	b, err2 := os.Stat(self)
	return err1 == nil && err2 == nil && os.SameFile(a, b)
}
