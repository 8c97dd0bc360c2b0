package edit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// removeChange takes the hub's entry out of path and, as disconnect does
// for a file connect created, removes the file left empty.
func removeChange(path string, created bool) Change {
	key := []string{"mcpServers"}
	return Change{
		Harness: "cursor", Path: path, Format: JSON, RemoveEmpty: created,
		Edit: func(src []byte) ([]byte, error) {
			out, err := RemoveEntry(JSON, src, key, "capabilities")
			if err != nil {
				return nil, err
			}
			return Prune(JSON, out, key, 1)
		},
	}
}

// TestDisconnectRemovesTheFileConnectCreated: a file connect created is
// removed when the entry was all it held, kept when the person added to
// it; a file that was there before connect, or one written again after a
// disconnect removed it, is never connect's.
func TestDisconnectRemovesTheFileConnectCreated(t *testing.T) {
	dir := t.TempDir()
	snaps := filepath.Join(dir, "snapshots")
	path := filepath.Join(dir, "cursor", "mcp.json")
	disconnect := func() Result {
		t.Helper()
		created, _ := CreatedByConnect(snaps, path)
		_, res, err := Apply(snaps, "disconnect", []Change{removeChange(path, created)})
		if err != nil || res[0].Err != nil {
			t.Fatalf("disconnect: %v %+v", err, res)
		}
		return res[0]
	}
	connect := func() {
		t.Helper()
		if _, res, err := Apply(snaps, "connect", []Change{setChange(path, nil)}); err != nil || res[0].Err != nil {
			t.Fatalf("connect: %v %+v", err, res)
		}
	}

	connect()
	if created, dirs := CreatedByConnect(snaps, path); !created || len(dirs) != 1 || dirs[0] != filepath.Dir(path) {
		t.Fatalf("CreatedByConnect = %v %v, want true [%s]", created, dirs, filepath.Dir(path))
	}
	if r := disconnect(); !r.Delete || !r.Changed {
		t.Fatalf("disconnect kept the file connect created: %+v", r)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("the file is still there: %v", err)
	}

	// Added to since: kept, with what was added.
	connect()
	b, _ := os.ReadFile(path)
	if err := os.WriteFile(path, append([]byte(`{"theme": "dark",`), b[1:]...), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := disconnect(); r.Delete {
		t.Fatalf("disconnect removed a file the person added to")
	}
	if got := mustRead(t, path); !strings.Contains(got, `"theme": "dark"`) || strings.Contains(got, "capabilities") {
		t.Errorf("the file holds %q, want the person's key and not the hub's entry", got)
	}

	// The person's own empty file, there before connect: kept.
	own := filepath.Join(dir, "own", "mcp.json")
	if err := os.MkdirAll(filepath.Dir(own), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(own, []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, res, err := Apply(snaps, "connect", []Change{setChange(own, nil)}); err != nil || res[0].Err != nil {
		t.Fatalf("connect: %v %+v", err, res)
	}
	if created, _ := CreatedByConnect(snaps, own); created {
		t.Fatal("CreatedByConnect says the person's own file is connect's")
	}
	if _, res, err := Apply(snaps, "disconnect", []Change{removeChange(own, false)}); err != nil || res[0].Delete {
		t.Fatalf("disconnect: %v %+v", err, res)
	}
	if got := mustRead(t, own); got != "{}\n" {
		t.Errorf("the person's file holds %q, want {}", got)
	}
}

func TestEmpty(t *testing.T) {
	for _, c := range []struct {
		format Format
		in     string
		want   bool
	}{
		{JSON, "{}", true}, {JSON, "{ }\n", true}, {JSONC, "\xEF\xBB\xBF{\r\n}\r\n", true}, {JSON, "", true},
		{JSONC, "{} // mine", false}, {JSON, `{"a": 1}`, false}, {JSON, "[]", false},
		{TOML, "\n\n", true}, {TOML, "# mine\n", false},
	} {
		if got := Empty(c.format, []byte(c.in)); got != c.want {
			t.Errorf("Empty(%s, %q) = %v, want %v", c.format, c.in, got, c.want)
		}
	}
}
