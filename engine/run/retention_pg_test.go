//go:build linux

package run_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/run"
	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/capabilities-sh/capabilities/store"
	"github.com/capabilities-sh/capabilities/store/postgres"
	"github.com/jackc/pgx/v5"
)

// countingPG is a PostgreSQL store that counts the run records read.
type countingPG struct {
	*postgres.Store
	runReads atomic.Int64
}

func (c *countingPG) Get(ctx context.Context, kind store.Kind, id string, v any) error {
	if kind == store.Runs {
		c.runReads.Add(1)
	}
	return c.Store.Get(ctx, kind, id, v)
}

// TestPruneOnPostgresReadsOnlyOldRuns: on a database store the prune reads
// only the runs last written before its cutoff, never the whole history,
// and decides as on the file store: an old run that ended goes, an old run
// still waiting for a person stays, a recent one stays; by size, the
// oldest that ended go until the rest fits, the sizes summed in the
// database; what is kept is counted there too.
func TestPruneOnPostgresReadsOnlyOldRuns(t *testing.T) {
	pg := testenv.StartPostgres(t)
	u := pg.NewDatabase(t)
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(3*time.Minute))
	defer cancel()
	if err := postgres.Migrate(ctx, u); err != nil {
		t.Fatal(err)
	}
	pst, err := postgres.Open(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pst.Close() })
	st := &countingPG{Store: pst}
	f := newHubOn(t, st, t.TempDir(), run.Limits{})
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
	for range 20 {
		env, err := f.h.Execute(ctx, `return 1`)
		if err != nil || env.Status != "completed" {
			t.Fatalf("a trivial run: %+v, %v", env, err)
		}
	}
	eng.Wait() // the automatic prune the first execute started, and the runs' last records
	// Ages, as a record written that long ago has them: its UpdatedAt and
	// its row's written time.
	db, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(context.Background())
	for id, days := range map[string]int{waiting.RunID: 10, done[0]: 9, done[1]: 8, done[2]: 1} {
		rec, err := eng.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		rec.UpdatedAt = time.Now().Add(-time.Duration(days) * 24 * time.Hour)
		if err := st.Put(ctx, store.Runs, id, rec); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(ctx, `UPDATE records SET written_at = now() - make_interval(days => $2) WHERE kind = 'runs' AND id = $1`, id, days); err != nil {
			t.Fatal(err)
		}
	}
	left := func() (out []string) {
		ids, err := st.List(ctx, store.Runs)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range append([]string{waiting.RunID}, done...) {
			if slices.Contains(ids, id) {
				out = append(out, id)
			}
		}
		return out
	}

	st.runReads.Store(0)
	p, err := eng.PruneRuns(ctx, run.Retention{Age: 5 * 24 * time.Hour})
	if err != nil || p.Runs != 2 || p.KeptRuns != 22 || p.Bytes < 2*2000 {
		t.Fatalf("PruneRuns by 5 days = %+v, %v; want 2 deleted (of more than 4000 bytes), 22 kept", p, err)
	}
	if got := slices.Clone(left()); !slices.Equal(got, []string{waiting.RunID, done[2]}) {
		t.Errorf("runs left %v; want the waiting one and the 1-day-old one", got)
	}
	if n := st.runReads.Load(); n != 3 {
		t.Errorf("the prune read %d run records; want the 3 written before the cutoff, of 24", n)
	}

	// By size: one byte under what is kept, the oldest that ended goes
	// (done[2], 1 day; the waiting run, older, stays); then to one byte,
	// every run that ended.
	all, err := eng.PruneRuns(ctx, run.Retention{})
	if err != nil || all.Runs != 0 || all.KeptRuns != 22 {
		t.Fatalf("PruneRuns with no limit = %+v, %v", all, err)
	}
	p, err = eng.PruneRuns(ctx, run.Retention{Bytes: all.KeptBytes - 1})
	if err != nil || p.Runs != 1 || p.KeptRuns != 21 || p.KeptBytes >= all.KeptBytes {
		t.Errorf("PruneRuns one byte under = %+v, %v", p, err)
	}
	if got := left(); !slices.Equal(got, []string{waiting.RunID}) {
		t.Errorf("runs left %v; want the waiting one", got)
	}
	p, err = eng.PruneRuns(ctx, run.Retention{Bytes: 1})
	if err != nil || p.Runs != 20 || p.KeptRuns != 1 {
		t.Errorf("PruneRuns to one byte = %+v, %v; want the 20 recent runs deleted, the waiting one kept", p, err)
	}
	if got := left(); !slices.Equal(got, []string{waiting.RunID}) {
		t.Errorf("runs left %v; want the waiting one", got)
	}
}

// BenchmarkPruneOnPostgres: the hourly automatic prune of a database hub
// in its steady state: N runs written over the last 7 days, and the last
// hour's share (N/168) older than that, each run with its record (≈ 450
// bytes) and a journal line; "aged" is the prune as shipped (the index by
// written time), "whole" the prune reading every run (the store seen
// through an interface without Oldest and Size). Reports what it deleted,
// the run records it read, and its time. BENCH_RUNS sets N (20,000).
func BenchmarkPruneOnPostgres(b *testing.B) {
	n := 20000
	if v, err := strconv.Atoi(os.Getenv("BENCH_RUNS")); err == nil && v >= 168 {
		n = v
	}
	pg := testenv.StartPostgres(b)
	for _, mode := range []string{"aged", "whole"} {
		b.Run(mode, func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				u := pg.NewDatabase(b)
				ctx := context.Background()
				if err := postgres.Migrate(ctx, u); err != nil {
					b.Fatal(err)
				}
				pst, err := postgres.Open(ctx, u)
				if err != nil {
					b.Fatal(err)
				}
				fillRuns(b, ctx, u, n)
				st := &countingPG{Store: pst}
				var s store.Store = st
				if mode == "whole" {
					s = struct{ store.Store }{st}
				}
				eng := run.New(s, nil, nil, run.Options{Limits: run.Limits{Retention: 7 * 24 * time.Hour}})
				b.StartTimer()
				start := time.Now()
				pruned, err := eng.Prune(ctx) // the automatic prune: 7 days
				took := time.Since(start)
				b.StopTimer()
				if err != nil || pruned != n/168 {
					b.Fatalf("pruned %d, %v; want %d runs", pruned, err, n/168)
				}
				b.ReportMetric(float64(st.runReads.Load()), "runs-read")
				b.ReportMetric(float64(took.Milliseconds()), "ms")
				pst.Close()
				b.StartTimer()
			}
		})
	}
}

// fillRuns writes n finished runs into the database at u with COPY: the
// oldest n/168 written 7 days and 30 minutes ago, the rest over the last 7
// days; each with one journal line.
func fillRuns(b *testing.B, ctx context.Context, u string, n int) {
	b.Helper()
	c, err := pgx.Connect(ctx, u)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close(ctx)
	now := time.Now()
	old := n / 168
	recs := make([][]any, n)
	lines := make([][]any, n)
	for i := range n {
		at := now.Add(-time.Duration(i-old) * (7 * 24 * time.Hour / time.Duration(n-old)))
		if i < old {
			at = now.Add(-7*24*time.Hour - 30*time.Minute)
		}
		id := fmt.Sprintf("run%07d", i)
		data, _ := json.Marshal(model.Run{ID: id, Status: model.RunCompleted, Code: `return await github.listIssues({repo: "x"})`, CreatedAt: at, UpdatedAt: at, Attempts: 1, Result: json.RawMessage(`{"issues":[1,2,3]}`), Namespaces: "0123456789abcdef0123456789abcdef"})
		recs[i] = []any{"", "runs", id, append(data, '\n'), at}
		lines[i] = []any{"", "runs", id, []byte(`{"seq":1,"kind":"call","tool":"github.listIssues","args":{"repo":"x"},"result":{"issues":[1,2,3]},"at":"2026-12-05T00:00:00Z"}`)}
	}
	if _, err := c.CopyFrom(ctx, pgx.Identifier{"records"}, []string{"tenant", "kind", "id", "data", "written_at"}, pgx.CopyFromRows(recs)); err != nil {
		b.Fatal(err)
	}
	if _, err := c.CopyFrom(ctx, pgx.Identifier{"log_lines"}, []string{"tenant", "kind", "id", "line"}, pgx.CopyFromRows(lines)); err != nil {
		b.Fatal(err)
	}
	if _, err := c.Exec(ctx, `ANALYZE`); err != nil {
		b.Fatal(err)
	}
}
