package sandbox

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/internal/testenv"
)

// TestThousandConcurrentTrivialRuns: 1,000 attempts of `return 1+1` at once
// all complete (with wall-clock compute time, waiting for a CPU used up the
// compute budget and some ended as timeout_compute), and no more than
// MaxRunning of them hold a runtime at a time.
func TestThousandConcurrentTrivialRuns(t *testing.T) {
	d, err := New(Options{MemoryBytes: testMemoryBytes, MaxRunning: 8})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	lim := Limits{WallMs: testWallMs, MemoryBytes: testMemoryBytes, QueueMs: 20 * testWallMs}
	codes := map[string]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range 1000 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out := d.Run(context.Background(), Request{JS: "return 1+1", Host: &fakeHost{}, Limits: lim})
			code := string(out.Status)
			if out.Error != nil {
				code += ":" + out.Error.Code
			} else if string(out.Result) != "2" {
				code += ":result " + string(out.Result)
			}
			mu.Lock()
			codes[code]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	if codes["completed"] != 1000 {
		t.Errorf("outcomes of 1,000 concurrent trivial runs: %v, want all completed", codes)
	}
	if p := d.Peak(); p > 8 || p < 1 {
		t.Errorf("at most %d attempts ran at once, want between 1 and MaxRunning (8)", p)
	}
}

// TestQueueBudget: with every turn taken, an attempt waits its queue budget
// and fails as busy, saying so; one whose ctx ends while waiting is
// cancelled. Neither starts.
func TestQueueBudget(t *testing.T) {
	d, err := New(Options{MemoryBytes: testMemoryBytes, MaxRunning: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	h := &blockingHost{started: make(chan struct{}), release: make(chan struct{})}
	done := make(chan Outcome)
	go func() {
		done <- d.Run(context.Background(), Request{JS: "return await x.wait({})", Namespaces: map[string][]string{"x": {"wait"}}, Host: h, Limits: Limits{WallMs: testWallMs}})
	}()
	<-h.started
	out := d.Run(context.Background(), Request{JS: "return 1", Host: &fakeHost{}, Limits: Limits{WallMs: testWallMs, QueueMs: 50}})
	if out.Status != StatusFailed || out.Error == nil || out.Error.Code != CodeBusy || out.Queued <= 0 {
		t.Errorf("queued past its budget: %+v, want failed with %s and the wait reported", out, CodeBusy)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	out = d.Run(ctx, Request{JS: "return 1", Host: &fakeHost{}, Limits: Limits{WallMs: testWallMs, QueueMs: testWallMs}})
	if out.Status != StatusCancelled {
		t.Errorf("cancelled while queued: %+v, want cancelled", out)
	}
	close(h.release)
	if out := <-done; out.Status != StatusCompleted {
		t.Errorf("the running attempt: %+v", out)
	}
}

type blockingHost struct {
	once             sync.Once
	started, release chan struct{}
}

func (h *blockingHost) CallTool(ctx context.Context, c Call) CallResult {
	h.once.Do(func() { close(h.started) })
	select {
	case <-h.release:
		return CallResult{Value: []byte(`"ok"`)}
	case <-ctx.Done():
		return CallResult{Error: &ToolError{Code: "cancelled", Message: "stopped"}}
	}
}

// TestComputeTurns: with one compute turn, a run waiting on a tool call
// does not hold it (a trivial run completes meanwhile), and of 200
// concurrent trivial runs never more than one computes at a time, none
// running out of compute time while it waits for its turn.
func TestComputeTurns(t *testing.T) {
	d, err := New(Options{MemoryBytes: testMemoryBytes, MaxComputing: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	h := &blockingHost{started: make(chan struct{}), release: make(chan struct{})}
	done := make(chan Outcome)
	go func() {
		done <- d.Run(context.Background(), Request{JS: "return await x.wait({})", Namespaces: map[string][]string{"x": {"wait"}}, Host: h, Limits: Limits{WallMs: testWallMs}})
	}()
	<-h.started
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(10*time.Second))
	defer cancel()
	if out := d.Run(ctx, Request{JS: "return 1", Host: &fakeHost{}, Limits: Limits{WallMs: testWallMs}}); out.Status != StatusCompleted {
		t.Errorf("a trivial run while another waits on a call: %+v", out.Error)
	}
	close(h.release)
	if out := <-done; out.Status != StatusCompleted {
		t.Errorf("the waiting run: %+v", out.Error)
	}

	lim := Limits{ComputeMs: 200, WallMs: testWallMs, QueueMs: testWallMs}
	codes := map[string]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range 200 {
		wg.Go(func() {
			out := d.Run(context.Background(), Request{JS: "let s = 0; for (let i = 0; i < 1000; i++) s += i; return s", Host: &fakeHost{}, Limits: lim})
			code := string(out.Status)
			if out.Error != nil {
				code += ":" + out.Error.Code
			}
			mu.Lock()
			codes[code]++
			mu.Unlock()
		})
	}
	wg.Wait()
	if codes["completed"] != 200 {
		t.Errorf("outcomes of 200 concurrent runs with one compute turn: %v, want all completed", codes)
	}
	if p := d.PeakComputing(); p != 1 {
		t.Errorf("at most %d attempts computed at once, want 1 (MaxComputing)", p)
	}
}
