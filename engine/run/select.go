package run

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/store"
)

// Selection is what Select returns: runs started at or after Since that
// Keep accepts (nil: every run), the newest Limit of them (0: all). Keep
// may change the run it is given (ListRuns sets its effective status):
// Select returns the run as Keep left it.
type Selection struct {
	Since time.Time
	Keep  func(*model.Run) bool
	Limit int
}

// mtimeSlack is how far a record file's modification time may be behind
// the CreatedAt written in it: the file system's clock is the kernel's
// coarse one, a tick behind the time the run read.
const mtimeSlack = time.Second

// Select returns the runs s selects, newest (by CreatedAt) first.
//
// In a store on disk it reads the records newest file first, and stops once
// no record left can be selected: a record's file is written after its run
// started, so a file older than Since, or than the oldest of Limit runs
// already kept, holds a run that started before it. A hub with a week of
// history lists its last runs without reading every record. A record whose
// file was dated back by hand (restored with its old times) may then be
// left out of a limited list; Limit 0 reads them all.
func (e *Engine) Select(ctx context.Context, s Selection) ([]model.Run, error) {
	e.Flush()
	type candidate struct {
		id  string
		mod time.Time // zero: unknown (never stops the reading)
	}
	files, onDisk, err := e.recordFiles()
	if err != nil {
		return nil, err
	}
	var cands []candidate
	if onDisk {
		for _, f := range files {
			cands = append(cands, candidate{f.id, f.info.ModTime()})
		}
		sort.Slice(cands, func(i, j int) bool { return cands[i].mod.After(cands[j].mod) })
	} else {
		ids, err := e.store.List(ctx, store.Runs)
		if err != nil {
			return nil, fmt.Errorf("listing runs: %w", err)
		}
		for _, id := range ids {
			cands = append(cands, candidate{id: id})
		}
	}
	var out []model.Run // newest first, at most s.Limit
	for _, c := range cands {
		if !c.mod.IsZero() {
			floor := s.Since
			if s.Limit > 0 && len(out) == s.Limit && out[len(out)-1].CreatedAt.After(floor) {
				floor = out[len(out)-1].CreatedAt
			}
			if !floor.IsZero() && c.mod.Before(floor.Add(-mtimeSlack)) {
				break
			}
		}
		r, err := store.Get[model.Run](ctx, e.store, store.Runs, c.id)
		if err != nil {
			if !errors.Is(err, store.ErrNotFound) {
				// One unreadable record (a crash between a rename and
				// the disk, a hand edit) must not hide every other run.
				e.log.Warn("leaving out of the list a run whose record is unreadable", "run", c.id, "err", err)
			}
			continue
		}
		if r.CreatedAt.Before(s.Since) || s.Keep != nil && !s.Keep(r) {
			continue
		}
		at := sort.Search(len(out), func(i int) bool { return out[i].CreatedAt.Before(r.CreatedAt) })
		if s.Limit > 0 && at == s.Limit {
			continue
		}
		out = append(out, model.Run{})
		copy(out[at+1:], out[at:])
		out[at] = *r
		if s.Limit > 0 && len(out) > s.Limit {
			out = out[:s.Limit]
		}
	}
	return out, nil
}
