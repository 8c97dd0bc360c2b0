package edit

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// tree lists every path under dir with its bytes ("/" for a folder).
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			out[rel] = "/"
			return nil
		}
		b, err := os.ReadFile(p)
		out[rel] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestNewFilesAndRemovals: writing new files in folders that do not exist
// (a skill's copy) records those folders; rollback removes the files and
// the folders, leaving the tree as it was. A Delete change removes a file,
// and rolling it back writes its bytes again; a file that changed after
// the edit wrote it is not removed.
func TestNewFilesAndRemovals(t *testing.T) {
	home := t.TempDir()
	snaps := filepath.Join(t.TempDir(), "snapshots")
	if err := os.MkdirAll(filepath.Join(home, ".claude"), 0o755); err != nil {
		t.Fatal(err)
	}
	before := tree(t, home)
	files := map[string]string{"SKILL.md": "---\nname: s\n---\n", "scripts/run.py": "print(1)\n"}
	var adds, dels []Change
	for rel, body := range files {
		path := filepath.Join(home, ".claude", "skills", "s", filepath.FromSlash(rel))
		adds = append(adds, Change{Harness: "claude-code", Path: path, Skill: "s", Edit: func([]byte) ([]byte, error) { return []byte(body), nil }})
		dels = append(dels, Change{Harness: "claude-code", Path: path, Skill: "s", Delete: true})
	}
	snap, res, err := Apply(snaps, "connect", adds)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil || !r.Changed {
			t.Fatalf("%s: %v changed=%v", r.Path, r.Err, r.Changed)
		}
	}
	want := []string{filepath.Join(home, ".claude", "skills", "s", "scripts"), filepath.Join(home, ".claude", "skills", "s"), filepath.Join(home, ".claude", "skills")}
	if diff := cmp.Diff(want, snap.Dirs); diff != "" {
		t.Errorf("dirs made (-want +got):\n%s", diff)
	}
	for _, f := range snap.Files {
		if f.Skill != "s" || f.Existed {
			t.Errorf("snapshot file %+v: want skill s, not existing before", f)
		}
	}
	installed := tree(t, home)
	if installed[filepath.Join(".claude", "skills", "s", "scripts", "run.py")] != "print(1)\n" {
		t.Fatalf("not written: %v", installed)
	}
	if _, _, err := Rollback(snaps, false); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before, tree(t, home)); diff != "" {
		t.Errorf("rollback left (-before +after):\n%s", diff)
	}

	// Connect again, then remove with Delete changes: the files go,
	// rollback writes them again.
	if _, _, err := Apply(snaps, "connect", adds); err != nil {
		t.Fatal(err)
	}
	snap, res, err = Apply(snaps, "disconnect", dels)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil || !r.Changed {
			t.Fatalf("delete %s: %v changed=%v", r.Path, r.Err, r.Changed)
		}
	}
	RemoveEmptyDirs([]string{filepath.Join(home, ".claude", "skills", "s", "scripts"), filepath.Join(home, ".claude", "skills", "s"), filepath.Join(home, ".claude", "skills")})
	if diff := cmp.Diff(before, tree(t, home)); diff != "" {
		t.Errorf("after the deletes (-before +after):\n%s", diff)
	}
	if len(snap.Files) != 2 || !snap.Files[0].Removed {
		t.Errorf("the snapshot does not record the removals: %+v", snap.Files)
	}
	if _, rest, err := Rollback(snaps, false); err != nil || rest[0].Err != nil || rest[1].Err != nil {
		t.Fatalf("rollback of the deletes: %v %+v", err, rest)
	}
	if diff := cmp.Diff(installed, tree(t, home)); diff != "" {
		t.Errorf("rollback of the deletes (-installed +after):\n%s", diff)
	}
	// A file changed since: a Delete whose Edit refuses it leaves it.
	p := filepath.Join(home, ".claude", "skills", "s", "SKILL.md")
	if err := os.WriteFile(p, []byte("mine now"), 0o600); err != nil {
		t.Fatal(err)
	}
	refuse := Change{Path: p, Delete: true, Edit: func(src []byte) ([]byte, error) {
		if string(src) != files["SKILL.md"] {
			return nil, ErrChanged
		}
		return nil, nil
	}}
	if _, res, _ := Apply(snaps, "disconnect", []Change{refuse}); res[0].Err == nil || res[0].Changed {
		t.Errorf("a changed file was removed: %+v", res[0])
	}
	if mustRead(t, p) != "mine now" {
		t.Error("the changed file is gone")
	}
}
