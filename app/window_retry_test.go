package app

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/internal/testenv"
)

// TestWindowStartedAgainAfterFailingToStart: a window process that fails
// as it starts (GTK could not open a loaded session's display) is started
// once more and told the screen again; the second, running, shows it.
func TestWindowStartedAgainAfterFailingToStart(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "capabilities-window")
	shown := filepath.Join(dir, "shown")
	// --check passes; the first start fails at once; the next reads its
	// commands into shown.
	script := `#!/bin/sh
[ "$1" = --check ] && exit 0
if [ ! -e "` + dir + `/failed" ]; then : > "` + dir + `/failed"; exit 2; fi
cat >> "` + shown + `"
`
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	w := &windowProcess{bin: bin, log: slog.New(slog.DiscardHandler), pages: noWindows{new(int)}}
	// Show may find the first process gone already (its stdin closed):
	// the start again tells the screen anyway.
	_ = w.Show("review", false)
	deadline := time.Now().Add(testenv.Timeout(10 * time.Second))
	for {
		b, _ := os.ReadFile(shown)
		if strings.Contains(string(b), `show "review" false`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the window was not started again with its screen; it got %q", b)
		}
		time.Sleep(20 * time.Millisecond)
	}
	w.Close()
}
