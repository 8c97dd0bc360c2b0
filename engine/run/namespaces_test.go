package run_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/approval"
	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/run"
	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/google/go-cmp/cmp"
)

// TestNamespacesChangeForTheNextRunOnly: a run pauses on a write; a source
// is added meanwhile, which the next run sees and the paused run's replay
// does not; the resumed run's write is held upstream while a source is
// removed, which the next run no longer sees and the running attempt still
// does. The run's result names what it saw before and after its write.
func TestNamespacesChangeForTheNextRunOnly(t *testing.T) {
	hold := filepath.Join(t.TempDir(), "hold")
	f := newHub(t, run.Limits{}, "SCRIPTED_HOLD="+hold)
	ctx := context.Background()
	code := `const before = [typeof extra, typeof memory];
await up.record({item: "x"});
return [before, [typeof extra, typeof memory, typeof memory.readGraph]];`
	env, err := f.h.Execute(ctx, code)
	if err != nil || env.Status != "awaiting_approval" {
		t.Fatalf("execute: %v %+v, want awaiting_approval", err, env)
	}

	p, err := f.h.Propose(ctx, hub.AddRequest{Namespace: "extra", Command: testenv.Scripted(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.h.Accept(ctx, p); err != nil {
		t.Fatal(err)
	}
	next := func(want string) {
		t.Helper()
		env, err := f.h.Execute(ctx, `return [typeof extra, typeof memory]`)
		if err != nil || env.Status != "completed" {
			t.Fatalf("next run: %v %+v", err, env)
		}
		if diff := cmp.Diff(want, string(env.Result)); diff != "" {
			t.Errorf("the next run saw (-want +got):\n%s", diff)
		}
	}
	next(`["object","object"]`)

	if _, err := approval.Record(ctx, f.h.Store(), approval.Request{RunID: env.RunID, Choice: model.ChoiceOnce, Channel: approval.ChannelCLI}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(hold, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	resumed := make(chan *run.Envelope, 1)
	go func() {
		env, err := f.h.Resume(ctx, env.RunID)
		if err != nil {
			t.Error(err)
		}
		resumed <- env
	}()
	deadline := time.Now().Add(testenv.Timeout(30 * time.Second))
	for len(f.upstreamCalls(t)) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the resumed run's write never reached the upstream")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := f.h.Remove(ctx, "memory"); err != nil {
		t.Fatal(err)
	}
	next(`["object","undefined"]`)
	if err := os.Remove(hold); err != nil {
		t.Fatal(err)
	}
	done := <-resumed
	if done == nil || done.Status != "completed" {
		t.Fatalf("resumed run: %+v", done)
	}
	var got any
	if err := json.Unmarshal(done.Result, &got); err != nil {
		t.Fatal(err)
	}
	want := []any{[]any{"undefined", "object"}, []any{"undefined", "object", "function"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the paused and resumed run saw (-want +got):\n%s", diff)
	}
}
