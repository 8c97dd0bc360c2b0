package hub

import (
	"context"
	"sync"
	"time"
)

// refreshDebounce is how long a refresh waits after an upstream announces
// that its tools changed: announcements within it make one refresh.
const refreshDebounce = 200 * time.Millisecond

// refreshTimeout bounds one announced refresh.
const refreshTimeout = 30 * time.Second

// refreshes runs the re-listing an upstream's tools/list_changed asks for:
// per namespace, at most one refresh in flight and at most one queued
// behind it, each after a short debounce. After close, announcements are
// refused and the refreshes under way are cancelled.
type refreshes struct {
	mu      sync.Mutex
	ctx     context.Context // cancelled by close
	cancel  context.CancelFunc
	closed  bool
	pending map[string]bool // namespace → a refresh is due after the current one
	running map[string]bool // namespace → its refresh loop runs
	wg      sync.WaitGroup
}

// toolsChanged is the pool's OnToolsChanged: it schedules a refresh of ns
// and returns at once.
func (h *Hub) toolsChanged(ns string) {
	r := &h.refreshes
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		h.log.Debug("upstream tool list changed; not refreshed, the hub is closing", "namespace", ns)
		return
	}
	if r.ctx == nil {
		r.ctx, r.cancel = context.WithCancel(context.Background())
		r.pending, r.running = map[string]bool{}, map[string]bool{}
	}
	if r.running[ns] {
		r.pending[ns] = true // coalesced into the next refresh
		return
	}
	r.running[ns] = true
	r.wg.Add(1)
	go h.refreshLoop(r.ctx, ns)
}

// refreshLoop refreshes ns after the debounce, again while announcements
// came during the last refresh, and stops when none did or the hub closes.
func (h *Hub) refreshLoop(ctx context.Context, ns string) {
	r := &h.refreshes
	defer r.wg.Done()
	for {
		t := time.NewTimer(refreshDebounce)
		select {
		case <-ctx.Done():
			t.Stop()
			r.done(ns)
			return
		case <-t.C:
		}
		r.mu.Lock()
		r.pending[ns] = false // announcements from now on ask for another
		r.mu.Unlock()
		rctx, cancel := context.WithTimeout(ctx, refreshTimeout)
		c := h.refreshOne(rctx, ns)
		cancel()
		if ctx.Err() != nil {
			r.done(ns)
			return
		}
		h.log.Info("upstream tool list changed; refreshed", "namespace", ns, "added", c.Added, "removed", c.Removed, "changed", c.Changed, "error", c.Error)
		r.mu.Lock()
		again := r.pending[ns] && !r.closed
		if !again {
			r.running[ns] = false
		}
		r.mu.Unlock()
		if !again {
			return
		}
	}
}

func (r *refreshes) done(ns string) {
	r.mu.Lock()
	r.running[ns], r.pending[ns] = false, false
	r.mu.Unlock()
}

// close refuses new refreshes, cancels those under way and waits for them.
func (r *refreshes) close() {
	r.mu.Lock()
	r.closed = true
	if r.cancel != nil {
		r.cancel()
	}
	r.mu.Unlock()
	r.wg.Wait()
}
