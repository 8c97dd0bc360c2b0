package store_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capabilities-sh/capabilities/store"
)

// TestGenerationMovesWithEveryWriteOfWhatARunSees: a Put, Update or Delete
// of a source, manifest, connection, policy or profile moves the store's
// generation, each one, back to back with no pause between them (a
// modification time would not tell writes in one clock tick apart), and
// another handle on the same directory (another process) sees it at once;
// a run's record, its journal and a blob do not move it.
func TestGenerationMovesWithEveryWriteOfWhatARunSees(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "hub")
	f, _, err := store.Init(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	other, err := store.Open(dir) // a second process's view of the store
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = other.Close() })
	stores := map[string]store.Store{"file": f, "mem": store.NewMem()}
	for name, st := range stores {
		t.Run(name, func(t *testing.T) {
			g := st.(store.Generationer)
			readers := []store.Generationer{g}
			if name == "file" {
				readers = append(readers, other)
			}
			gen := func() []store.Generation {
				t.Helper()
				var out []store.Generation
				for _, r := range readers {
					v, err := r.Generation()
					if err != nil {
						t.Fatal(err)
					}
					out = append(out, v)
				}
				return out
			}
			last := gen()
			seen := map[store.Generation]string{last[0]: "the start"}
			moved := func(what string) {
				t.Helper()
				now := gen()
				for i, v := range now {
					if v == last[i] {
						t.Errorf("%s did not move the generation (reader %d)", what, i)
					}
				}
				if prev, ok := seen[now[0]]; ok {
					t.Errorf("%s left the generation as it was after %s", what, prev)
				}
				seen[now[0]] = what
				last = now
			}
			still := func(what string) {
				t.Helper()
				now := gen()
				for i, v := range now {
					if v != last[i] {
						t.Errorf("%s moved the generation (reader %d)", what, i)
					}
				}
				last = now
			}
			for _, k := range []store.Kind{store.Sources, store.Manifests, store.Connections, store.Policies, store.Profiles} {
				if err := st.Put(ctx, k, "x", map[string]int{"v": 1}); err != nil {
					t.Fatal(err)
				}
				moved("Put " + string(k))
				if err := st.Update(ctx, k, "x", func([]byte) ([]byte, error) { return []byte(`{"v": 2}`), nil }); err != nil {
					t.Fatal(err)
				}
				moved("Update " + string(k))
				if err := st.Delete(ctx, k, "x"); err != nil {
					t.Fatal(err)
				}
				moved("Delete " + string(k))
			}
			for _, k := range []store.Kind{store.Runs, store.Blobs} {
				if err := st.Put(ctx, k, "x", map[string]int{"v": 1}); err != nil {
					t.Fatal(err)
				}
				if err := st.Update(ctx, k, "x", func([]byte) ([]byte, error) { return []byte(`{"v": 2}`), nil }); err != nil {
					t.Fatal(err)
				}
				if err := st.Append(ctx, k, "x", []byte(`{"line": 1}`)); err != nil {
					t.Fatal(err)
				}
				if err := st.Delete(ctx, k, "x"); err != nil {
					t.Fatal(err)
				}
				still("a write of " + string(k))
			}
		})
	}
}

// TestGenerationCutBack: the marker is cut back once it is large, and
// the generation still moves.
func TestGenerationCutBack(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "hub")
	f, _, err := store.Init(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	if err := os.WriteFile(filepath.Join(dir, store.GenerationFile), []byte(strings.Repeat(".", 64<<10-1)), 0o600); err != nil {
		t.Fatal(err)
	}
	before, err := f.Generation()
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Put(ctx, store.Sources, "x", map[string]int{"v": 1}); err != nil {
		t.Fatal(err)
	}
	after, err := f.Generation()
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, store.GenerationFile))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() != 0 {
		t.Errorf("the marker is %d bytes after reaching 64 KiB, want it cut back to none", fi.Size())
	}
	if after == before {
		t.Error("the write that cut the marker back did not move the generation")
	}
}

// BenchmarkGeneration: what a hub pays at the start of each request to
// know whether the store changed: one stat.
func BenchmarkGeneration(b *testing.B) {
	f, _, err := store.Init(filepath.Join(b.TempDir(), "hub"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = f.Close() })
	if err := f.Put(context.Background(), store.Sources, "x", map[string]int{"v": 1}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := f.Generation(); err != nil {
			b.Fatal(err)
		}
	}
}
