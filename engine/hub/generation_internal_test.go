package hub

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/capabilities-sh/capabilities/store"
)

// BenchmarkCurrent: what each execute, resume, search and describe pays to
// know that no other process changed the store since the hub last looked
// (one stat of the store's generation).
func BenchmarkCurrent(b *testing.B) {
	st, _, err := store.Init(filepath.Join(b.TempDir(), "hub"))
	if err != nil {
		b.Fatal(err)
	}
	if err := st.Put(context.Background(), store.Sources, "x", map[string]string{"namespace": "x"}); err != nil {
		b.Fatal(err)
	}
	h := New(st, Options{})
	b.Cleanup(h.Close)
	h.current()
	b.ReportAllocs()
	for b.Loop() {
		h.current()
	}
}
