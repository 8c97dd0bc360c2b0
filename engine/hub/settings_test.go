package hub

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capabilities-sh/capabilities/store"
)

// TestSettings: no file is the defaults; what is set is read back (the
// file mode 600); a malformed file is an error naming it and how to fix
// it, and is left as it was.
func TestSettings(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "hub")
	st, _, err := store.Init(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	h := New(st, Options{})
	defer h.Close()
	if s, err := h.Settings(); err != nil || s != (Settings{}) {
		t.Fatalf("settings with no file: %+v, %v; want the defaults", s, err)
	}
	if err := h.SetSettings(Settings{RaiseApprovals: true}); err != nil {
		t.Fatal(err)
	}
	if s, err := h.Settings(); err != nil || !s.RaiseApprovals {
		t.Fatalf("settings after SetSettings: %+v, %v", s, err)
	}
	p := filepath.Join(dir, SettingsFile)
	if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the settings file: %v, mode %v; want 600", err, fi.Mode().Perm())
	}
	bad := []byte(`{"raiseApprovals": tru`)
	if err := os.WriteFile(p, bad, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = h.Settings()
	if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "delete the file") {
		t.Fatalf("a malformed settings file: %v; want an error naming %s and how to fix it", err, p)
	}
	if b, _ := os.ReadFile(p); string(b) != string(bad) {
		t.Fatalf("reading a malformed settings file changed it to %q", b)
	}
}
