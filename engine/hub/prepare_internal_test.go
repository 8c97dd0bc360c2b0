package hub

import (
	"context"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/store"
)

// TestPrepareWhen: the sandbox and the catalog are prepared once ready is
// closed (serve --stdio: the agent listed the tools), or once the wait has
// passed when it never is, and not at all when the context ends first;
// before either, nothing is built.
func TestPrepareWhen(t *testing.T) {
	prepared := func(h *Hub) bool { return h.runs.driver.Load() != nil && h.catalog.Load() != nil }
	ctx := context.Background()

	t.Run("once ready", func(t *testing.T) {
		h := New(store.NewMem(), Options{})
		ready := make(chan struct{})
		h.PrepareWhen(ctx, ready, time.Hour)
		time.Sleep(50 * time.Millisecond)
		if h.runs.driver.Load() != nil || h.catalog.Load() != nil {
			t.Error("prepared before ready was closed")
		}
		close(ready)
		h.Close() // waits for what it prepares
		if !prepared(h) {
			t.Error("not prepared after ready was closed")
		}
	})
	t.Run("after the wait", func(t *testing.T) {
		h := New(store.NewMem(), Options{})
		h.PrepareWhen(ctx, make(chan struct{}), time.Millisecond)
		h.Close()
		if !prepared(h) {
			t.Error("not prepared after the wait, with ready never closed")
		}
	})
	t.Run("context ended", func(t *testing.T) {
		h := New(store.NewMem(), Options{})
		cctx, cancel := context.WithCancel(ctx)
		h.PrepareWhen(cctx, make(chan struct{}), time.Hour)
		cancel()
		h.Close() // returns: the wait ends with the context
		if h.runs.driver.Load() != nil || h.catalog.Load() != nil {
			t.Error("prepared although the context ended first")
		}
	})
}
