package run

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/store"
)

// Paused returns the runs waiting for a person (awaiting_approval or
// awaiting_connection), newest first: what the console's approvals poll
// reads every few seconds. On a store on disk a record that has not changed
// since the last call (the same size, modification time and file) is not
// read again when it was not paused then: with a week of runs (thousands)
// each poll reads only the paused ones and the directory, where it read
// every record (0.3 s of CPU for 5,000 runs of 8 KB).
func (e *Engine) Paused(ctx context.Context) ([]model.Run, error) {
	d, ok := e.store.(interface{ Dir() string })
	if !ok {
		var out []model.Run
		all, err := e.List(ctx, "")
		for _, r := range all {
			if r.Status.Paused() {
				out = append(out, r)
			}
		}
		return out, err
	}
	e.Flush()
	entries, err := os.ReadDir(filepath.Join(d.Dir(), string(store.Runs)))
	if err != nil {
		return nil, fmt.Errorf("listing runs: %w", err)
	}
	e.seen.mu.Lock()
	defer e.seen.mu.Unlock()
	if e.seen.m == nil {
		e.seen.m = map[string]recordStamp{}
	}
	present := make(map[string]bool, len(entries))
	var out []model.Run
	for _, de := range entries {
		id, ok := strings.CutSuffix(de.Name(), ".json")
		if !ok || store.ValidID(id) != nil {
			continue
		}
		info, err := de.Info()
		if err != nil {
			continue // pruned meanwhile
		}
		present[id] = true
		stamp := stampOf(info)
		if old, ok := e.seen.m[id]; ok && old.same(stamp) && !old.paused {
			continue
		}
		r, err := store.Get[model.Run](ctx, e.store, store.Runs, id)
		if err != nil {
			if !errors.Is(err, store.ErrNotFound) {
				e.log.Warn("leaving out of the list a run whose record is unreadable", "run", id, "err", err)
			}
			delete(e.seen.m, id)
			continue
		}
		stamp.paused = r.Status.Paused()
		e.seen.m[id] = stamp
		if stamp.paused {
			out = append(out, *r)
		}
	}
	for id := range e.seen.m {
		if !present[id] {
			delete(e.seen.m, id)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CreatedAt.After(out[j].CreatedAt) })
	return out, nil
}

// seenRecords remembers, per run record, the file it was read from and
// whether the run was paused then (Paused).
type seenRecords struct {
	mu sync.Mutex
	m  map[string]recordStamp
}

// recordStamp tells a record's file from the next one written over it:
// every write is a new file renamed over the old (store.File), so its
// inode, size or modification time differs.
type recordStamp struct {
	size   int64
	mod    time.Time
	file   uint64 // the inode, where the system says it
	paused bool
}

func (s recordStamp) same(o recordStamp) bool {
	return s.size == o.size && s.mod.Equal(o.mod) && s.file == o.file
}
