package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConnectChecksTheBinary: connect writes the path of the binary that
// runs it into every config, so a binary that does not answer --version as
// capabilities (here the test binary itself) is refused before anything is
// written.
func TestConnectChecksTheBinary(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Setenv("CAPABILITIES_HOME", filepath.Join(home, "caps"))
	cfg := filepath.Join(home, ".cursor", "mcp.json")
	if err := os.MkdirAll(filepath.Dir(cfg), 0o700); err != nil {
		t.Fatal(err)
	}
	orig := []byte(`{"mcpServers": {}}`)
	if err := os.WriteFile(cfg, orig, 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := Main([]string{"hub", "connect", "--client", "cursor"}, strings.NewReader(""), &stdout, &stderr)
	if code != exitError || !strings.Contains(stderr.String(), "does not answer --version") {
		t.Fatalf("exit %d, stderr %q: want exit 1 and the binary named as not answering --version", code, stderr.String())
	}
	if got, _ := os.ReadFile(cfg); !bytes.Equal(got, orig) {
		t.Errorf("the config was written: %s", got)
	}
	if _, err := os.Stat(filepath.Join(home, "caps", "hub", "snapshots")); err == nil {
		t.Error("a snapshot was made though nothing was to be written")
	}
}
