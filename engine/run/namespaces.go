package run

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/sandbox"
	"github.com/capabilities-sh/capabilities/store"
)

// namespaces is the set of namespaces an attempt of r sees. A new run sees
// the hub's current set, and r records its digest. A resumed run sees the set
// it first ran with, so its replay takes the same paths (`typeof linear`, a
// tool since removed): the current one when nothing changed, else the blob
// its first attempt stored; a run recorded before runs kept their sets, or
// whose blob is gone, gets the current set (logged).
func (e *Engine) namespaces(ctx context.Context, r *model.Run) (*sandbox.Namespaces, error) {
	cur, err := e.tools.Namespaces(ctx)
	if err != nil {
		return nil, err
	}
	if r.Namespaces == "" {
		r.Namespaces = cur.Digest()
		return cur, nil
	}
	if r.Namespaces == cur.Digest() {
		return cur, nil
	}
	old, err := e.sets.load(ctx, e.store, r.Namespaces)
	if errors.Is(err, store.ErrNotFound) {
		e.log.Warn("the namespaces this run started with are not stored; it goes on with the current ones", "run", r.ID, "namespaces", r.Namespaces)
		r.Namespaces = cur.Digest()
		return cur, nil
	}
	if err != nil {
		return nil, err
	}
	return old, nil
}

// namespaceSets remembers which sets this process stored, and the last few
// it read back.
type namespaceSets struct {
	mu     sync.Mutex
	saved  map[string]bool
	loaded map[string]*sandbox.Namespaces
}

func blobID(digest string) string { return "namespaces-" + digest }

// save stores set as a blob unless this process already did.
func (s *namespaceSets) save(ctx context.Context, st store.Store, set *sandbox.Namespaces) error {
	s.mu.Lock()
	done := s.saved[set.Digest()]
	s.mu.Unlock()
	if done {
		return nil
	}
	if err := st.Put(ctx, store.Blobs, blobID(set.Digest()), set); err != nil {
		return fmt.Errorf("storing the run's namespaces: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.saved == nil {
		s.saved = map[string]bool{}
	}
	s.saved[set.Digest()] = true
	return nil
}

// load reads a stored set by digest.
func (s *namespaceSets) load(ctx context.Context, st store.Store, digest string) (*sandbox.Namespaces, error) {
	s.mu.Lock()
	set := s.loaded[digest]
	s.mu.Unlock()
	if set != nil {
		return set, nil
	}
	set, err := store.Get[sandbox.Namespaces](ctx, st, store.Blobs, blobID(digest))
	if err != nil {
		return nil, fmt.Errorf("reading the run's namespaces: %w", err)
	}
	if set.Digest() != digest {
		return nil, fmt.Errorf("reading the run's namespaces: blob %s holds a set whose digest is %s", blobID(digest), set.Digest())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.loaded) >= 8 {
		s.loaded = nil
	}
	if s.loaded == nil {
		s.loaded = map[string]*sandbox.Namespaces{}
	}
	s.loaded[digest] = set
	return set, nil
}
