package hub_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/policy"
	"github.com/capabilities-sh/capabilities/engine/typegen"
	"github.com/google/go-cmp/cmp"
)

// searchAddrs is every address a search lists, in order.
func searchAddrs(t *testing.T, ctx context.Context, h *hub.Hub, q hub.SearchQuery) []string {
	t.Helper()
	res, err := h.Search(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, hit := range res.Hits {
		out = append(out, hit.Address)
	}
	return out
}

// TestNarrowedCodeModeProfile: through a code-mode profile that shows one
// namespace, search lists only its tools, describe knows only them, and
// execute's code has only that namespace: a call to another namespace of
// the hub fails as a missing global (not a policy decision) with a hint
// naming the profile, and never reaches that upstream. hub.search inside
// the code sees the same view. Without the profile (the CLI) and through
// default, the hub is whole.
func TestNarrowedCodeModeProfile(t *testing.T) {
	h, _, calls := profileHub(t)
	ctx := context.Background()
	if err := h.PutProfile(ctx, hub.Profile{Name: "reads", Mode: hub.ModeCode, Namespaces: []string{"reader"}}, true); err != nil {
		t.Fatal(err)
	}
	pctx := hub.WithProfile(ctx, "reads")

	q := hub.SearchQuery{Text: "echo a message", Limit: 25}
	for _, a := range searchAddrs(t, pctx, h, q) {
		if !strings.HasPrefix(a, "reader.") {
			t.Errorf("search through the profile lists %s", a)
		}
	}
	for _, c := range []context.Context{ctx, hub.WithProfile(ctx, hub.DefaultProfile)} {
		got := searchAddrs(t, c, h, q)
		if !slicesHasPrefix(got, "writer.") || !slicesHasPrefix(got, "reader.") {
			t.Errorf("search without a narrowed profile lists %v, want both namespaces", got)
		}
	}
	if _, err := h.Search(pctx, hub.SearchQuery{Namespace: "writer"}); err == nil {
		t.Error("a search scoped to a namespace outside the profile succeeded")
	}

	if _, err := h.Describe(pctx, []string{"writer.record"}, 0); !errors.Is(err, typegen.ErrUnknownTarget) {
		t.Errorf("describe of a tool outside the profile: %v", err)
	}
	if out, err := h.Describe(pctx, []string{"reader.echo"}, 0); err != nil || !strings.Contains(out, "echo") {
		t.Errorf("describe of a tool in the profile: %q, %v", out, err)
	}
	if _, err := h.Describe(ctx, []string{"writer.record"}, 0); err != nil {
		t.Errorf("describe without a profile: %v", err)
	}

	env, err := h.Execute(pctx, `return [typeof reader, typeof writer, await hub.search("record an item")]`)
	if err != nil {
		t.Fatal(err)
	}
	if env.Status != "completed" || !strings.HasPrefix(string(env.Result), `["object","undefined",`) || strings.Contains(string(env.Result), "writer.") {
		t.Errorf("the profile's globals and hub.search: %s %s %+v", env.Status, env.Result, env.Error)
	}
	env, err = h.Execute(pctx, `return await writer.record({item: "x"})`)
	if err != nil {
		t.Fatal(err)
	}
	if env.Status != "failed" || env.Error == nil || env.Error.Code == "policy_denied" ||
		!strings.Contains(env.Error.Message, "writer is not defined") || !strings.Contains(env.Error.Hint, "not of profile reads") {
		t.Errorf("a call outside the profile: %s %+v", env.Status, env.Error)
	}
	if b, err := os.ReadFile(calls["writer"]); err == nil && len(b) > 0 {
		t.Errorf("a tool outside the profile reached its upstream:\n%s", b)
	}
	env, err = h.Execute(pctx, `return await reader.echo({message: "hi"})`)
	if err != nil {
		t.Fatal(err)
	}
	if env.Status != "completed" || !strings.Contains(string(env.Result), "Echo: hi") {
		t.Errorf("a call in the profile: %s %s %+v", env.Status, env.Result, env.Error)
	}
	// The same code without the profile reaches writer (it asks: a write).
	env, err = h.Execute(ctx, `return await writer.record({item: "x"})`)
	if err != nil {
		t.Fatal(err)
	}
	if env.Status != "awaiting_approval" {
		t.Errorf("writer.record without a profile: %s %+v", env.Status, env.Error)
	}

	// An edit is seen by the next request.
	if err := h.PutProfile(ctx, hub.Profile{Name: "reads", Mode: hub.ModeCode, Tools: []string{"writer.echo"}}, false); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"writer.echo"}, searchAddrs(t, pctx, h, q)); diff != "" {
		t.Errorf("search after the edit (-want +got):\n%s", diff)
	}
	if err := h.RemoveProfile(ctx, "reads"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Search(pctx, q); !errors.Is(err, hub.ErrUnknownProfile) {
		t.Errorf("search through a removed profile: %v", err)
	}
}

func slicesHasPrefix(s []string, prefix string) bool {
	for _, a := range s {
		if strings.HasPrefix(a, prefix) {
			return true
		}
	}
	return false
}

// TestInvariantI3CodeModeProfileNeverWidensPolicy: a code-mode profile
// that lists a tool the policy denies leaves it denied (policy_denied, and
// search hides it as it does for the whole hub); one that lists a write
// that asks still asks, and the upstream is not called.
func TestInvariantI3CodeModeProfileNeverWidensPolicy(t *testing.T) {
	h, _, calls := profileHub(t)
	ctx := context.Background()
	if _, err := h.SetRule(ctx, "writer.echo", policy.Deny, "", "test"); err != nil {
		t.Fatal(err)
	}
	if err := h.PutProfile(ctx, hub.Profile{Name: "writes", Mode: hub.ModeCode, Tools: []string{"writer.echo", "writer.record"}}, true); err != nil {
		t.Fatal(err)
	}
	pctx := hub.WithProfile(ctx, "writes")
	env, err := h.Execute(pctx, `try { await writer.echo({message: "hi"}); return "called" } catch (e) { return e.code }`)
	if err != nil {
		t.Fatal(err)
	}
	if env.Status != "completed" || string(env.Result) != `"policy_denied"` {
		t.Errorf("a denied tool the profile lists: %s %s %+v", env.Status, env.Result, env.Error)
	}
	if got := searchAddrs(t, pctx, h, hub.SearchQuery{Text: "echo", Limit: 25}); slicesHasPrefix(got, "writer.echo") {
		t.Errorf("search through the profile lists a denied tool: %v", got)
	}
	env, err = h.Execute(pctx, `return await writer.record({item: "x"})`)
	if err != nil {
		t.Fatal(err)
	}
	if env.Status != "awaiting_approval" || len(env.Pending) != 1 || env.Pending[0].Address != "writer.record" {
		t.Errorf("a write that asks, listed by the profile: %+v", env)
	}
	if b, err := os.ReadFile(calls["writer"]); err == nil && len(b) > 0 {
		t.Errorf("the upstream was called without a person's decision:\n%s", b)
	}
}

// TestProfileSkills: a profile that lists skills shows only those to
// search and describe; one that lists none shows every skill; a skill the
// hub does not have is refused with the hub's skills named.
func TestProfileSkills(t *testing.T) {
	h, st, _ := profileHub(t)
	ctx := context.Background()
	addSkill(t, h, "release-notes", "Write release notes from merged pull requests.", map[string]string{})
	addSkill(t, h, "pdf-forms", "Fill PDF forms for release paperwork.", map[string]string{})
	err := h.PutProfile(ctx, hub.Profile{Name: "docs", Mode: hub.ModeCode, Skills: []string{"nope"}}, true)
	if err == nil || !strings.Contains(err.Error(), `skill "nope"`) || !strings.Contains(err.Error(), "pdf-forms, release-notes") {
		t.Errorf("a profile naming a missing skill: %v", err)
	}
	if ids, _ := st.List(ctx, "profiles"); len(ids) != 0 {
		t.Errorf("a refused profile was written: %v", ids)
	}
	if err := h.PutProfile(ctx, hub.Profile{Name: "docs", Mode: hub.ModeCode, Namespaces: []string{"reader"}, Skills: []string{"release-notes"}}, true); err != nil {
		t.Fatal(err)
	}
	skills := func(c context.Context) []string {
		t.Helper()
		res, err := h.Search(c, hub.SearchQuery{Text: "release"})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, s := range res.Skills {
			out = append(out, s.Name)
		}
		return out
	}
	pctx := hub.WithProfile(ctx, "docs")
	if diff := cmp.Diff([]string{"release-notes"}, skills(pctx)); diff != "" {
		t.Errorf("skills through the profile (-want +got):\n%s", diff)
	}
	if got := skills(ctx); len(got) != 2 {
		t.Errorf("skills without a profile: %v, want both", got)
	}
	if _, err := h.Describe(pctx, []string{"skill:pdf-forms"}, 0); err == nil || !strings.Contains(err.Error(), "the skills are skill:release-notes") {
		t.Errorf("describe of a skill outside the profile: %v", err)
	}
	if out, err := h.Describe(pctx, []string{"skill:release-notes"}, 0); err != nil || !strings.Contains(out, "Steps for release-notes") {
		t.Errorf("describe of the profile's skill: %v", err)
	}
}
