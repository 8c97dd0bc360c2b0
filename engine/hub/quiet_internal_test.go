package hub

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/capabilities-sh/capabilities/store"
)

// TestIdleHubTrims: a hub trims once no request has run for trimAfter, not
// while one runs however long it takes, and once per quiet spell; an
// execute after a trim runs as before.
func TestIdleHubTrims(t *testing.T) {
	defer func(d time.Duration) { trimAfter = d }(trimAfter)
	trimAfter = 20 * time.Millisecond
	ctx := context.Background()
	h := New(store.NewMem(), Options{})
	defer h.Close()
	trimmed := func(want int64) {
		t.Helper()
		deadline := time.Now().Add(testenv.Timeout(10 * time.Second))
		for h.quiet.trims.Load() < want && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		if got := h.quiet.trims.Load(); got != want {
			t.Fatalf("%d trims, want %d", got, want)
		}
	}

	// A short execute ends while a long one runs: nothing trims until the
	// long one ends.
	long := make(chan error, 1)
	go func() {
		env, err := h.Execute(ctx, `await new Promise(r => setTimeout(r, 3000)); return "slept"`)
		if err == nil && env.Status != "completed" {
			err = fmt.Errorf("ended %s", env.Status)
		}
		long <- err
	}()
	for busy := 0; busy == 0; time.Sleep(time.Millisecond) {
		h.quiet.mu.Lock()
		busy = h.quiet.busy
		h.quiet.mu.Unlock()
	}
	if env, err := h.Execute(ctx, `return 1`); err != nil || env.Status != "completed" {
		t.Fatalf("the short execute: %v %+v", err, env)
	}
	time.Sleep(30 * trimAfter)
	got := h.quiet.trims.Load()
	select {
	case <-long:
		t.Fatal("the long execute ended before the check: the test shows nothing")
	default:
	}
	if got != 0 {
		t.Errorf("%d trims while an execute ran, want 0", got)
	}
	if err := <-long; err != nil {
		t.Fatalf("the long execute: %v", err)
	}
	trimmed(1)
	time.Sleep(10 * trimAfter)
	trimmed(1) // once per quiet spell

	env, err := h.Execute(ctx, `return 1 + 1`)
	if err != nil || env.Status != "completed" || string(env.Result) != "2" {
		t.Fatalf("execute after a trim: %v %+v", err, env)
	}
	trimmed(2)
}
