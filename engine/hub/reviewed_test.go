package hub_test

import (
	"context"
	"testing"

	"github.com/capabilities-sh/capabilities/engine/hub"
)

// addReviewed adds each source as `hub add --yes` does (propose, accept),
// then accepts the review of every tool (reads allowed, writes ask), and
// returns the proposals in order.
func addReviewed(t testing.TB, h *hub.Hub, reqs ...hub.AddRequest) []*hub.Proposal {
	t.Helper()
	ctx := context.Background()
	var out []*hub.Proposal
	for _, req := range reqs {
		p, err := h.Propose(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if err := h.Accept(ctx, p); err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	r, err := h.PendingReview(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := h.AcceptReview(ctx, r, nil, "test"); err != nil {
		t.Fatal(err)
	}
	return out
}
