package hub_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/approval"
	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/internal/testenv"
)

// TestDecisionFinishesTheRun: a write paused for a person; two hubs follow
// decisions on the same store (the desktop app and serve --http, or two
// processes seeing the same record). The person allows it from the window:
// the write is made then, once (I6), with no agent coming back, and the
// agent's resume gets the finished envelope (issue 37, item 1).
func TestDecisionFinishesTheRun(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	env, err := f.h.Execute(ctx, `return await leaky.record({item: "finish me"})`)
	if err != nil {
		t.Fatal(err)
	}
	if env.Status != string(model.RunAwaitingApproval) {
		t.Fatalf("the write did not ask: %s", env.Status)
	}
	other := hub.New(f.st, hub.Options{Secrets: f.spy})
	t.Cleanup(other.Close)
	done := make(chan struct{}, 2)
	for _, h := range []*hub.Hub{f.h, other} {
		go func() {
			defer func() { done <- struct{}{} }()
			if err := h.FinishDecided(ctx); err != nil {
				t.Errorf("FinishDecided: %v", err)
			}
		}()
	}
	if _, err := approval.Record(ctx, f.st, approval.Request{RunID: env.RunID, Choice: model.ChoiceOnce, Channel: approval.ChannelDesktop}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(testenv.Timeout(30 * time.Second))
	for {
		eng, _ := f.h.Runs()
		r, err := eng.Get(ctx, env.RunID)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status.Done() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run is still %s after the decision: no hub resumed it", r.Status)
		}
		time.Sleep(20 * time.Millisecond)
	}
	calls, _ := os.ReadFile(f.calls)
	if n := strings.Count(string(calls), `"name":"record"`); n != 1 {
		t.Fatalf("the approved write was made %d times, want once:\n%s", n, calls)
	}
	back, err := f.h.Resume(ctx, env.RunID)
	if err != nil || back.Status != string(model.RunCompleted) || !strings.Contains(string(back.Result), "finish me") {
		t.Fatalf("the agent's resume: %v %+v", err, back)
	}
	cancel()
	<-done
	<-done
}
