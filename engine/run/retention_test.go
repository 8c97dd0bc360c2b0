package run_test

import (
	"context"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/run"
	"github.com/capabilities-sh/capabilities/store"
	"github.com/google/go-cmp/cmp"
)

// TestPruneRunsBySize: with a size limit, the oldest runs that ended go
// first, as many as it takes for the rest to fit; a run waiting for a
// person stays even when it is the oldest and the limit is not met; with
// an age, only runs that ended before it go. What was deleted and what is
// kept is reported.
func TestPruneRunsBySize(t *testing.T) {
	f := newHub(t, run.Limits{})
	ctx := context.Background()
	eng, _ := f.h.Runs()
	waiting, err := f.h.Execute(ctx, `return await up.record({item: "old"})`)
	if err != nil || waiting.Status != "awaiting_approval" {
		t.Fatalf("a write: %+v, %v", waiting, err)
	}
	var done []string
	for range 3 {
		env, err := f.h.Execute(ctx, `return await up.echo({message: "x".repeat(2000)})`)
		if err != nil || env.Status != "completed" {
			t.Fatalf("a read: %+v, %v", env, err)
		}
		done = append(done, env.RunID)
	}
	eng.Wait() // the automatic prune the first execute started, before any run is aged
	// Ages: the waiting run oldest (10 days), then done[0] 9, done[1] 8,
	// done[2] 1.
	for id, days := range map[string]int{waiting.RunID: 10, done[0]: 9, done[1]: 8, done[2]: 1} {
		rec, err := eng.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		rec.UpdatedAt = time.Now().Add(-time.Duration(days) * 24 * time.Hour)
		if err := f.h.Store().Put(ctx, store.Runs, id, rec); err != nil {
			t.Fatal(err)
		}
	}
	left := func() []string {
		t.Helper()
		var out []string
		for _, id := range append([]string{waiting.RunID}, done...) {
			if _, err := eng.Get(ctx, id); err == nil {
				out = append(out, id)
			}
		}
		return out
	}
	all, err := eng.PruneRuns(ctx, run.Retention{})
	if err != nil || all.Runs != 0 || all.KeptRuns != 4 || all.KeptBytes < 3*2000 {
		t.Fatalf("PruneRuns with no limit = %+v, %v; want nothing deleted, 4 runs of more than 6000 bytes kept", all, err)
	}
	// One byte too many: the oldest that ended goes, not the waiting run.
	p, err := eng.PruneRuns(ctx, run.Retention{Bytes: all.KeptBytes - 1})
	if err != nil || p.Runs != 1 || p.KeptRuns != 3 || p.Bytes+p.KeptBytes != all.KeptBytes {
		t.Errorf("PruneRuns one byte under = %+v, %v", p, err)
	}
	if diff := cmp.Diff([]string{waiting.RunID, done[1], done[2]}, left()); diff != "" {
		t.Errorf("runs left (-want +got):\n%s", diff)
	}
	// An age of 5 days: done[1] (8 days) goes, done[2] (1 day) stays.
	if p, err := eng.PruneRuns(ctx, run.Retention{Age: 5 * 24 * time.Hour}); err != nil || p.Runs != 1 {
		t.Errorf("PruneRuns by 5 days = %+v, %v", p, err)
	}
	if diff := cmp.Diff([]string{waiting.RunID, done[2]}, left()); diff != "" {
		t.Errorf("runs left (-want +got):\n%s", diff)
	}
	// One byte: every run that ended goes; the waiting one stays.
	if p, err := eng.PruneRuns(ctx, run.Retention{Bytes: 1}); err != nil || p.Runs != 1 || p.KeptRuns != 1 {
		t.Errorf("PruneRuns to one byte = %+v, %v", p, err)
	}
	if diff := cmp.Diff([]string{waiting.RunID}, left()); diff != "" {
		t.Errorf("runs left (-want +got):\n%s", diff)
	}
	if lines, _ := f.h.Store().ReadLog(ctx, store.Runs, done[2]); len(lines) != 0 {
		t.Errorf("a pruned run's journal is still there: %d lines", len(lines))
	}
}
