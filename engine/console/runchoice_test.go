package console_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/capabilities-sh/capabilities/engine/console"
	"github.com/capabilities-sh/capabilities/engine/model"
)

// A "run" choice lets the tool through for the rest of its run: the run's
// later calls of that tool show the person's decision, not "policy".
func TestRunChoiceAllowsTheRunsLaterCalls(t *testing.T) {
	f := newFixture(t)
	runID := f.pending(t, `for (const i of [1, 2, 3]) await up.record({item: "x" + i}); return "done"`)
	g, link := serve(t, console.New(f.h, console.Options{}), console.GuardOptions{})
	b := newBrowser(t, g.Origin())
	b.login(link)
	if code, data := b.do(http.MethodPost, "/api/approvals/"+runID+"/c1", console.Decision{Choice: model.ChoiceRun}); code != http.StatusOK {
		t.Fatalf("deciding: %d %s", code, data)
	}
	env, err := f.h.Resume(context.Background(), runID)
	if err != nil || env.Status != string(model.RunCompleted) {
		t.Fatalf("resume: %+v %v", env, err)
	}
	var d console.RunDetail
	b.get("/api/runs/"+runID, &d)
	if len(d.Calls) != 3 {
		t.Fatalf("the run shows %d calls, want 3: %+v", len(d.Calls), d.Calls)
	}
	for _, c := range d.Calls {
		if c.Decision == nil || c.Decision.Choice != model.ChoiceRun {
			t.Errorf("call %d (%s): decision %+v, want the person's run choice", c.Seq, c.Address, c.Decision)
		}
	}
}
