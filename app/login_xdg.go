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
	"github.com/capabilities-sh/capabilities/store"
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
// When the hub is not at the default place (CAPABILITIES_HOME), the entry
// names it, else the app started at login would open ~/.capabilities.
func loginEntry() ([]byte, error) {
	entry := linux.Autostart
	cmd := "capabilities-desktop"
	if self, err := os.Executable(); err == nil && !onPath(self) && !strings.ContainsAny(self, execSpecial) {
		cmd = self
		entry = bytes.ReplaceAll(entry, []byte("TryExec=capabilities-desktop\n"), []byte("TryExec="+self+"\n"))
	}
	home, err := store.OtherHome()
	if err != nil {
		return nil, err
	}
	if home != "" {
		if strings.ContainsAny(home, execSpecial) {
			return nil, fmt.Errorf("the hub's home %q holds a character an autostart entry's Exec cannot carry as it is (a blank, a quote, \\, `, $ or %%): move the hub to a plain path and set CAPABILITIES_HOME to it", home)
		}
		cmd = "env CAPABILITIES_HOME=" + home + " " + cmd
	}
	entry = bytes.ReplaceAll(entry, []byte("Exec=capabilities-desktop\n"), []byte("Exec="+cmd+"\n"))
	return entry, nil
}

// execSpecial are the characters an autostart entry's Exec would need to
// quote or escape (the desktop entry spec); a path holding one is not
// written there.
const execSpecial = " \t\n\"'\\`$%"

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
