package run

import (
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/google/go-cmp/cmp"
)

// TestEnvelopeShowsDecisions: the envelope lists every decided pending
// item with its choice and channel, in the items' order, whether the run
// still waits or has finished; undecided items stay pending only.
func TestEnvelopeShowsDecisions(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	items := []model.Pending{
		{ID: "c2", Kind: model.PendingApproval, Address: "writer.record", Decision: &model.Decision{Choice: model.ChoiceOnce, Channel: "approval-page", At: at}},
		{ID: "c3", Kind: model.PendingConnection, Address: "gh.issues", Decision: &model.Decision{Choice: model.ChoiceOnce, Channel: "auth", At: at}},
		{ID: "c5", Kind: model.PendingApproval, Address: "writer.delete"},
	}
	for _, tc := range []struct {
		status    model.RunStatus
		decisions []DecisionInfo
		pending   []string
	}{
		{model.RunRunning, nil, nil},
		{model.RunAwaitingApproval, []DecisionInfo{
			{ID: "c2", Address: "writer.record", Choice: model.ChoiceOnce, Channel: "approval-page"},
			{ID: "c3", Address: "gh.issues", Choice: model.ChoiceOnce, Channel: "auth"},
		}, []string{"c5"}},
		{model.RunCompleted, []DecisionInfo{
			{ID: "c2", Address: "writer.record", Choice: model.ChoiceOnce, Channel: "approval-page"},
			{ID: "c3", Address: "gh.issues", Choice: model.ChoiceOnce, Channel: "auth"},
		}, nil},
	} {
		t.Run(string(tc.status), func(t *testing.T) {
			r := &model.Run{ID: "r1", Status: tc.status}
			if tc.status != model.RunRunning {
				r.Pending = items
			}
			env := (&Engine{}).render(r, nil)
			if diff := cmp.Diff(tc.decisions, env.Decisions); diff != "" {
				t.Errorf("decisions (-want +got):\n%s", diff)
			}
			var pending []string
			for _, p := range env.Pending {
				pending = append(pending, p.ID)
			}
			if diff := cmp.Diff(tc.pending, pending); diff != "" {
				t.Errorf("pending (-want +got):\n%s", diff)
			}
		})
	}
}
