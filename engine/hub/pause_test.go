package hub

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/policy"
	"github.com/capabilities-sh/capabilities/store"
	"github.com/google/go-cmp/cmp"
)

// TestPause: while the hub is paused (hub/paused, mode 600) every call that
// would run asks, with the reason paused — a reviewed read-only tool, and a
// tool allowed by a rule; an ask still asks (saying it is paused and why it
// would ask anyway); a deny stays a deny. Resuming restores every verdict.
func TestPause(t *testing.T) {
	ctx := context.Background()
	st, _, err := store.Init(filepath.Join(t.TempDir(), "hub"))
	if err != nil {
		t.Fatal(err)
	}
	h := New(st, Options{})
	t.Cleanup(h.Close)
	yes := true
	read := &model.Tool{Address: "reader.echo", Contract: "c1", Annotations: &model.Annotations{ReadOnlyHint: &yes}}
	allowed := &model.Tool{Address: "writer.note", Contract: "c2"}
	write := &model.Tool{Address: "writer.record", Contract: "c3"}
	denied := &model.Tool{Address: "writer.drop", Contract: "c4"}
	if err := h.updatePolicy(ctx, func(p *policy.Policy) error {
		for _, tl := range []*model.Tool{read, allowed, write, denied} {
			p.Review(tl)
		}
		p.Set(policy.Rule{Target: allowed.Address, Action: policy.Allow})
		p.Set(policy.Rule{Target: denied.Address, Action: policy.Deny})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	type got struct{ Action, Reason string }
	verdicts := func() map[string]got {
		m := map[string]got{}
		for _, tl := range []*model.Tool{read, allowed, write, denied} {
			v, err := h.Verdict(ctx, tl, "")
			if err != nil {
				t.Fatal(err)
			}
			m[tl.Address] = got{string(v.Action), v.Reason}
		}
		return m
	}
	running := map[string]got{
		"reader.echo":   {"allow", policy.ReasonReadOnly},
		"writer.note":   {"allow", policy.ReasonRule},
		"writer.record": {"ask", policy.ReasonMayWrite},
		"writer.drop":   {"deny", policy.ReasonDenyRule},
	}
	paused := map[string]got{
		"reader.echo":   {"ask", policy.ReasonPaused},
		"writer.note":   {"ask", policy.ReasonPaused},
		"writer.record": {"ask", policy.ReasonPaused},
		"writer.drop":   {"deny", policy.ReasonDenyRule},
	}
	steps := []struct {
		name  string
		pause bool
		want  map[string]got
	}{
		{"not paused", false, running},
		{"paused", true, paused},
		{"paused again (no-op)", true, paused},
		{"resumed", false, running},
		{"resumed again (no-op)", false, running},
	}
	for _, s := range steps {
		if err := h.SetPaused(s.pause); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if h.Paused() != s.pause {
			t.Fatalf("%s: Paused() = %v", s.name, h.Paused())
		}
		if diff := cmp.Diff(s.want, verdicts()); diff != "" {
			t.Errorf("%s: verdicts (-want +got):\n%s", s.name, diff)
		}
		if s.pause {
			fi, err := os.Stat(filepath.Join(st.Dir(), PausedFile))
			if err != nil {
				t.Fatalf("%s: the flag file: %v", s.name, err)
			}
			if fi.Mode().Perm() != 0o600 {
				t.Errorf("%s: the flag file has mode %v, want 600", s.name, fi.Mode().Perm())
			}
			v, _ := h.Verdict(ctx, write, "")
			if want := PausedMessage + "; writer.record may change data (it is not annotated read-only)"; v.Message != want {
				t.Errorf("%s: the message of an ask is %q, want %q", s.name, v.Message, want)
			}
		}
	}
}
