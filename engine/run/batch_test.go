package run_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/capabilities-sh/capabilities/engine/approval"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/run"
	"github.com/google/go-cmp/cmp"
)

// asked is a pending item as the tests compare it.
type asked struct {
	ID, Address, Args string
}

// pendingOf is an envelope's pending items, their arguments compacted (a
// record read back from the store has them indented).
func pendingOf(env *run.Envelope) []asked {
	var out []asked
	for _, p := range env.Pending {
		var args bytes.Buffer
		if err := json.Compact(&args, p.Args); err != nil {
			args.Write(p.Args)
		}
		out = append(out, asked{p.ID, p.Address, args.String()})
	}
	return out
}

// decide records a person's choice on each call, by id.
func (f *fixture) decide(t *testing.T, runID string, choices map[string]model.Choice) {
	t.Helper()
	for id, c := range choices {
		if _, err := approval.Record(context.Background(), f.h.Store(), approval.Request{RunID: runID, CallID: id, Choice: c, Channel: approval.ChannelCLI}); err != nil {
			t.Fatalf("deciding %s: %v", id, err)
		}
	}
}

// TestWritesMadeTogetherAskTogether: three writes in one Promise.all pause
// the run once, with a pending item each, in the order the code made them,
// and none made; on every one of 20 runs the same. Once a person approves
// all three, one resume completes the run, each write made exactly once.
func TestWritesMadeTogetherAskTogether(t *testing.T) {
	f := newHub(t, run.Limits{})
	ctx := context.Background()
	for i := range 20 {
		items := []string{fmt.Sprintf("a-%d", i), fmt.Sprintf("b-%d", i), fmt.Sprintf("c-%d", i)}
		env, err := f.h.Execute(ctx, fmt.Sprintf(`
const done = await Promise.all([up.record({item: %q}), up.record({item: %q}), up.record({item: %q})]);
return done.length;`, items[0], items[1], items[2]))
		if err != nil {
			t.Fatal(err)
		}
		want := []asked{
			{"c1", "up.record", fmt.Sprintf(`{"item":%q}`, items[0])},
			{"c2", "up.record", fmt.Sprintf(`{"item":%q}`, items[1])},
			{"c3", "up.record", fmt.Sprintf(`{"item":%q}`, items[2])},
		}
		if env.Status != "awaiting_approval" {
			t.Fatalf("run %d: %s, want awaiting_approval: %+v", i, env.Status, env)
		}
		if diff := cmp.Diff(want, pendingOf(env)); diff != "" {
			t.Fatalf("run %d: pending (-want +got):\n%s", i, diff)
		}
		for _, item := range items {
			if n := f.writesOf(t, item); n != 0 {
				t.Fatalf("run %d: %s was written %d times before a person decided", i, item, n)
			}
		}
		f.decide(t, env.RunID, map[string]model.Choice{"c1": model.ChoiceOnce, "c2": model.ChoiceOnce, "c3": model.ChoiceOnce})
		done, err := f.h.Resume(ctx, env.RunID)
		if err != nil {
			t.Fatal(err)
		}
		if done.Status != "completed" || string(done.Result) != "3" {
			t.Fatalf("run %d after one resume: %+v, want completed with 3", i, done)
		}
		for _, item := range items {
			if n := f.writesOf(t, item); n != 1 {
				t.Errorf("run %d: %s was written %d times, want once", i, item, n)
			}
		}
	}
}

// TestWritesTogetherDecidedApart: a person approves two of three writes
// made together and denies one. Deciding only some leaves the run paused
// on the rest, with nothing made; once all are decided, one resume makes
// the approved writes once each, and the denied one throws ToolError
// approval_denied in the code.
func TestWritesTogetherDecidedApart(t *testing.T) {
	f := newHub(t, run.Limits{})
	ctx := context.Background()
	env, err := f.h.Execute(ctx, `
const rs = await Promise.allSettled([up.record({item: "one"}), up.record({item: "two"}), up.record({item: "three"})]);
return rs.map(r => r.status === "fulfilled" ? "made" : r.reason.name + " " + r.reason.code);`)
	if err != nil {
		t.Fatal(err)
	}
	if env.Status != "awaiting_approval" || len(env.Pending) != 3 {
		t.Fatalf("envelope %+v, want three pending items", env)
	}
	f.decide(t, env.RunID, map[string]model.Choice{"c1": model.ChoiceOnce, "c3": model.ChoiceOnce})
	again, err := f.h.Resume(ctx, env.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]asked{{"c2", "up.record", `{"item":"two"}`}}, pendingOf(again)); again.Status != "awaiting_approval" || diff != "" {
		t.Fatalf("after deciding two of three: %s, pending (-want +got):\n%s", again.Status, diff)
	}
	if n := len(f.upstreamCalls(t)); n != 0 {
		t.Fatalf("the upstream saw %d calls while a call was undecided, want none", n)
	}
	f.decide(t, env.RunID, map[string]model.Choice{"c2": model.ChoiceDeny})
	done, err := f.h.Resume(ctx, env.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(`["made","ToolError approval_denied","made"]`, string(done.Result)); done.Status != "completed" || diff != "" {
		t.Fatalf("after the last decision: %+v; result (-want +got):\n%s", done, diff)
	}
	for item, want := range map[string]int{"one": 1, "two": 0, "three": 1} {
		if n := f.writesOf(t, item); n != want {
			t.Errorf("%s was written %d times, want %d", item, n, want)
		}
	}
}

// TestReadsAndWritesTogether: a read made together with writes runs (reads
// run) and the writes ask together; on resume the read is answered from
// the journal, not made again. Writes awaited one after another still ask
// one at a time: the second is not made, nor asked about, until the first
// resolved. A call the code makes after an earlier read resolved, but
// before it could see the paused write, asks in the same pause.
func TestReadsAndWritesTogether(t *testing.T) {
	tests := []struct {
		name   string
		code   string
		rounds [][]asked // the pending items of each pause, in order
		reads  int       // up.echo calls the upstream saw in all
	}{
		{
			name: "a read first",
			code: `return await Promise.all([up.echo({message: "r"}), up.record({item: "x"}), up.record({item: "y"})]);`,
			rounds: [][]asked{{
				{"c2", "up.record", `{"item":"x"}`},
				{"c3", "up.record", `{"item":"y"}`},
			}},
			reads: 1,
		},
		{
			name: "a read between",
			code: `return await Promise.all([up.record({item: "x"}), up.echo({message: "r"}), up.record({item: "y"})]);`,
			rounds: [][]asked{{
				{"c1", "up.record", `{"item":"x"}`},
				{"c3", "up.record", `{"item":"y"}`},
			}},
			reads: 1,
		},
		{
			name: "one after another",
			code: `const a = await up.record({item: "x"}); const b = await up.record({item: "y"}); return [a, b];`,
			rounds: [][]asked{
				{{"c1", "up.record", `{"item":"x"}`}},
				{{"c2", "up.record", `{"item":"y"}`}},
			},
		},
		{
			name: "a write made once a read resolved",
			code: `const r = up.sleep({ms: 50}); const x = up.record({item: "x"}); await r; const y = up.record({item: "y"}); return await Promise.all([x, y]);`,
			rounds: [][]asked{{
				{"c2", "up.record", `{"item":"x"}`},
				{"c3", "up.record", `{"item":"y"}`},
			}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newHub(t, run.Limits{})
			ctx := context.Background()
			env, err := f.h.Execute(ctx, tt.code)
			if err != nil {
				t.Fatal(err)
			}
			for i, want := range tt.rounds {
				if env.Status != "awaiting_approval" {
					t.Fatalf("pause %d: %+v, want awaiting_approval", i+1, env)
				}
				if diff := cmp.Diff(want, pendingOf(env)); diff != "" {
					t.Fatalf("pause %d: pending (-want +got):\n%s", i+1, diff)
				}
				if n := f.callsTo(t, "record", ""); n != i {
					t.Fatalf("pause %d: the upstream saw %d writes, want %d", i+1, n, i)
				}
				choices := map[string]model.Choice{}
				for _, p := range want {
					choices[p.ID] = model.ChoiceOnce
				}
				f.decide(t, env.RunID, choices)
				if env, err = f.h.Resume(ctx, env.RunID); err != nil {
					t.Fatal(err)
				}
			}
			if env.Status != "completed" {
				t.Fatalf("after %d pauses: %+v, want completed", len(tt.rounds), env)
			}
			for item, want := range map[string]int{"x": 1, "y": 1} {
				if n := f.writesOf(t, item); n != want {
					t.Errorf("%s was written %d times, want %d", item, n, want)
				}
			}
			if n := f.callsTo(t, "echo", ""); n != tt.reads {
				t.Errorf("the upstream saw %d reads, want %d", n, tt.reads)
			}
		})
	}
}

// TestRunChoiceCoversItsToolMadeTogether: a person's run on one of the
// writes made together decides the other calls of that tool in the pause
// (made one after another, they would have run without asking), not a
// call of another tool; the run then needs only that call's decision.
func TestRunChoiceCoversItsToolMadeTogether(t *testing.T) {
	f := newHub(t, run.Limits{})
	ctx := context.Background()
	env, err := f.h.Execute(ctx, `
await Promise.all([up.record({item: "x"}), memory.createEntities({entities: [{name: "Ada", entityType: "person", observations: []}]}), up.record({item: "y"})]);
return "done";`)
	if err != nil {
		t.Fatal(err)
	}
	if env.Status != "awaiting_approval" || len(env.Pending) != 3 {
		t.Fatalf("envelope %+v, want three pending items", env)
	}
	f.decide(t, env.RunID, map[string]model.Choice{"c1": model.ChoiceRun})
	again, err := f.h.Resume(ctx, env.RunID)
	if err != nil {
		t.Fatal(err)
	}
	var waiting []string
	for _, p := range again.Pending {
		waiting = append(waiting, p.ID+" "+p.Address)
	}
	if diff := cmp.Diff([]string{"c2 memory.createEntities"}, waiting); diff != "" {
		t.Fatalf("after run on c1, pending (-want +got):\n%s", diff)
	}
	want := []run.DecisionInfo{
		{ID: "c1", Address: "up.record", Choice: model.ChoiceRun, Channel: approval.ChannelCLI},
		{ID: "c3", Address: "up.record", Choice: model.ChoiceRun, Channel: approval.ChannelCLI},
	}
	if diff := cmp.Diff(want, again.Decisions); diff != "" {
		t.Errorf("decisions (-want +got):\n%s", diff)
	}
	f.decide(t, env.RunID, map[string]model.Choice{"c2": model.ChoiceOnce})
	done, err := f.h.Resume(ctx, env.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if done.Status != "completed" {
		t.Fatalf("after every decision: %+v", done)
	}
	for item, want := range map[string]int{"x": 1, "y": 1} {
		if n := f.writesOf(t, item); n != want {
			t.Errorf("%s was written %d times, want %d", item, n, want)
		}
	}
}

// TestManyWritesTogetherAskInBatches: 25 writes made together ask at most
// run.MaxAsks at a time: the first 20 in one pause, in Seq order, and once
// they are decided the other 5 in the next; each write is made once.
func TestManyWritesTogetherAskInBatches(t *testing.T) {
	f := newHub(t, run.Limits{})
	ctx := context.Background()
	env, err := f.h.Execute(ctx, `return (await Promise.all(Array.from({length: 25}, (_, i) => up.record({item: "w" + (i + 1)})))).length;`)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range [][2]int{{1, run.MaxAsks}, {run.MaxAsks + 1, 25}} {
		var got, ids []string
		choices := map[string]model.Choice{}
		for i := want[0]; i <= want[1]; i++ {
			ids = append(ids, fmt.Sprintf("c%d", i))
		}
		for _, p := range env.Pending {
			got = append(got, p.ID)
			choices[p.ID] = model.ChoiceOnce
		}
		if diff := cmp.Diff(ids, got); env.Status != "awaiting_approval" || diff != "" {
			t.Fatalf("%s; pending (-want +got):\n%s", env.Status, diff)
		}
		f.decide(t, env.RunID, choices)
		if env, err = f.h.Resume(ctx, env.RunID); err != nil {
			t.Fatal(err)
		}
	}
	if env.Status != "completed" || string(env.Result) != "25" {
		t.Fatalf("after two rounds: %+v", env)
	}
	for i := 1; i <= 25; i++ {
		if n := f.writesOf(t, fmt.Sprintf("w%d", i)); n != 1 {
			t.Errorf("w%d was written %d times, want once", i, n)
		}
	}
}
