package store_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/capabilities-sh/capabilities/store"
)

// TestGone: a hub's folder deleted, emptied of its hub.json (rm -rf
// caught halfway), moved away with the folder above it, or replaced by
// another hub (set up there since) is told from a hub still there.
func TestGone(t *testing.T) {
	tests := []struct {
		name   string
		change func(t *testing.T, home, dir string)
		want   string
	}{
		{"there", func(*testing.T, string, string) {}, ""},
		{"deleted", func(t *testing.T, _, dir string) { mustDo(t, os.RemoveAll(dir)) }, "was deleted or moved away"},
		{"hub.json removed", func(t *testing.T, _, dir string) { mustDo(t, os.Remove(filepath.Join(dir, "hub.json"))) }, "was deleted or moved away"},
		{"home moved", func(t *testing.T, home, _ string) { mustDo(t, os.Rename(home, home+"-moved")) }, "was deleted or moved away"},
		{"replaced", func(t *testing.T, _, dir string) {
			mustDo(t, os.RemoveAll(dir))
			st, _, err := store.Init(dir)
			mustDo(t, err)
			st.Close()
		}, "was replaced by another hub"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			home := filepath.Join(t.TempDir(), "home")
			dir := filepath.Join(home, "hub")
			st, _, err := store.Init(dir)
			mustDo(t, err)
			st.Close()
			id := st.Hub().ID
			tt.change(t, home, dir)
			if got := store.Gone(dir, id); got != tt.want {
				t.Errorf("Gone = %q, want %q", got, tt.want)
			}
		})
	}
}

func mustDo(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
