package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/gofrs/flock"
	"github.com/google/go-cmp/cmp"
)

// TestGuestRootLockedWhileTheDriverLives: a Driver's empty directory is
// locked while it lives (so no other process sweeps it) and gone after
// Close.
func TestGuestRootLockedWhileTheDriverLives(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	d, err := New(Options{MemoryBytes: testMemoryBytes, Warm: 1})
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(d.root.dir) != os.Getenv("TMPDIR") {
		t.Errorf("guest root %s is not in TMPDIR", d.root.dir)
	}
	other := flock.New(d.root.dir, flock.SetFlag(os.O_RDONLY))
	if ok, err := other.TryLock(); ok || err != nil {
		t.Errorf("another holder locked the guest root of a live Driver: %v %v", ok, err)
	}
	_ = other.Close()
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(d.root.dir); !os.IsNotExist(err) {
		t.Errorf("guest root after Close: %v", err)
	}
}

// TestSweepRoots: what a killed process left is removed; what a live one
// holds, one just made, one someone put a file in, and the unlocked
// directories of earlier versions stay.
func TestSweepRoots(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	old := now.Add(-2 * rootGrace)
	mk := func(name string, mtime time.Time) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.Mkdir(p, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
		return p
	}
	mk(rootPrefix+"killed-1", old)
	mk(rootPrefix+"killed-2", old)
	live := mk(rootPrefix+"live", old)
	mk(rootPrefix+"just-made", now.Add(-time.Second))
	notEmpty := mk(rootPrefix+"not-empty", old)
	if err := os.WriteFile(filepath.Join(notEmpty, "x"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(notEmpty, old, old); err != nil { // the write made it new
		t.Fatal(err)
	}
	mk("capabilities-sandbox-12345", old) // an earlier version's: never swept
	if err := os.WriteFile(filepath.Join(dir, rootPrefix+"a-file"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	held := flock.New(live, flock.SetFlag(os.O_RDONLY))
	if ok, err := held.TryLock(); !ok || err != nil {
		t.Fatal(ok, err)
	}
	defer held.Close()

	if n := sweepRoots(dir, now); n != 2 {
		t.Errorf("swept %d, want 2", n)
	}
	var left []string
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		left = append(left, e.Name())
	}
	slices.Sort(left)
	want := []string{"capabilities-sandbox-12345", rootPrefix + "a-file", rootPrefix + "just-made", rootPrefix + "live", rootPrefix + "not-empty"}
	if diff := cmp.Diff(want, left); diff != "" {
		t.Errorf("left after the sweep (-want +got):\n%s", diff)
	}
}
