package hub

import (
	"context"
	"os"
	"time"

	"github.com/capabilities-sh/capabilities/store"
)

// Watch invalidates the catalog whenever another process changes sources,
// manifests, connections, the policy, profiles or skills (`hub add`, `hub
// auth` or `hub skills add` in a terminal while `serve` runs, or another
// hub process on the same database), so search and describe see it
// without a restart, and OnChange's functions run (the MCP server re-lists
// its direct tools and skills). It follows the store's change feed
// (store.Changer: inotify on the file store, LISTEN/NOTIFY on PostgreSQL)
// and the skills folder, and returns when ctx is done; on a store with no
// feed it returns nil at once.
func (h *Hub) Watch(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	feed, err := h.storeChanges(ctx)
	if err != nil || feed == nil {
		return err
	}
	// The skills folder is made if it is missing, so a first skill is
	// seen. Skills are files of this machine, whatever the store.
	var skills <-chan store.Change
	if st, ok := h.Skills(); ok {
		if err := os.MkdirAll(st.Dir, 0o700); err == nil {
			skills, err = store.WatchFolder(ctx, st.Dir, "skills")
			if err != nil {
				h.log.Warn("not following the hub's skills", "dir", st.Dir, "err", err)
			}
		} else {
			h.log.Warn("not following the hub's skills", "dir", st.Dir, "err", err)
		}
	}
	// What changed before the feed was open (a catalog built at start,
	// then another process's write) is not missed: a catalog built or
	// being built before now is read again when next needed. Nothing is
	// announced: at start no client has seen a list.
	h.catalogGen.Add(1)
	h.catalog.Store(nil)
	var debounce <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return nil
		case c, ok := <-feed:
			if !ok {
				return nil
			}
			if c.Resync || c.Kind != store.Runs {
				debounce = time.After(20 * time.Millisecond)
			}
		case _, ok := <-skills:
			if !ok {
				skills = nil
				continue
			}
			debounce = time.After(20 * time.Millisecond)
		case <-debounce:
			h.Invalidate()
			h.log.Info("the store changed; the catalog will be rebuilt")
		}
	}
}

// storeChanges opens the store's change feed; nil (and no error) for a
// store that has none.
func (h *Hub) storeChanges(ctx context.Context) (<-chan store.Change, error) {
	c, ok := h.store.(store.Changer)
	if !ok {
		return nil, nil
	}
	return c.Changes(ctx) // its errors say what it was doing
}
