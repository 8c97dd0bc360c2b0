package hub_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/policy"
	"github.com/capabilities-sh/capabilities/engine/secret"
	"github.com/capabilities-sh/capabilities/store"
	"github.com/google/go-cmp/cmp"
)

// TestRemovedToolsAreForgottenOnlyWhenGone: a reviewed tool its source no
// longer lists is listed as removed, with the description that was
// reviewed; forgetting it drops its review and its rule (if it comes back
// it is new and asks), and an address still listed is left alone.
func TestRemovedToolsAreForgottenOnlyWhenGone(t *testing.T) {
	st, _, err := store.Init(filepath.Join(t.TempDir(), "hub"))
	if err != nil {
		t.Fatal(err)
	}
	h := hub.New(st, hub.Options{Secrets: secret.NewMemory(nil)})
	defer h.Close()
	ctx := context.Background()
	put := func(tools ...model.UpstreamTool) {
		t.Helper()
		m := hub.Manifest{Manifest: model.Manifest{Namespace: "src", FetchedAt: time.Now(), Tools: model.NewTools("src", tools)}, Health: "ok"}
		if err := st.Put(ctx, store.Manifests, "src", m); err != nil {
			t.Fatal(err)
		}
		h.Invalidate()
	}
	if err := st.Put(ctx, store.Sources, "src", model.Source{Namespace: "src", Kind: model.KindHTTP, URL: "http://127.0.0.1:9/mcp"}); err != nil {
		t.Fatal(err)
	}
	keep := model.UpstreamTool{Name: "keep", Description: "Stays."}
	gone := model.UpstreamTool{Name: "gone", Description: "Goes away. Later."}
	put(keep, gone)
	r, err := h.PendingReview(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := h.AcceptReview(ctx, r, map[string]policy.Action{"src.gone": policy.Deny}, "test"); err != nil {
		t.Fatal(err)
	}
	if got, err := h.RemovedTools(ctx); err != nil || len(got) != 0 {
		t.Fatalf("before anything went: %+v %v", got, err)
	}
	put(keep)
	got, err := h.RemovedTools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"src.gone Goes away. Later."}, removedNames(got)); diff != "" {
		t.Fatalf("removed (-want +got):\n%s", diff)
	}
	forgot, err := h.ForgetRemoved(ctx, []string{"src.gone", "src.keep"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"src.gone"}, forgot); diff != "" {
		t.Errorf("forgotten (-want +got):\n%s", diff)
	}
	p, err := h.Policy(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := p.Reviewed["src.keep"]; !ok {
		t.Error("a tool still listed was forgotten")
	}
	if _, ok := p.Reviewed["src.gone"]; ok || len(p.Rules) != 0 {
		t.Errorf("the removed tool's review or rule stayed: %v %+v", p.Reviewed, p.Rules)
	}
	if got, _ := h.RemovedTools(ctx); len(got) != 0 {
		t.Errorf("still removed after forgetting: %+v", got)
	}
	// It comes back: new, so it asks.
	put(keep, gone)
	_, tl, _, err := h.Tool(ctx, "src.gone")
	if err != nil {
		t.Fatal(err)
	}
	if v, err := h.Verdict(ctx, tl, ""); err != nil || v.Action != policy.Ask || v.Reason != policy.ReasonNew {
		t.Errorf("the tool back again: %+v %v; want ask (new)", v, err)
	}
}

func removedNames(rs []hub.RemovedTool) []string {
	out := []string{}
	for _, r := range rs {
		out = append(out, r.Address+" "+r.Description)
	}
	return out
}
