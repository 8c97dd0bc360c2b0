package run

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/store"
)

// Paused returns the runs waiting for a person's decision or credential
// (awaiting_approval or awaiting_connection), newest first (Waiting).
func (e *Engine) Paused(ctx context.Context) ([]model.Run, error) {
	w, err := e.Waiting(ctx)
	return w.Paused, err
}

// Waiting is what waits for a person: runs paused on a decision or a
// credential, and runs interrupted (Effective) that a person resumes or
// cancels.
type Waiting struct {
	Paused      []model.Run // newest first
	Interrupted []model.Run // newest first; their status as recorded (running)
}

// Waiting returns the runs waiting for a person: what the console's
// approvals poll reads every few seconds. On a store on disk a record that
// has not changed since the last call (the same size, modification time and
// file) is not read again when it was neither paused nor running then: with
// a week of runs (thousands) each poll reads only the paused ones and the
// directory, where it read every record (0.3 s of CPU for 5,000 runs of 8
// KB). A running one that did not change is read again only when its hold
// is free (a test of a lock, store.Held): its process may die without a
// write.
func (e *Engine) Waiting(ctx context.Context) (Waiting, error) {
	var w Waiting
	e.Flush()
	files, onDisk, err := e.recordFiles()
	if err != nil {
		return w, err
	}
	if !onDisk {
		all, err := e.List(ctx, "")
		for i := range all {
			switch r := &all[i]; {
			case r.Status.Paused():
				w.Paused = append(w.Paused, *r)
			case e.Effective(ctx, r) == model.RunInterrupted:
				w.Interrupted = append(w.Interrupted, *r)
			}
		}
		return w, err
	}
	e.seen.mu.Lock()
	defer e.seen.mu.Unlock()
	if e.seen.m == nil {
		e.seen.m = map[string]recordStamp{}
	}
	present := make(map[string]bool, len(files))
	for _, f := range files {
		id := f.id
		present[id] = true
		stamp := stampOf(f.info)
		if old, ok := e.seen.m[id]; ok && old.same(stamp) && !old.paused {
			if !old.running {
				continue
			}
			if held, err := e.store.Held(ctx, store.Runs, id); err != nil || held {
				continue // running, in a live process (or nobody can tell)
			}
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
		stamp.running = r.Status == model.RunRunning
		e.seen.m[id] = stamp
		switch {
		case stamp.paused:
			w.Paused = append(w.Paused, *r)
		case stamp.running && e.orphaned(ctx, r):
			w.Interrupted = append(w.Interrupted, *r)
		}
	}
	for id := range e.seen.m {
		if !present[id] {
			delete(e.seen.m, id)
		}
	}
	newestFirst(w.Paused)
	newestFirst(w.Interrupted)
	return w, nil
}

// recordFile is a run record's file in a store on disk.
type recordFile struct {
	id   string
	info fs.FileInfo
}

// recordFiles lists the files of the run records when the store is on
// disk (onDisk false for another store): what Waiting and Select read
// without opening every record.
func (e *Engine) recordFiles() (files []recordFile, onDisk bool, err error) {
	d, ok := e.store.(filesStore) // records in files (store.File), not only a folder
	if !ok {
		return nil, false, nil
	}
	entries, err := os.ReadDir(filepath.Join(d.Dir(), string(store.Runs)))
	if err != nil {
		return nil, true, fmt.Errorf("listing runs: %w", err)
	}
	for _, de := range entries {
		id, ok := strings.CutSuffix(de.Name(), ".json")
		if !ok || de.IsDir() || store.ValidID(id) != nil {
			continue
		}
		info, err := de.Info()
		if err != nil {
			continue // pruned meanwhile
		}
		files = append(files, recordFile{id, info})
	}
	return files, true, nil
}

func newestFirst(runs []model.Run) {
	sort.Slice(runs, func(i, j int) bool { return runs[i].CreatedAt.After(runs[j].CreatedAt) })
}

// seenRecords remembers, per run record, the file it was read from and
// whether the run was paused or running then (Waiting).
type seenRecords struct {
	mu sync.Mutex
	m  map[string]recordStamp
}

// recordStamp tells a record's file from the next one written over it:
// every write is a new file renamed over the old (store.File), so its
// inode, size or modification time differs.
type recordStamp struct {
	size    int64
	mod     time.Time
	file    uint64 // the inode, where the system says it
	paused  bool
	running bool
}

func (s recordStamp) same(o recordStamp) bool {
	return s.size == o.size && s.mod.Equal(o.mod) && s.file == o.file
}

// filesStore is a store whose records are files in its folder (store.File); a
// store with a folder for other things (a database's, with the hub folder
// of the machine) has no Path.
type filesStore interface {
	Dir() string
	Path(kind store.Kind, id string) string
}
