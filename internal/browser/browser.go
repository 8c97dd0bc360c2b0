// Package browser opens a link in the person's browser: the command in
// CAPABILITIES_BROWSER, else $BROWSER, else the system's opener.
package browser

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
)

// ErrOff says CAPABILITIES_NO_BROWSER=1 asked for no browser.
var ErrOff = errors.New("no browser wanted")

// ErrNoDisplay says no browser can be shown: no display, or no opener.
var ErrNoDisplay = errors.New("no display or browser")

// Argv is the command that opens a link: CAPABILITIES_BROWSER if
// set, else $BROWSER (its first entry), else the system's opener. why says,
// in a clause the model may read, why none can be used: opening is turned
// off, or the system's opener needs a display there is not, or is missing.
func Argv() (argv []string, why string, err error) {
	if os.Getenv("CAPABILITIES_NO_BROWSER") == "1" {
		return nil, "opening pages is turned off here (CAPABILITIES_NO_BROWSER=1)", ErrOff
	}
	cmdline := os.Getenv("CAPABILITIES_BROWSER")
	if cmdline == "" {
		cmdline, _, _ = strings.Cut(os.Getenv("BROWSER"), string(os.PathListSeparator))
	}
	if argv = strings.Fields(cmdline); len(argv) > 0 {
		return argv, "", nil
	}
	switch runtime.GOOS {
	case "darwin":
		return []string{"open"}, "", nil
	case "windows":
		return []string{"rundll32", "url.dll,FileProtocolHandler"}, "", nil
	}
	if os.Getenv("DISPLAY") == "" && os.Getenv("WAYLAND_DISPLAY") == "" {
		return nil, "this machine has no display and no browser is configured ($BROWSER)", ErrNoDisplay
	}
	if _, err := exec.LookPath("xdg-open"); err != nil {
		return nil, "this machine has no browser opener (xdg-open) and no browser is configured ($BROWSER)", ErrNoDisplay
	}
	return []string{"xdg-open"}, "", nil
}

// Open starts the person's browser on a link, without waiting for
// it (see Argv). A "%s" in the command stands for the link; else
// the link is the last argument. An error never holds the link.
func Open(link string) error {
	argv, _, err := Argv()
	if err != nil {
		return err
	}
	substituted := false
	for i, a := range argv[1:] {
		if strings.Contains(a, "%s") {
			argv[i+1] = strings.ReplaceAll(a, "%s", link)
			substituted = true
		}
	}
	if !substituted {
		argv = append(argv, link)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("opening a browser with %s: %w", argv[0], err)
	}
	go func() { _ = cmd.Wait() }()
	return nil
}
