package hub

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/capabilities-sh/capabilities/store"
	"github.com/fsnotify/fsnotify"
)

// Watch invalidates the catalog whenever another process changes sources,
// manifests, connections, the policy, profiles or skills (`hub add`, `hub
// auth` or `hub skills add` in a terminal while `serve` runs), so search and
// describe see it without a restart, and OnChange's functions run (the MCP
// server re-lists its direct tools and skills). One inotify instance per
// process: a machine allows few (128 by default). It returns when ctx is
// done.
func (h *Hub) Watch(ctx context.Context) error {
	f, ok := h.store.(*store.File)
	if !ok {
		return nil
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watching the store: %w", err)
	}
	defer w.Close()
	for _, k := range []store.Kind{store.Sources, store.Manifests, store.Connections, store.Policies, store.Profiles} {
		if err := w.Add(filepath.Join(f.Dir(), string(k))); err != nil {
			return fmt.Errorf("watching the store: %w", err)
		}
	}
	// The skills folder is made if it is missing, so a first skill is seen.
	skills := ""
	if st, ok := h.Skills(); ok {
		if err := os.MkdirAll(st.Dir, 0o700); err == nil && w.Add(st.Dir) == nil {
			skills = filepath.Clean(st.Dir)
		} else {
			h.log.Warn("not following the hub's skills", "dir", st.Dir)
		}
	}
	// What changed before the directories were watched (a catalog built
	// at start, then another process's write) is not missed: a catalog
	// built or being built before now is read again when next needed.
	// Nothing is announced: at start no client has seen a list.
	h.catalogGen.Add(1)
	h.catalog.Store(nil)
	var debounce <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return nil
			}
			if filepath.Ext(ev.Name) == ".json" || (skills != "" && filepath.Dir(ev.Name) == skills) {
				debounce = time.After(20 * time.Millisecond)
			}
		case err, ok := <-w.Errors:
			if !ok {
				return nil
			}
			h.log.Warn("watching the store", "err", err)
		case <-debounce:
			h.Invalidate()
			h.log.Info("the store changed; the catalog will be rebuilt")
		}
	}
}
