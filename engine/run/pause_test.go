package run_test

import (
	"context"
	"testing"

	"github.com/capabilities-sh/capabilities/engine/approval"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/policy"
	"github.com/capabilities-sh/capabilities/engine/run"
)

// TestPausedHubAsksForEveryCall: while the hub is paused, a write asks with
// the reason paused, and a tool the person allowed for the rest of the run
// asks again at its next call; the decided call runs once. Resumed,
// the call that asked while paused still needs its decision, and then the
// read runs without asking.
func TestPausedHubAsksForEveryCall(t *testing.T) {
	f := newHub(t, run.Limits{})
	ctx := context.Background()
	if err := f.h.SetPaused(true); err != nil {
		t.Fatal(err)
	}
	env, err := f.h.Execute(ctx, `await up.record({item: "one"}); await up.record({item: "two"}); return await up.echo({message: "read"});`)
	if err != nil {
		t.Fatal(err)
	}
	pending := func(env *run.Envelope, address string) {
		t.Helper()
		if env.Status != "awaiting_approval" || len(env.Pending) != 1 || env.Pending[0].Address != address {
			t.Fatalf("envelope %+v, want awaiting_approval on %s", env, address)
		}
		eng, _ := f.h.Runs()
		rec, err := eng.Get(ctx, env.RunID)
		if err != nil {
			t.Fatal(err)
		}
		p := rec.PendingItem(env.Pending[0].ID)
		if p == nil || p.Reason != policy.ReasonPaused {
			t.Fatalf("the run waits on %+v, want the reason paused", p)
		}
	}
	pending(env, "up.record")
	if _, err := approval.Record(ctx, f.h.Store(), approval.Request{RunID: env.RunID, Choice: model.ChoiceRun, Channel: approval.ChannelCLI}); err != nil {
		t.Fatal(err)
	}
	again, err := f.h.Resume(ctx, env.RunID)
	if err != nil {
		t.Fatal(err)
	}
	pending(again, "up.record")
	if n := len(f.upstreamCalls(t)); n != 1 {
		t.Fatalf("the upstream saw %d calls while paused, want 1 (the decided one)", n)
	}
	// Resumed: the call that asked while paused still waits for its
	// decision; after it, the read runs without asking.
	if err := f.h.SetPaused(false); err != nil {
		t.Fatal(err)
	}
	if _, err := approval.Record(ctx, f.h.Store(), approval.Request{RunID: env.RunID, Choice: model.ChoiceOnce, Channel: approval.ChannelCLI}); err != nil {
		t.Fatal(err)
	}
	done, err := f.h.Resume(ctx, env.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if done.Status != "completed" || len(f.upstreamCalls(t)) != 3 {
		t.Fatalf("after resume: %+v, the upstream saw %d calls; want completed and 3", done, len(f.upstreamCalls(t)))
	}
}
