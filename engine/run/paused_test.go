package run_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/run"
	"github.com/capabilities-sh/capabilities/store"
)

// TestPausedFollowsEveryWrite: Paused lists the runs waiting for a person,
// and follows each record written since the last call (a run that comes
// to wait, one decided, one pruned) though it skips reading records that
// did not change and were not waiting.
func TestPausedFollowsEveryWrite(t *testing.T) {
	st, _, err := store.Init(filepath.Join(t.TempDir(), "hub"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() }) // its spare files are made in runs/ in the background
	ctx := context.Background()
	eng := run.New(st, nil, nil, run.Options{})
	now := time.Now().UTC()
	put := func(id string, status model.RunStatus) {
		t.Helper()
		if err := st.Put(ctx, store.Runs, id, model.Run{ID: id, Status: status, Code: "return 1", CreatedAt: now, UpdatedAt: now}); err != nil {
			t.Fatal(err)
		}
	}
	ids := func() []string {
		t.Helper()
		runs, err := eng.Paused(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range runs {
			out = append(out, r.ID)
		}
		slices.Sort(out)
		return out
	}
	const a, b, c = "r0000000000000000000a", "r0000000000000000000b", "r0000000000000000000c"
	put(a, model.RunCompleted)
	put(b, model.RunAwaitingApproval)
	put(c, model.RunRunning)
	if got := ids(); !slices.Equal(got, []string{b}) {
		t.Fatalf("Paused = %v, want [%s]", got, b)
	}
	// Each write is a new file renamed over the record: seen anew.
	put(a, model.RunAwaitingApproval)
	put(b, model.RunCompleted)
	put(c, model.RunAwaitingConnection)
	if got := ids(); !slices.Equal(got, []string{a, c}) {
		t.Fatalf("after the records changed, Paused = %v, want [%s %s]", got, a, c)
	}
	if err := st.Delete(ctx, store.Runs, a); err != nil {
		t.Fatal(err)
	}
	if got := ids(); !slices.Equal(got, []string{c}) {
		t.Fatalf("after a run was pruned, Paused = %v, want [%s]", got, c)
	}
	// A record that was not waiting and did not change is not read again:
	// made unreadable in place (same size, time and file), it is not
	// noticed; written anew, it is.
	p := filepath.Join(st.Dir(), "runs", b+".json")
	fi, _ := os.Stat(p)
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("{"), 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := os.Chtimes(p, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	if got := ids(); !slices.Equal(got, []string{c}) {
		t.Fatalf("Paused = %v, want [%s]", got, c)
	}
	put(b, model.RunAwaitingApproval)
	if got := ids(); !slices.Equal(got, []string{b, c}) {
		t.Fatalf("after b came to wait, Paused = %v, want [%s %s]", got, b, c)
	}
}

// BenchmarkApprovalsPoll: the console's approvals poll over a week of runs
// (5,000 records of 8 KB, 3 paused, 5 recorded running: 3 held by a live
// attempt, 2 whose process died): Paused and Waiting, which read again only
// the records that changed or were paused (and, of those recorded running,
// the ones no process holds), against reading every record (List).
func BenchmarkApprovalsPoll(b *testing.B) {
	st, _, err := store.Init(filepath.Join(b.TempDir(), "hub"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	ctx := context.Background()
	now := time.Now().UTC()
	big := strings.Repeat("x", 8<<10)
	for i := range 5000 {
		status := model.RunCompleted
		if i%2000 == 0 {
			status = model.RunAwaitingApproval
		}
		if i%1000 == 500 {
			status = model.RunRunning
		}
		id := fmt.Sprintf("r%020d", i)
		if err := st.Put(ctx, store.Runs, id, model.Run{ID: id, Status: status, Code: "return 1", CreatedAt: now, UpdatedAt: now, Logs: []string{big}}); err != nil {
			b.Fatal(err)
		}
		if status == model.RunRunning && i < 3000 { // 500, 1500, 2500: a live attempt's
			release, err := st.Hold(ctx, store.Runs, id)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(release)
		}
	}
	eng := run.New(st, nil, nil, run.Options{})
	b.Run("Paused", func(b *testing.B) {
		for b.Loop() {
			if rs, err := eng.Paused(ctx); err != nil || len(rs) != 3 {
				b.Fatal(len(rs), err)
			}
		}
	})
	b.Run("Waiting", func(b *testing.B) {
		for b.Loop() {
			if w, err := eng.Waiting(ctx); err != nil || len(w.Paused) != 3 || len(w.Interrupted) != 2 {
				b.Fatal(len(w.Paused), len(w.Interrupted), err)
			}
		}
	})
	b.Run("List", func(b *testing.B) {
		for b.Loop() {
			if _, err := eng.List(ctx, ""); err != nil {
				b.Fatal(err)
			}
		}
	})
}
