package testenv

import (
	"os"
	"os/exec"
	"testing"
)

// Chromium returns the path of headless Chromium (Debian's
// chromium-headless-shell, or chromium) for tests that drive it with
// playwright-core. Without it the test fails when CI=true and is skipped
// elsewhere, saying what installs it.
func Chromium(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium-headless-shell", "chromium"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "Chromium (Debian's chromium-headless-shell) missing: run scripts/setup.sh --tests"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}
