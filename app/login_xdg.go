//go:build !darwin && !windows

package app

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/capabilities-sh/capabilities/build/linux"
)

// loginSupported says whether "Start at login" is built for this system:
// here the XDG autostart entry (Linux, the BSDs); on macOS a LaunchAgent
// (login_darwin.go). Windows is not a target yet.
func loginSupported() bool { return true }

// loginPath is $XDG_CONFIG_HOME/autostart/capabilities.desktop (default
// ~/.config/autostart).
func loginPath() (string, error) {
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

// loginEntry is build/linux's autostart entry. When capabilities-desktop on
// PATH is not this program, it starts this program by its absolute path.
func loginEntry() ([]byte, error) {
	entry := linux.Autostart
	if self, err := os.Executable(); err == nil && !onPath(self) && !strings.ContainsAny(self, " \t\n\"'\\`$") {
		entry = bytes.ReplaceAll(entry, []byte("Exec=capabilities-desktop\n"), []byte("Exec="+self+"\n"))
		entry = bytes.ReplaceAll(entry, []byte("TryExec=capabilities-desktop\n"), []byte("TryExec="+self+"\n"))
	}
	return entry, nil
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
