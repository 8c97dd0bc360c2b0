//go:build linux

package run_test

import (
	"context"
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/run"
	"github.com/capabilities-sh/capabilities/store"
)

// TestRunsThatCallNothingShareFiles: runs that call no tool and end in
// their first attempt write their records into shared files (a line and a
// link, no file created for each, store.PutFinal); each is still a run of
// its own to read, to list (here and in another process), to size and to
// prune, and a run that calls a tool writes its own files as before.
func TestRunsThatCallNothingShareFiles(t *testing.T) {
	f := newHub(t, run.Limits{})
	ctx := context.Background()
	eng, _ := f.h.Runs()
	const n = 40
	ids := map[string]string{}
	for i := range n {
		env, err := f.h.Execute(ctx, fmt.Sprintf("return %d", i))
		if err != nil || env.Status != "completed" {
			t.Fatalf("execute %d: %+v, %v", i, env, err)
		}
		ids[env.RunID] = fmt.Sprint(i)
	}
	failed, err := f.h.Execute(ctx, `throw new Error("no")`)
	if err != nil || failed.Status != "failed" {
		t.Fatalf("code that throws: %+v, %v", failed, err)
	}
	call, err := f.h.Execute(ctx, `return await up.echo({message: "x"})`)
	if err != nil || call.Status != "completed" {
		t.Fatalf("a read: %+v, %v", call, err)
	}
	eng.Wait()

	links := func(id string) uint64 {
		t.Helper()
		var st syscall.Stat_t
		if err := syscall.Stat(f.h.Store().(*store.File).Path(store.Runs, id), &st); err != nil {
			t.Fatal(err)
		}
		return uint64(st.Nlink)
	}
	shared := 0
	for id, want := range ids {
		r, err := eng.Get(ctx, id)
		if err != nil || r.Status != model.RunCompleted || string(r.Result) != want || r.Attempts != 1 {
			t.Fatalf("run %s: %+v, %v; want completed with %s", id, r, err, want)
		}
		if links(id) > 1 {
			shared++
		}
	}
	if shared < n/2 {
		t.Errorf("%d of %d records share a file", shared, n)
	}
	if links(call.RunID) != 1 {
		t.Errorf("the record of a run that called a tool shares its file")
	}

	// Another process (the CLI's `hub runs`) lists every run.
	other, err := store.Open(f.dir)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	oe := run.New(other, nil, nil, run.Options{})
	list, err := oe.Select(ctx, run.Selection{})
	if err != nil || len(list) != n+2 {
		t.Fatalf("another process lists %d runs, %v; want %d", len(list), err, n+2)
	}
	if r, err := oe.Get(ctx, failed.RunID); err != nil || r.Status != model.RunFailed {
		t.Fatalf("another process reads the failed run: %+v, %v", r, err)
	}

	// Sized by their share of the file, pruned one by one.
	all, err := eng.PruneRuns(ctx, run.Retention{})
	if err != nil || all.KeptRuns != n+2 {
		t.Fatalf("PruneRuns with no limit = %+v, %v", all, err)
	}
	fi, err := os.Stat(f.h.Store().(*store.File).Path(store.Runs, firstKey(ids)))
	if err != nil {
		t.Fatal(err)
	}
	if all.KeptBytes >= int64(n)*fi.Size() {
		t.Errorf("%d runs kept in %d bytes: each packed record counted whole (%d bytes a file)", all.KeptRuns, all.KeptBytes, fi.Size())
	}
	p, err := eng.PruneRuns(ctx, run.Retention{Age: time.Nanosecond})
	if err != nil || p.Runs != n+2 || p.KeptRuns != 0 {
		t.Fatalf("PruneRuns of everything = %+v, %v", p, err)
	}
	if left, _ := other.List(ctx, store.Runs); len(left) != 0 {
		t.Errorf("%d records left after the prune", len(left))
	}
}

func firstKey(m map[string]string) string {
	for k := range m {
		return k
	}
	return ""
}
