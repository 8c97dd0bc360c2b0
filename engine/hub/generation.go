package hub

import (
	"sync"

	"github.com/capabilities-sh/capabilities/store"
)

// Read-your-writes across processes: a source, policy or profile that
// `hub add` (or any other process) wrote is there for the very next
// request of a hub that is already serving. Every write of what a run sees
// moves the store's generation (store.Generation, one byte appended to a
// marker file once the record is in place), and every execute, resume,
// search and describe starts by reading it, one stat: when it moved since
// this hub last looked, the hub drops what it keeps from the store (the
// catalog, with the namespaces runs see and the search index, and the
// secret references; Invalidate) and reads it anew. The policy and the
// profiles are read, or their file stat'd, by each request already.
//
// The store watcher (Watch) stays: it tells clients that the tools changed
// (OnChange) when no request comes, and sees hand edits and skills, which
// no store write announces. But a request no longer waits for it.

// generation is the store's generation the hub's caches were last made
// current with.
type generation struct {
	mu    sync.Mutex
	seen  store.Generation
	known bool
}

// storeGeneration reads the store's generation; ok is false for a store
// that keeps none, or one that cannot be read (the hub's folder removed:
// store.Gone says so to every call).
func (h *Hub) storeGeneration() (g store.Generation, ok bool) {
	gs, isGen := h.store.(store.Generationer)
	if !isGen {
		return g, false
	}
	g, err := gs.Generation()
	if err != nil {
		h.log.Debug("reading the store's generation", "err", err)
		return g, false
	}
	return g, true
}

// noteGeneration records g as the generation the caches are current with.
// Call it with a generation read before the caches were dropped.
func (h *Hub) noteGeneration(g store.Generation) {
	h.gen.mu.Lock()
	h.gen.seen, h.gen.known = g, true
	h.gen.mu.Unlock()
}

// current makes the hub's caches current with the store, at the cost of
// one stat when nothing changed: a request calls it first.
func (h *Hub) current() {
	g, ok := h.storeGeneration()
	if !ok {
		return
	}
	h.gen.mu.Lock()
	same := h.gen.known && h.gen.seen == g
	h.gen.mu.Unlock()
	if !same {
		h.log.Debug("the store changed; the catalog will be rebuilt")
		h.Invalidate()
	}
}
