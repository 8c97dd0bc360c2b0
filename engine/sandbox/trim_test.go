package sandbox

import (
	"context"
	"testing"
	"time"
)

// TestTrimKeepsWhatTheNextRunTakes: an idle driver lets go of the runtimes
// waiting to be reset, the snapshots of other namespace sets and its spare
// memories; not while an attempt runs; and the next run of the expected
// set is still a copy of its snapshot, with the same result.
func TestTrimKeepsWhatTheNextRunTakes(t *testing.T) {
	d, err := New(Options{MemoryBytes: testMemoryBytes})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	a := NewNamespaces(map[string][]string{"gh": {"echo"}})
	b := NewNamespaces(map[string][]string{"gh": {"echo"}, "slack": {"post"}})
	runOn := func(nss *Namespaces, h Host) Outcome {
		return d.Run(context.Background(), Request{JS: `return await gh.echo({n: 1})`, Host: h, NamespaceSet: nss, Seed: 1, Clock: time.UnixMilli(1)})
	}
	for _, nss := range []*Namespaces{a, b, a, b, b} {
		if out := runOn(nss, &fakeHost{}); out.Status != StatusCompleted {
			t.Fatalf("run: %v %v", out.Status, out.Error)
		}
	}
	if n := len(d.snaps.last); n < 2 {
		t.Fatalf("%d snapshots after runs of two sets, want 2", n)
	}

	// While an attempt runs, nothing goes.
	h := &blockingHost{started: make(chan struct{}), release: make(chan struct{})}
	done := make(chan Outcome)
	go func() { done <- runOn(b, h) }()
	<-h.started
	if d.Trim() {
		t.Error("Trim reported it trimmed while an attempt ran")
	}
	if n := len(d.snaps.last); n < 2 {
		t.Errorf("Trim during an attempt left %d snapshots, want the 2 it had", n)
	}
	close(h.release)
	if out := <-done; out.Status != StatusCompleted {
		t.Fatalf("blocked run: %v %v", out.Status, out.Error)
	}

	if !d.Trim() {
		t.Fatal("Trim did nothing on an idle driver")
	}
	if n := len(d.used); n != 0 {
		t.Errorf("%d used runtimes kept after Trim, want 0", n)
	}
	if n := len(d.snaps.last); n != 1 || !d.snaps.last[0].nss.same(b) {
		t.Errorf("after Trim %d snapshots are kept, want only the expected set's", n)
	}
	d.spare.mu.Lock()
	spares := len(d.spare.bufs)
	d.spare.mu.Unlock()
	if spares != 0 {
		t.Errorf("%d spare memories kept after Trim, want 0", spares)
	}
	copies := d.copies.Load() + d.reuses.Load()
	for range 3 {
		out := runOn(b, &fakeHost{})
		if out.Status != StatusCompleted || string(out.Result) != `{"n":1}` {
			t.Fatalf("run after Trim: %v %s %v", out.Status, out.Result, out.Error)
		}
	}
	if d.copies.Load()+d.reuses.Load() == copies {
		t.Error("no run after Trim was a copy of the kept snapshot")
	}
}
