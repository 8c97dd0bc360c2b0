package store_test

import (
	"path/filepath"
	"testing"

	"github.com/capabilities-sh/capabilities/store"
	"github.com/capabilities-sh/capabilities/store/storetest"
)

// TestFileShared opens one hub folder twice, as two processes do.
func TestFileShared(t *testing.T) {
	storetest.RunShared(t, func(t *testing.T) (store.Store, store.Store) {
		dir := filepath.Join(t.TempDir(), "hub")
		a, _, err := store.Init(dir)
		if err != nil {
			t.Fatal(err)
		}
		b, err := store.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = a.Close(); _ = b.Close() })
		return a, b
	})
}
