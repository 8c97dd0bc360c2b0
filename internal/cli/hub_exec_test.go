package cli

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

// TestErrorsShowEscapes: what Main says on stderr goes through the same
// rule as stdout; an error that quotes outside text (here a file name)
// cannot send the terminal an escape sequence.
func TestErrorsShowEscapes(t *testing.T) {
	t.Setenv("CAPABILITIES_HOME", t.TempDir())
	name := filepath.Join(t.TempDir(), "no\x1b[2J\r\u202efile.js")
	var stdout, stderr bytes.Buffer
	code := Main([]string{"hub", "exec", "--file", name}, strings.NewReader(""), &stdout, &stderr)
	if code != exitError {
		t.Fatalf("exit %d, want 1; stderr %q", code, stderr.String())
	}
	if want := `no\u001b[2J\r\u202efile.js`; !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr %q does not show %q", stderr.String(), want)
	}
	if i := strings.IndexAny(stderr.String(), "\x1b\r\u202e"); i >= 0 {
		t.Errorf("a raw control or invisible character at %d: %q", i, stderr.String())
	}
}
