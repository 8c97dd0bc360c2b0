package app

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/store"
	"github.com/google/go-cmp/cmp"
)

// TestInterruptedRunIsShown: the app shows a run recorded running whose
// process is gone as interrupted, and not one a live attempt holds; when
// that attempt's process goes (its hold dropped, nothing written) the app
// notices by itself, and a run that is written done is no longer shown.
func TestInterruptedRunIsShown(t *testing.T) {
	dir, st, h := memoryHub(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	now := time.Now().UTC()
	const held, gone = "r00000000000000000held", "r00000000000000000gone"
	for _, id := range []string{held, gone} {
		if err := st.Put(ctx, store.Runs, id, model.Run{ID: id, Status: model.RunRunning, Code: "return 1", Attempts: 1, CreatedAt: now, UpdatedAt: now}); err != nil {
			t.Fatal(err)
		}
	}
	// A lock of its own open file: to the app, as another process's attempt.
	release, err := st.Hold(ctx, store.Runs, held)
	if err != nil {
		t.Fatal(err)
	}
	withdrawn := 0
	a := &App{
		log:     slog.New(slog.DiscardHandler),
		st:      st,
		hub:     h,
		dir:     dir,
		win:     noWindows{&withdrawn},
		pending: map[string]*call{},
		byNote:  map[uint32]string{},
		events:  make(chan func(), 64),
		quit:    make(chan struct{}),
	}
	done := make(chan error, 1)
	go func() { done <- a.loop(ctx) }()
	// What the tray would show, read in the loop.
	shown := func() []string {
		ch := make(chan []string, 1)
		a.events <- func() { ch <- a.interruptedRuns() }
		return <-ch
	}
	waitShown := func(what string, want []string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second) // generous: the app checks every few seconds
		for {
			got := shown()
			if cmp.Equal(want, got) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: the app shows %v interrupted, want %v", what, got, want)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	if diff := cmp.Diff([]string{gone}, shown()); diff != "" {
		t.Fatalf("at start, interrupted (-want +got):\n%s", diff)
	}
	release() // the attempt's process dies: nothing is written
	waitShown("after the held run's process went", []string{gone, held})
	if err := store.UpdateJSON(ctx, st, store.Runs, gone, func(r *model.Run) (*model.Run, error) {
		r.Status = model.RunCancelled
		return r, nil
	}); err != nil {
		t.Fatal(err)
	}
	waitShown("after one was cancelled", []string{held})
	a.Quit()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
