package hub_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/policy"
	"github.com/capabilities-sh/capabilities/engine/secret"
	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/capabilities-sh/capabilities/store"
	"github.com/google/go-cmp/cmp"
)

// TestRemoveForgetsTheSource: removing a source removes its connections
// record and credentials and the policy's rules, reviews and consent for
// it, and leaves another source's untouched; the same namespace added again
// starts unreviewed.
func TestRemoveForgetsTheSource(t *testing.T) {
	st, _, err := store.Init(filepath.Join(t.TempDir(), "hub"))
	if err != nil {
		t.Fatal(err)
	}
	secrets := secret.NewMemory(nil)
	h := hub.New(st, hub.Options{Secrets: secrets})
	t.Cleanup(h.Close)
	ctx := context.Background()
	add := func(ns string) {
		t.Helper()
		p, err := h.Propose(ctx, hub.AddRequest{Command: testenv.Scripted(t), Namespace: ns, SecretEnv: "TOKEN"})
		if err != nil {
			t.Fatal(err)
		}
		if err := h.Accept(ctx, p); err != nil {
			t.Fatal(err)
		}
		r, err := h.PendingReview(ctx, ns)
		if err != nil {
			t.Fatal(err)
		}
		if err := h.AcceptReview(ctx, r, map[string]policy.Action{ns + ".changeTools": policy.Allow}, "test"); err != nil {
			t.Fatal(err)
		}
		if _, err := h.Auth(ctx, hub.AuthRequest{Namespace: ns, Value: ns + "-token-value"}); err != nil {
			t.Fatal(err)
		}
		if _, err := h.Auth(ctx, hub.AuthRequest{Namespace: ns, Connection: "work", Value: ns + "-work-value"}); err != nil {
			t.Fatal(err)
		}
		if _, err := h.SetRule(ctx, ns, policy.Allow, "work", "cli"); err != nil {
			t.Fatal(err)
		}
	}
	add("gone")
	add("kept")
	before, err := h.Policy(ctx)
	if err != nil {
		t.Fatal(err)
	}
	keptBefore := policyOf(before, "kept")

	if err := h.Remove(ctx, "gone"); err != nil {
		t.Fatal(err)
	}

	for _, k := range []store.Kind{store.Sources, store.Manifests, store.Connections} {
		if _, err := os.Stat(st.Path(k, "gone")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s/gone.json is still there after remove (%v)", k, err)
		}
	}
	for _, ref := range []string{"gone/default", "gone/work"} {
		if _, err := secrets.Get(ctx, ref); !errors.Is(err, secret.ErrNotFound) {
			t.Errorf("the credential %s is still stored after remove (%v)", ref, err)
		}
	}
	if _, err := secrets.Get(ctx, "kept/default"); err != nil {
		t.Errorf("the other source's credential went too: %v", err)
	}
	after, err := h.Policy(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := policyOf(after, "gone"); got.any() {
		t.Errorf("the policy still holds for the removed source: %+v", got)
	}
	if diff := cmp.Diff(keptBefore, policyOf(after, "kept")); diff != "" {
		t.Errorf("the other source's policy changed (-before +after):\n%s", diff)
	}
	if !keptBefore.any() {
		t.Fatal("the other source had no policy to keep: the test proves nothing")
	}

	// Added again under the same name: nothing of the old one applies.
	p, err := h.Propose(ctx, hub.AddRequest{Command: testenv.Scripted(t), Namespace: "gone"})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Accept(ctx, p); err != nil {
		t.Fatal(err)
	}
	r, err := h.PendingReview(ctx, "gone")
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Items) != 3 || len(r.Commands) != 1 {
		t.Errorf("re-added source: %d tools and %d commands to review, want 3 and 1", len(r.Items), len(r.Commands))
	}
	conns, err := h.Connections(ctx, "gone")
	if err != nil {
		t.Fatal(err)
	}
	if len(conns.Items) != 0 {
		t.Errorf("re-added source has the old connections: %+v", conns.Items)
	}
}

// nsPolicy is the part of a policy about one namespace.
type nsPolicy struct {
	Rules     []string
	Reviewed  []string
	Consented string
}

func (p nsPolicy) any() bool { return len(p.Rules)+len(p.Reviewed) > 0 || p.Consented != "" }

func policyOf(p *policy.Policy, ns string) nsPolicy {
	var out nsPolicy
	of := func(target string) bool { return target == ns || strings.HasPrefix(target, ns+".") }
	for _, r := range p.Rules {
		if of(r.Target) {
			out.Rules = append(out.Rules, r.Target+"/"+r.Connection+"="+string(r.Action))
		}
	}
	for addr := range p.Reviewed {
		if of(addr) {
			out.Reviewed = append(out.Reviewed, addr)
		}
	}
	slices.Sort(out.Reviewed)
	out.Consented = p.Consented[ns]
	return out
}
