package run

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/store"
)

// Retention is how much run history is kept: by age, by size, or both.
// Whatever it says, a run still running or waiting for a person is kept.
type Retention struct {
	// Age: a run that ended (or can no longer go on without a decision
	// that expired) and was last updated longer ago goes. 0: no age limit.
	Age time.Duration
	// Bytes: while the runs (records, journals, stored handles) take more,
	// the oldest that ended go. 0: no size limit.
	Bytes int64
}

// Pruned says what a prune deleted and what the runs kept take.
type Pruned struct {
	Runs      int   `json:"runs"`
	Bytes     int64 `json:"bytes"`     // what the deleted runs took
	KeptRuns  int   `json:"keptRuns"`  // runs left
	KeptBytes int64 `json:"keptBytes"` // what they take
}

// PruneRuns deletes runs, with their journals and handles, by ret: first
// those over its age, then, oldest first, as many as it takes to fit its
// size. It is the one prune: `hub runs prune` and the automatic prune
// (Prune) both call it.
func (e *Engine) PruneRuns(ctx context.Context, ret Retention) (Pruned, error) {
	e.Flush()
	ids, err := e.store.List(ctx, store.Runs)
	if err != nil {
		return Pruned{}, fmt.Errorf("pruning runs: %w", err)
	}
	var handles []string
	if blobs, err := e.store.List(ctx, store.Blobs); err == nil {
		for _, b := range blobs {
			if strings.HasPrefix(b, handlePrefix) {
				handles = append(handles, b)
			}
		}
	}
	now := e.now()
	type entry struct {
		r     *model.Run
		size  int64
		prune bool // may go
	}
	var all []entry
	var out Pruned
	for _, id := range ids {
		r, err := store.Get[model.Run](ctx, e.store, store.Runs, id)
		if err != nil {
			continue // pruned meanwhile, or unreadable: left alone
		}
		en := entry{r: r, size: e.runSize(ctx, r, handles), prune: r.Status.Done() || r.Status.Paused() && !waitsForAPerson(r, now)}
		all = append(all, en)
		out.KeptBytes += en.size
	}
	out.KeptRuns = len(all)
	// Oldest first: what goes for size goes in that order.
	sort.Slice(all, func(i, j int) bool { return all[i].r.UpdatedAt.Before(all[j].r.UpdatedAt) })
	var cutoff time.Time
	if ret.Age > 0 {
		cutoff = now.Add(-ret.Age)
	}
	for _, en := range all {
		if !en.prune {
			continue
		}
		old := ret.Age > 0 && en.r.UpdatedAt.Before(cutoff)
		big := ret.Bytes > 0 && out.KeptBytes > ret.Bytes
		if !old && !big {
			continue
		}
		if err := e.store.Delete(ctx, store.Runs, en.r.ID); err != nil {
			return out, fmt.Errorf("pruning run %s: %w", en.r.ID, err)
		}
		e.deleteHandles(ctx, en.r.ID)
		out.Runs++
		out.Bytes += en.size
		out.KeptRuns--
		out.KeptBytes -= en.size
	}
	return out, nil
}

// runSize is what a run takes in the store: its record, its journal and
// its stored handles (file sizes in a store on disk, else encoded sizes).
func (e *Engine) runSize(ctx context.Context, r *model.Run, handles []string) int64 {
	prefix := handlePrefix + r.ID + "-"
	if d, ok := e.store.(filesStore); ok {
		var n int64
		for _, p := range []string{filepath.Join(d.Dir(), string(store.Runs), r.ID+".json"), filepath.Join(d.Dir(), string(store.Runs), r.ID+".journal.jsonl")} {
			if fi, err := os.Stat(p); err == nil {
				n += store.RecordBytes(fi) // a packed record's file holds others
			}
		}
		for _, h := range handles {
			if strings.HasPrefix(h, prefix) {
				if fi, err := os.Stat(filepath.Join(d.Dir(), string(store.Blobs), h+".json")); err == nil {
					n += fi.Size()
				}
			}
		}
		return n
	}
	b, _ := json.Marshal(r)
	n := int64(len(b))
	if lines, err := e.store.ReadLog(ctx, store.Runs, r.ID); err == nil {
		for _, l := range lines {
			n += int64(len(l)) + 1
		}
	}
	for _, h := range handles {
		if strings.HasPrefix(h, prefix) {
			var raw json.RawMessage
			if e.store.Get(ctx, store.Blobs, h, &raw) == nil {
				n += int64(len(raw))
			}
		}
	}
	return n
}
