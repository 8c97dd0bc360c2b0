package hub_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/approval"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/internal/testenv"
)

// TestDrainDecided: serve's drain (SIGTERM) waits for the run
// FinishDecided is resuming (its write under way upstream) until it ends,
// only as long as its context allows, and takes no run decided after it
// began (left to another process).
func TestDrainDecided(t *testing.T) {
	hold := filepath.Join(t.TempDir(), "hold")
	if err := os.WriteFile(hold, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	f := newFixtureEnv(t, map[string]string{"SCRIPTED_HOLD": hold})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ask := func(item string) string {
		env, err := f.h.Execute(ctx, `return await leaky.record({item: "`+item+`"})`)
		if err != nil {
			t.Fatal(err)
		}
		if env.Status != string(model.RunAwaitingApproval) {
			t.Fatalf("the write did not ask: %s", env.Status)
		}
		return env.RunID
	}
	first, second := ask("under-way"), ask("after-drain")
	followed := make(chan error, 1)
	go func() { followed <- f.h.FinishDecided(ctx) }()
	if _, err := approval.Record(ctx, f.st, approval.Request{RunID: first, Choice: model.ChoiceOnce, Channel: approval.ChannelPage}); err != nil {
		t.Fatal(err)
	}
	// The write is made upstream, whose answer is held.
	deadline := time.Now().Add(testenv.Timeout(30 * time.Second))
	for {
		calls, _ := os.ReadFile(f.calls)
		if strings.Contains(string(calls), "under-way") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the decided run was not resumed")
		}
		time.Sleep(10 * time.Millisecond)
	}
	short, cancelShort := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancelShort()
	if err := f.h.DrainDecided(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("DrainDecided while the resume waits upstream = %v; want its context's end", err)
	}
	if _, err := approval.Record(ctx, f.st, approval.Request{RunID: second, Choice: model.ChoiceOnce, Channel: approval.ChannelPage}); err != nil {
		t.Fatal(err)
	}
	drained := make(chan error, 1)
	go func() { drained <- f.h.DrainDecided(ctx) }()
	if err := os.Remove(hold); err != nil {
		t.Fatal(err)
	}
	if err := <-drained; err != nil {
		t.Fatalf("DrainDecided once the write answered: %v", err)
	}
	eng, _ := f.h.Runs()
	r, err := eng.Get(ctx, first)
	if err != nil || r.Status != model.RunCompleted {
		t.Fatalf("the run under way when the drain began: %v %+v; want completed", err, r)
	}
	// Past the retry and debounce of FinishDecided: the run decided during
	// the drain is still waiting, for another process.
	time.Sleep(1500 * time.Millisecond)
	r, err = eng.Get(ctx, second)
	if err != nil || r.Status != model.RunAwaitingApproval {
		t.Fatalf("a run decided during the drain: %v %+v; want it left awaiting approval", err, r)
	}
	calls, _ := os.ReadFile(f.calls)
	if strings.Contains(string(calls), "after-drain") {
		t.Fatalf("a draining hub made the write of a run decided during the drain:\n%s", calls)
	}
	cancel()
	if err := <-followed; err != nil {
		t.Fatal(err)
	}
}
