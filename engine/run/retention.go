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
	if ag, ok := e.store.(agedStore); ok {
		return e.pruneAged(ctx, ag, ret, true)
	}
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

// agedStore is a store that lists records by when they were last written,
// oldest first, and sums what they take, without reading them into the hub
// (store/postgres.Store): its prune reads only the runs it may delete.
type agedStore interface {
	Oldest(ctx context.Context, kind store.Kind, before time.Time, after store.Aged, limit int) ([]store.Aged, error)
	Size(ctx context.Context, kind store.Kind, prefix string) (n int, bytes int64, err error)
}

// farFuture is after every record's time: "written before it" is every record.
var farFuture = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)

// agedPage is how many runs the prune of an agedStore asks for at a time.
const agedPage = 500

// pruneAged is PruneRuns on an agedStore: by age, it reads only the runs
// last written before the cutoff; by size, it sums the runs in the store
// and reads the oldest only while they take too much. Each run read is
// checked as PruneRuns checks it (its own UpdatedAt decides its age; a run
// under way or waiting for a person stays). With kept, KeptRuns and
// KeptBytes are counted in the store (one pass over the runs' sizes there,
// none read into the hub); the automatic prune skips that when it has no
// size limit.
func (e *Engine) pruneAged(ctx context.Context, ag agedStore, ret Retention, kept bool) (Pruned, error) {
	var out Pruned
	now := e.now()
	handles, err := e.handleIDs(ctx)
	if err != nil {
		return out, fmt.Errorf("pruning runs: %w", err)
	}
	del := func(r *model.Run, size int64) error {
		if err := e.store.Delete(ctx, store.Runs, r.ID); err != nil {
			return fmt.Errorf("pruning run %s: %w", r.ID, err)
		}
		out.Runs++
		out.Bytes += size + e.deleteHandlesOf(ctx, r.ID, handles)
		return nil
	}
	// each calls fn with every run the store lists written before before,
	// oldest first, that may go, until fn says stop.
	each := func(before time.Time, fn func(r *model.Run, size int64) (more bool, err error)) error {
		var after store.Aged
		for {
			page, err := ag.Oldest(ctx, store.Runs, before, after, agedPage)
			if err != nil {
				return fmt.Errorf("pruning runs: %w", err)
			}
			for _, a := range page {
				r, err := store.Get[model.Run](ctx, e.store, store.Runs, a.ID)
				if err != nil || !(r.Status.Done() || r.Status.Paused() && !waitsForAPerson(r, now)) {
					continue // pruned meanwhile, unreadable, under way or waiting: left alone
				}
				if more, err := fn(r, a.Size); err != nil || !more {
					return err
				}
			}
			if len(page) < agedPage {
				return nil
			}
			after = page[len(page)-1]
		}
	}
	if ret.Age > 0 {
		cutoff := now.Add(-ret.Age)
		err := each(cutoff, func(r *model.Run, size int64) (bool, error) {
			if !r.UpdatedAt.Before(cutoff) {
				return true, nil
			}
			return true, del(r, size)
		})
		if err != nil {
			return out, err
		}
	}
	if !kept && ret.Bytes <= 0 {
		return out, nil
	}
	n, total, err := e.runsSize(ctx, ag)
	if err != nil {
		return out, err
	}
	if ret.Bytes > 0 && total > ret.Bytes {
		err := each(farFuture, func(r *model.Run, size int64) (bool, error) {
			before := out.Bytes
			if err := del(r, size); err != nil {
				return false, err
			}
			total -= out.Bytes - before
			return total > ret.Bytes, nil
		})
		if err != nil {
			return out, err
		}
		if n, total, err = e.runsSize(ctx, ag); err != nil {
			return out, err
		}
	}
	out.KeptRuns, out.KeptBytes = n, total
	return out, nil
}

// runsSize is how many runs an agedStore holds and what they take:
// records, journals and stored handles.
func (e *Engine) runsSize(ctx context.Context, ag agedStore) (n int, bytes int64, err error) {
	n, runs, err := ag.Size(ctx, store.Runs, "")
	if err != nil {
		return 0, 0, fmt.Errorf("pruning runs: %w", err)
	}
	_, hs, err := ag.Size(ctx, store.Blobs, handlePrefix)
	if err != nil {
		return 0, 0, fmt.Errorf("pruning runs: %w", err)
	}
	return n, runs + hs, nil
}

// handleIDs are the ids of the stored handles, sorted.
func (e *Engine) handleIDs(ctx context.Context) ([]string, error) {
	blobs, err := e.store.List(ctx, store.Blobs)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, b := range blobs {
		if strings.HasPrefix(b, handlePrefix) {
			out = append(out, b)
		}
	}
	sort.Strings(out)
	return out, nil
}

// deleteHandlesOf deletes the stored handles of run id among handles (the
// sorted ids of every handle) and returns what they took.
func (e *Engine) deleteHandlesOf(ctx context.Context, runID string, handles []string) int64 {
	prefix := handlePrefix + runID + "-"
	e.handles.mu.Lock()
	if strings.HasPrefix(e.handles.id, prefix) {
		e.handles.id, e.handles.blob = "", nil
	}
	e.handles.mu.Unlock()
	var n int64
	for i := sort.SearchStrings(handles, prefix); i < len(handles) && strings.HasPrefix(handles[i], prefix); i++ {
		var raw json.RawMessage
		if e.store.Get(ctx, store.Blobs, handles[i], &raw) == nil {
			n += int64(len(raw))
		}
		if err := e.store.Delete(ctx, store.Blobs, handles[i]); err != nil {
			e.log.Warn("removing a run's large result", "run", runID, "blob", handles[i], "err", err)
		}
	}
	return n
}
