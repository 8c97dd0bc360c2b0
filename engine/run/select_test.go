package run_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/run"
	"github.com/capabilities-sh/capabilities/store"
)

// countingStore counts the run records read; it keeps the file store's
// Dir, so Select reads the newest files first.
type countingStore struct {
	*store.File
	reads atomic.Int64
}

func (s *countingStore) Get(ctx context.Context, kind store.Kind, id string, v any) error {
	if kind == store.Runs {
		s.reads.Add(1)
	}
	return s.File.Get(ctx, kind, id, v)
}

// TestSelect: over 301 runs, about one every ten minutes, each record's file
// dated as a write makes it (its last update, a little after or just
// before — the kernel's coarse clock — its start), Select returns what
// sorting every run and cutting the list returns, for every limit, age and
// filter, and reads about as many records as it returns; a run updated
// long after it started is still found.
func TestSelect(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "hub")
	f, _, err := store.Init(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	st := &countingStore{File: f}
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Second)
	var all []model.Run
	for i := range 300 {
		created := now.Add(-time.Duration(i) * 10 * time.Minute)
		r := model.Run{ID: fmt.Sprintf("r%020d", i), Status: model.RunCompleted, Code: "return 1", CreatedAt: created, UpdatedAt: created}
		mod := created.Add(time.Duration(i%3) * time.Millisecond)
		switch {
		case i%7 == 0:
			r.Status = model.RunFailed
		case i == 250: // started long ago, updated an hour ago
			r.Status, r.UpdatedAt = model.RunCancelled, now.Add(-time.Hour)
			mod = r.UpdatedAt
		case i%11 == 0: // the file a few milliseconds behind the start
			mod = created.Add(-4 * time.Millisecond)
		}
		if err := st.Put(ctx, store.Runs, r.ID, r); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(f.Path(store.Runs, r.ID), mod, mod); err != nil {
			t.Fatal(err)
		}
		all = append(all, r)
	}
	// Started 2 ms after the newest, its file dated 2 ms before that one's
	// start: the coarse clock.
	late := model.Run{ID: "rlate", Status: model.RunCompleted, Code: "return 1", CreatedAt: now.Add(2 * time.Millisecond), UpdatedAt: now.Add(2 * time.Millisecond)}
	if err := st.Put(ctx, store.Runs, late.ID, late); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(f.Path(store.Runs, late.ID), now.Add(-2*time.Millisecond), now.Add(-2*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	all = append(all, late)
	eng := run.New(st, nil, nil, run.Options{})
	failed := func(r *model.Run) bool { return r.Status == model.RunFailed }
	for _, tc := range []struct {
		name     string
		s        run.Selection
		maxReads int64
	}{
		{"newest", run.Selection{Limit: 1}, 5},
		{"newest 10", run.Selection{Limit: 10}, 15},
		{"newest 51", run.Selection{Limit: 51}, 60},
		{"all", run.Selection{}, 301},
		{"since 5h", run.Selection{Since: now.Add(-5 * time.Hour)}, 35},
		{"since 5h, newest 3", run.Selection{Since: now.Add(-5 * time.Hour), Limit: 3}, 8},
		{"failed, newest 5", run.Selection{Keep: failed, Limit: 5}, 40},
		{"cancelled", run.Selection{Keep: func(r *model.Run) bool { return r.Status == model.RunCancelled }, Limit: 1}, 301},
		{"more than there are", run.Selection{Limit: 1000}, 301},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var want []string
			sorted := append([]model.Run(nil), all...)
			sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].CreatedAt.After(sorted[j].CreatedAt) })
			for i := range sorted {
				r := &sorted[i]
				if r.CreatedAt.Before(tc.s.Since) || tc.s.Keep != nil && !tc.s.Keep(r) {
					continue
				}
				if tc.s.Limit > 0 && len(want) == tc.s.Limit {
					break
				}
				want = append(want, r.ID+" "+string(r.Status))
			}
			st.reads.Store(0)
			got, err := eng.Select(ctx, tc.s)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, r := range got {
				ids = append(ids, r.ID+" "+string(r.Status))
			}
			if diff := cmp.Diff(want, ids); diff != "" {
				t.Errorf("Select(%+v) (-want +got):\n%s", tc.s, diff)
			}
			if n := st.reads.Load(); n > tc.maxReads {
				t.Errorf("Select read %d records to return %d; want at most %d", n, len(got), tc.maxReads)
			}
		})
	}
}
