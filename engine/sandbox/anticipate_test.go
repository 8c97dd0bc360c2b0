package sandbox

import (
	"context"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/internal/testenv"
)

// Anticipate warms up a ready runtime only when the driver is idle, and
// the runtime it used is reset before it serves a run: the run after a
// warm-up gives what it gives without one.
func TestAnticipateWarmsAnIdleDriverAndRunsSeeNothingOfIt(t *testing.T) {
	d := resettingDriver(t, 2)
	defer d.Close()
	waitFor := func(what string, ok func() bool) { t.Helper(); waitUntil(t, what, ok) }
	const look = `return [typeof warm, Object.getOwnPropertyNames(globalThis).length, Math.random(), Date.now(), Object.isFrozen(gh)].join()`
	runLook := func() string {
		t.Helper()
		out := d.Run(context.Background(), Request{JS: look, Host: &fakeHost{}, Namespaces: testNamespaces, Seed: 7, Clock: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)})
		if out.Status != StatusCompleted {
			t.Fatalf("run: %+v", out)
		}
		return string(out.Result)
	}
	want := runLook() // also makes the ready runtimes the set's copies
	waitFor("two ready runtimes", func() bool { return len(d.ready) == 2 })

	// Right after a run (one that ended "now", however slow this machine
	// is): nothing to warm.
	d.ended.Store(time.Now().Add(time.Hour).UnixNano())
	d.Anticipate()
	time.Sleep(20 * time.Millisecond)
	if n := d.warmups.Load(); n != 0 {
		t.Fatalf("%d warm-ups right after a run, want 0", n)
	}
	d.ended.Store(time.Now().Add(-time.Second).UnixNano())
	first := <-d.ready // the one Anticipate takes
	second := <-d.ready
	d.ready <- first
	d.ready <- second
	reuses := d.reuses.Load()
	d.Anticipate()
	waitFor("a warm-up", func() bool { return d.warmups.Load() == 1 && !d.anticipating.Load() })
	// The warmed runtime was reset (a copy) or closed (the set's first
	// runtime, built the long way) before the driver has two ready again.
	waitFor("two ready runtimes again", func() bool { return len(d.ready) == 2 })
	a, b := <-d.ready, <-d.ready
	for _, v := range []*vm{a, b} {
		if v == first && d.reuses.Load() == reuses {
			t.Fatal("the warmed-up runtime is ready again without a reset")
		}
	}
	if a != second {
		t.Errorf("the runtime that was not warmed up is not the next to serve")
	}
	d.ready <- a
	d.ready <- b
	for i := range 2 { // both ready runtimes: the warmed one among them
		if got := runLook(); got != want {
			t.Errorf("run %d after a warm-up: %s, want %s", i, got, want)
		}
	}

	// Busy: a run waiting on its tool call.
	waitFor("two ready runtimes", func() bool { return len(d.ready) == 2 })
	started := make(chan struct{})
	done := make(chan Outcome)
	go func() {
		done <- d.Run(context.Background(), Request{JS: `return await gh.sleep({ms: 300})`, Host: &startedHost{started: started}, Namespaces: testNamespaces})
	}()
	<-started
	before := d.warmups.Load()
	d.Anticipate()
	time.Sleep(20 * time.Millisecond)
	if n := d.warmups.Load() - before; n != 0 {
		t.Errorf("%d warm-ups while a run was running, want 0", n)
	}
	if out := <-done; out.Status != StatusCompleted {
		t.Fatalf("the busy run: %+v", out)
	}
}

// startedHost is fakeHost that closes started on the first call.
type startedHost struct {
	fakeHost
	started chan struct{}
	once    bool
}

func (h *startedHost) CallTool(ctx context.Context, c Call) CallResult {
	if !h.once {
		h.once = true
		close(h.started)
	}
	return h.fakeHost.CallTool(ctx, c)
}

// Runs that start while a warm-up goes on, and a Close in the middle of
// one, lose nothing and panic nowhere (run with -race).
func TestAnticipateBesideRunsAndClose(t *testing.T) {
	for round := range 3 {
		d := resettingDriver(t, 2)
		twoReady := func() { waitUntil(t, "two ready runtimes", func() bool { return len(d.ready) == 2 }) }
		for i := range 10 {
			twoReady()
			d.ended.Store(time.Now().Add(-time.Second).UnixNano()) // quiet: warm up
			d.Anticipate()
			out := d.Run(context.Background(), Request{JS: `return 6 * 7`, Host: &fakeHost{}, Namespaces: testNamespaces})
			if out.Status != StatusCompleted || string(out.Result) != "42" {
				t.Fatalf("round %d, run %d beside a warm-up: %+v", round, i, out)
			}
		}
		if d.warmups.Load() == 0 {
			t.Fatalf("round %d: no warm-up beside the runs: this test shows nothing", round)
		}
		twoReady()
		d.ended.Store(time.Now().Add(-time.Second).UnixNano())
		d.Anticipate()
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
		if d.anticipating.Load() {
			t.Fatal("a warm-up still going on after Close")
		}
	}
}

// resettingDriver is a driver of its own whose runtimes are reset for
// another run (the compiled QuickJS is fixed), warm of them kept ready.
func resettingDriver(t *testing.T, warm int) *Driver {
	t.Helper()
	d, err := New(Options{MemoryBytes: testMemoryBytes, Warm: warm})
	if err != nil {
		t.Fatal(err)
	}
	if !d.reuse {
		d.Close()
		t.Fatal("the compiled QuickJS is not fixed (instrumented.fixed): runtimes are never reset")
	}
	return d
}

// waitUntil polls ok until it holds, failing the test after a generous
// timeout.
func waitUntil(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(testenv.Timeout(30 * time.Second))
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}
