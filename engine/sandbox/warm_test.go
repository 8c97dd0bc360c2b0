package sandbox

import (
	"path/filepath"
	"testing"
)

// TestWarm: Warm fills an empty compiled-code cache (the instrumented
// QuickJS and its machine code), says it compiled, and a second Warm finds
// the cache full.
func TestWarm(t *testing.T) {
	dir := t.TempDir()
	compiled, err := Warm(dir)
	if err != nil {
		t.Fatal(err)
	}
	wdir := filepath.Join(dir, cacheLayout)
	if !compiled || !cacheFilled(wdir) {
		t.Fatalf("Warm on an empty cache: compiled %v, cache filled %v", compiled, cacheFilled(wdir))
	}
	if again, err := Warm(dir); err != nil || again {
		t.Errorf("a second Warm: compiled %v, %v; want the cache's code", again, err)
	}
	if _, err := Warm(""); err == nil {
		t.Error("Warm without a directory did not fail")
	}
}
