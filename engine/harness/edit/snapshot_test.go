package edit

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func setChange(path string, onEdit func()) Change {
	key := []string{"mcpServers"}
	return Change{
		Harness: "cursor", Path: path,
		Edit: func(src []byte) ([]byte, error) {
			if onEdit != nil {
				onEdit()
			}
			return SetEntry(JSON, src, key, "capabilities", entry)
		},
		Created: func(src []byte) int { n, _ := Missing(JSON, src, key); return n },
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestApplySnapshotsThenWrites: the snapshot holds the bytes before (mode
// 600 in a 700 directory), the file keeps its mode, rollback restores it.
func TestApplySnapshotsThenWrites(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "mcp.json")
	orig := "{\n  \"mcpServers\": {}\n}\n"
	if err := os.WriteFile(path, []byte(orig), 0o640); err != nil {
		t.Fatal(err)
	}
	snaps := filepath.Join(dir, "snapshots")
	snap, res, err := Apply(snaps, "connect", []Change{setChange(path, nil)})
	if err != nil || res[0].Err != nil || !res[0].Changed {
		t.Fatalf("Apply: %v %+v", err, res)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o640 {
		t.Errorf("the config's mode is %v, want 0640 kept", fi.Mode().Perm())
	}
	for p, want := range map[string]os.FileMode{snaps: 0o700, snap.Dir(): 0o700, filepath.Join(snap.Dir(), "0.orig"): 0o600, filepath.Join(snap.Dir(), "snapshot.json"): 0o600} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v (%v), want %v", p, fi.Mode().Perm(), err, want)
		}
	}
	if got := mustRead(t, filepath.Join(snap.Dir(), "0.orig")); got != orig {
		t.Errorf("the snapshot holds %q, want %q", got, orig)
	}
	if _, _, err := Rollback(snaps, false); err != nil {
		t.Fatal(err)
	}
	if got := mustRead(t, path); got != orig {
		t.Errorf("after rollback: %q, want %q", got, orig)
	}
	if _, _, err := Rollback(snaps, false); err == nil {
		t.Error("a second rollback found a snapshot to restore again")
	}
}

// TestApplyRereadsAFileChangedMeanwhile: a harness that rewrites its config
// between connect's read and its rename is not overwritten: connect edits
// the new bytes (once); a file that keeps changing is an error and keeps the
// harness's bytes.
func TestApplyRereadsAFileChangedMeanwhile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(path, []byte(`{"a": 1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	calls := 0
	harnessWrites := func() {
		calls++
		if calls == 1 {
			_ = os.WriteFile(path, []byte(`{"b": 2}`), 0o600)
		}
	}
	snap, res, err := Apply(filepath.Join(dir, "s1"), "connect", []Change{setChange(path, harnessWrites)})
	if err != nil || res[0].Err != nil {
		t.Fatalf("Apply: %v %v", err, res[0].Err)
	}
	got := mustRead(t, path)
	if !strings.Contains(got, `"b": 2`) || !strings.Contains(got, "capabilities") {
		t.Errorf("the harness's change was lost or the entry is missing: %s", got)
	}
	if orig := mustRead(t, filepath.Join(snap.Dir(), "0.orig")); orig != `{"b": 2}` {
		t.Errorf("the snapshot holds %q, want the bytes that were overwritten", orig)
	}

	if err := os.WriteFile(path, []byte(`{"c": 3}`), 0o600); err != nil {
		t.Fatal(err)
	}
	n := 0
	always := func() { n++; _ = os.WriteFile(path, []byte(`{"n": `+strings.Repeat("1", n)+`}`), 0o600) }
	_, res, err = Apply(filepath.Join(dir, "s2"), "connect", []Change{setChange(path, always)})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Err == nil || !errors.Is(res[0].Err, ErrChanged) || !strings.Contains(res[0].Err.Error(), "twice") {
		t.Fatalf("error %v, want one saying the file changed twice", res[0].Err)
	}
	if got := mustRead(t, path); got != `{"n": 11}` {
		t.Errorf("the file holds %q, want the harness's last bytes", got)
	}
}

// TestSymlinkedConfigKeepsItsLink: the link stays a link, its target is
// edited, and rollback restores the target.
func TestSymlinkedConfigKeepsItsLink(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "dotfiles", "mcp.json")
	if err := os.MkdirAll(filepath.Dir(real), 0o700); err != nil {
		t.Fatal(err)
	}
	orig := `{"mcpServers": {"x": {"command": "y"}}}`
	if err := os.WriteFile(real, []byte(orig), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "mcp.json")
	if err := os.Symlink("dotfiles/mcp.json", link); err != nil {
		t.Fatal(err)
	}
	snaps := filepath.Join(dir, "snaps")
	if _, res, err := Apply(snaps, "connect", []Change{setChange(link, nil)}); err != nil || res[0].Err != nil {
		t.Fatalf("Apply: %v %+v", err, res)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the symlink was replaced by a file (%v)", err)
	}
	if !strings.Contains(mustRead(t, real), "capabilities") {
		t.Error("the link's target was not edited")
	}
	if _, _, err := Rollback(snaps, false); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(orig, mustRead(t, real)); diff != "" {
		t.Errorf("rollback: (-want +got)\n%s", diff)
	}
}

// TestReadOnlyRefusedOnlyWhenItWouldChange: a read-only config the edit
// would change is refused, unwritten; one that already is as the edit wants
// it (connect again, disconnect where there is no entry) is no error.
func TestReadOnlyRefusedOnlyWhenItWouldChange(t *testing.T) {
	connected, err := SetEntry(JSON, []byte("{\n  \"mcpServers\": {}\n}\n"), []string{"mcpServers"}, "capabilities", entry)
	if err != nil {
		t.Fatal(err)
	}
	remove := func(path string) Change {
		return Change{Harness: "cursor", Path: path, Edit: func(src []byte) ([]byte, error) {
			return RemoveEntry(JSON, src, []string{"mcpServers"}, "capabilities")
		}}
	}
	for _, tc := range []struct {
		name, orig string
		change     func(path string) Change
		wantErr    string // "" when no error
	}{
		{"connect, not connected", "{\n  \"mcpServers\": {}\n}\n", func(p string) Change { return setChange(p, nil) }, "the file is read-only"},
		{"connect, connected already", string(connected), func(p string) Change { return setChange(p, nil) }, ""},
		{"disconnect, connected", string(connected), remove, "the file is read-only"},
		{"disconnect, no entry", "{\n  \"theme\": \"dark\"\n}\n", remove, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "mcp.json")
			if err := os.WriteFile(path, []byte(tc.orig), 0o444); err != nil {
				t.Fatal(err)
			}
			snap, res, err := Apply(filepath.Join(t.TempDir(), "snapshots"), "connect", []Change{tc.change(path)})
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if res[0].Err != nil {
				got = res[0].Err.Error()
			}
			if (tc.wantErr == "") != (got == "") || !strings.Contains(got, tc.wantErr) {
				t.Errorf("the file's error is %q, want one with %q", got, tc.wantErr)
			}
			if res[0].Changed || snap != nil {
				t.Errorf("Changed %v, snapshot %v: want nothing written", res[0].Changed, snap)
			}
			if diff := cmp.Diff(tc.orig, mustRead(t, path)); diff != "" {
				t.Errorf("the file changed (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRollbackOfAFileRemovedSince: a config removed after connect wrote it
// is named as removed (not "changed", with a disconnect hint that cannot
// apply), and --force puts back its bytes before.
func TestRollbackOfAFileRemovedSince(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "settings.json")
	orig := "{\n  \"theme\": \"dark\"\n}\n"
	if err := os.WriteFile(path, []byte(orig), 0o600); err != nil {
		t.Fatal(err)
	}
	snaps := filepath.Join(dir, "snapshots")
	if _, res, err := Apply(snaps, "connect", []Change{setChange(path, nil)}); err != nil || res[0].Err != nil {
		t.Fatalf("Apply: %v %+v", err, res)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	_, res, err := Rollback(snaps, false)
	if err != nil {
		t.Fatal(err)
	}
	want := path + " was removed after it was written (changed since it was written; rollback --force puts it back as it was before)"
	if len(res) != 1 || res[0].Err == nil || res[0].Err.Error() != want || !errors.Is(res[0].Err, ErrChangedSinceWrite) {
		t.Fatalf("Rollback: %+v, want the error %q", res, want)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the refused rollback wrote the file (%v)", err)
	}
	if _, res, err := Rollback(snaps, true); err != nil || res[0].Err != nil {
		t.Fatalf("Rollback --force: %v %+v", err, res)
	}
	if diff := cmp.Diff(orig, mustRead(t, path)); diff != "" {
		t.Errorf("rollback --force (-want +got):\n%s", diff)
	}
}
