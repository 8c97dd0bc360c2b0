package console_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/capabilities-sh/capabilities/engine/console"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/google/go-cmp/cmp"
)

// TestApprovalPageShowsWritesMadeTogether: three writes made together
// wait as three calls of one run, listed in the order the code made them;
// each decision says how many still wait, and once all are decided one
// resume makes the approved ones, once each. A run on one decides the
// other calls of its tool with it.
func TestApprovalPageShowsWritesMadeTogether(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	const code = `const rs = await Promise.allSettled([up.record({item: "a"}), up.record({item: "b"}), up.record({item: "c"})]);
return rs.map(r => r.status === "fulfilled" ? "made" : r.reason.code);`
	g, link := serve(t, console.New(f.h, console.Options{}), console.GuardOptions{})
	b := newBrowser(t, g.Origin())
	b.login(link)
	type shown struct{ Run, ID, Args string }
	list := func() []shown {
		var l console.Approvals
		b.get("/api/approvals", &l)
		var out []shown
		for _, a := range l.Approvals {
			out = append(out, shown{a.Run, a.ID, string(a.Args)})
		}
		return out
	}
	decide := func(runID, call string, c model.Choice) console.Decided {
		t.Helper()
		code, data := b.do(http.MethodPost, "/api/approvals/"+runID+"/"+call, console.Decision{Choice: c})
		var d console.Decided
		if code != http.StatusOK || json.Unmarshal(data, &d) != nil {
			t.Fatalf("deciding %s: %d %s", call, code, data)
		}
		return d
	}

	runID := f.pending(t, code)
	want := []shown{{runID, "c1", `{"item":"a"}`}, {runID, "c2", `{"item":"b"}`}, {runID, "c3", `{"item":"c"}`}}
	if diff := cmp.Diff(want, list()); diff != "" {
		t.Fatalf("pending approvals (-want +got):\n%s", diff)
	}
	var waiting []int
	for _, d := range []struct {
		call   string
		choice model.Choice
	}{{"c1", model.ChoiceOnce}, {"c2", model.ChoiceDeny}, {"c3", model.ChoiceOnce}} {
		waiting = append(waiting, decide(runID, d.call, d.choice).Waiting)
	}
	if diff := cmp.Diff([]int{2, 1, 0}, waiting); diff != "" {
		t.Errorf("calls still waiting after each decision (-want +got):\n%s", diff)
	}
	env, err := f.h.Resume(ctx, runID)
	if err != nil {
		t.Fatal(err)
	}
	if env.Status != string(model.RunCompleted) || string(env.Result) != `["made","approval_denied","made"]` {
		t.Fatalf("resumed run: %s %s %+v", env.Status, env.Result, env.Error)
	}
	if n := f.upstreamCalls(t); n != 2 {
		t.Fatalf("the upstream acted %d times, want 2 (the approved writes, once each)", n)
	}

	runID = f.pending(t, code)
	if d := decide(runID, "c1", model.ChoiceRun); d.Waiting != 0 {
		t.Fatalf("after run on c1, %d calls still wait; want none (the same tool, made together)", d.Waiting)
	}
	if got := list(); len(got) != 0 {
		t.Fatalf("after run on c1 the page still lists %+v", got)
	}
	if env, err = f.h.Resume(ctx, runID); err != nil || env.Status != string(model.RunCompleted) {
		t.Fatalf("resumed run: %+v, %v", env, err)
	}
	if n := f.upstreamCalls(t); n != 5 {
		t.Fatalf("the upstream acted %d times, want 5", n)
	}
}
