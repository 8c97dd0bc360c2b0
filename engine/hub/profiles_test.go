package hub_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/policy"
	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/capabilities-sh/capabilities/store"
	"github.com/google/go-cmp/cmp"
)

// profileHub is a hub over a file store with two sources of the scripted
// upstream: reader (echo, sleep, changeTools) and writer (the same plus
// record, a write); every tool reviewed (reads allowed, writes ask). Each
// source's tools/calls are appended to the file returned for it.
func profileHub(t *testing.T) (*hub.Hub, *store.File, map[string]string) {
	t.Helper()
	dir := t.TempDir()
	st, _, err := store.Init(filepath.Join(dir, "hub"))
	if err != nil {
		t.Fatal(err)
	}
	h := hub.New(st, hub.Options{})
	t.Cleanup(h.Close)
	calls := map[string]string{}
	var reqs []hub.AddRequest
	for ns, tools := range map[string]string{"reader": "3", "writer": "4"} {
		calls[ns] = filepath.Join(dir, ns+"-calls.jsonl")
		reqs = append(reqs, hub.AddRequest{Namespace: ns, Command: testenv.Scripted(t), Env: map[string]string{"SCRIPTED_TOOLS": tools, "SCRIPTED_CALLS": calls[ns]}})
	}
	addReviewed(t, h, reqs...)
	return h, st, calls
}

// TestProfileInputIsRefusedAndNothingWritten: each bad profile is refused
// with an error naming what is wrong, and the store holds no profile
// record afterwards (default still reads as code mode over every tool).
func TestProfileInputIsRefusedAndNothingWritten(t *testing.T) {
	h, st, _ := profileHub(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		p      hub.Profile
		create bool
		want   string
		is     error
	}{
		{"upper case name", hub.Profile{Name: "Issues", Mode: hub.ModeDirect}, true, "must start with a lowercase letter", nil},
		{"slash in name", hub.Profile{Name: "a/b", Mode: hub.ModeDirect}, true, "only lowercase letters, digits and '-'", nil},
		{"empty name", hub.Profile{Name: "", Mode: hub.ModeDirect}, true, "1 to 64 characters", nil},
		{"bad mode", hub.Profile{Name: "x", Mode: "tools"}, true, `mode "tools"`, nil},
		{"unknown namespace", hub.Profile{Name: "x", Mode: hub.ModeDirect, Namespaces: []string{"nope"}}, true, `unknown namespace "nope"`, hub.ErrUnknownNamespace},
		{"unknown tool", hub.Profile{Name: "x", Mode: hub.ModeDirect, Tools: []string{"reader.nope"}}, true, `unknown tool "reader.nope"`, hub.ErrUnknownTool},
		{"unknown skill", hub.Profile{Name: "x", Mode: hub.ModeCode, Skills: []string{"nope"}}, true, `skill "nope"`, nil},
		{"add default", hub.Profile{Name: "default", Mode: hub.ModeDirect}, true, "profile exists", hub.ErrProfileExists},
		{"edit a missing profile", hub.Profile{Name: "ghost", Mode: hub.ModeDirect}, false, `unknown profile "ghost"`, hub.ErrUnknownProfile},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := h.PutProfile(ctx, tc.p, tc.create)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("PutProfile(%+v) = %v, want an error containing %q", tc.p, err, tc.want)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("the error does not wrap %v: %v", tc.is, err)
			}
			ids, err := st.List(ctx, store.Profiles)
			if err != nil {
				t.Fatal(err)
			}
			if len(ids) != 0 {
				t.Errorf("a refused profile left records: %v", ids)
			}
		})
	}
	if err := h.RemoveProfile(ctx, "default"); err == nil {
		t.Error("default was removed")
	}
	if err := h.RemoveProfile(ctx, "ghost"); !errors.Is(err, hub.ErrUnknownProfile) {
		t.Errorf("removing a missing profile: %v", err)
	}
	ps, err := h.Profiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]hub.Profile{{Name: "default", Mode: hub.ModeCode}}, ps); diff != "" {
		t.Errorf("profiles (-want +got):\n%s", diff)
	}
}

// TestProfileViewAndEdit: a direct profile shows every tool of its
// namespaces plus its listed tools, sorted; an edit changes the view; a
// second add of the name is refused.
func TestProfileViewAndEdit(t *testing.T) {
	h, _, _ := profileHub(t)
	ctx := context.Background()
	p := hub.Profile{Name: "issues", Mode: hub.ModeDirect, Namespaces: []string{"writer"}, Tools: []string{"reader.echo", "reader.echo"}}
	if err := h.PutProfile(ctx, p, true); err != nil {
		t.Fatal(err)
	}
	visible := func() []string {
		t.Helper()
		got, err := h.Profile(ctx, "issues")
		if err != nil {
			t.Fatal(err)
		}
		tools, err := h.VisibleTools(ctx, got)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, tl := range tools {
			out = append(out, tl.Address)
		}
		return out
	}
	want := []string{"reader.echo", "writer.changeTools", "writer.echo", "writer.record", "writer.sleep"}
	if diff := cmp.Diff(want, visible()); diff != "" {
		t.Errorf("visible tools (-want +got):\n%s", diff)
	}
	if err := h.PutProfile(ctx, p, true); !errors.Is(err, hub.ErrProfileExists) {
		t.Errorf("adding the profile twice: %v", err)
	}
	if err := h.PutProfile(ctx, hub.Profile{Name: "issues", Mode: hub.ModeDirect, Tools: []string{"writer.record"}}, false); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"writer.record"}, visible()); diff != "" {
		t.Errorf("visible tools after the edit (-want +got):\n%s", diff)
	}
	if err := h.RemoveProfile(ctx, "issues"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Profile(ctx, "issues"); !errors.Is(err, hub.ErrUnknownProfile) {
		t.Errorf("a removed profile reads as %v", err)
	}
}

// TestProfileRecordCarriesNoPolicy: a profile record with a field a
// profile does not have (a rule, an allow list written by hand) is refused
// when read, never taken as a grant.
func TestProfileRecordCarriesNoPolicy(t *testing.T) {
	h, st, _ := profileHub(t)
	ctx := context.Background()
	rec := json.RawMessage(`{"name":"sneaky","mode":"direct","tools":["writer.record"],"rules":[{"target":"writer.record","action":"allow"}]}`)
	if err := st.Put(ctx, store.Profiles, "sneaky", rec); err != nil {
		t.Fatal(err)
	}
	_, err := h.Profile(ctx, "sneaky")
	if err == nil || !strings.Contains(err.Error(), "carries no policy") {
		t.Fatalf("a profile record with rules reads as %v", err)
	}
}

// TestInvariantI3ProfileNeverWidensPolicy: a call through a direct-mode
// profile that shows a tool is decided by the hub's policy like any run: a
// denied tool is denied, a write that asks waits for a person (and never
// reaches the upstream), and the call is a run with a journal.
func TestInvariantI3ProfileNeverWidensPolicy(t *testing.T) {
	h, st, calls := profileHub(t)
	ctx := context.Background()
	if _, err := h.SetRule(ctx, "writer.echo", policy.Deny, "", "test"); err != nil {
		t.Fatal(err)
	}
	if err := h.PutProfile(ctx, hub.Profile{Name: "writes", Mode: hub.ModeDirect, Tools: []string{"writer.echo", "writer.record", "reader.echo"}}, true); err != nil {
		t.Fatal(err)
	}
	// The profile shows writer.echo: the policy still denies it.
	env, err := h.DirectCall(ctx, "writer.echo", json.RawMessage(`{"message":"hi"}`))
	if err != nil {
		t.Fatal(err)
	}
	if env.Status != "failed" || env.Error == nil || env.Error.Code != "policy_denied" {
		t.Errorf("a denied tool shown by a profile: %s %+v", env.Status, env.Error)
	}
	// The profile shows writer.record, a write that asks: it waits.
	env, err = h.DirectCall(ctx, "writer.record", json.RawMessage(`{"item":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	if env.Status != "awaiting_approval" || len(env.Pending) != 1 || env.Pending[0].Address != "writer.record" {
		t.Errorf("a write shown by a profile: %+v", env)
	}
	if b, err := os.ReadFile(calls["writer"]); err == nil && len(b) > 0 {
		t.Errorf("the upstream was called without a person's decision:\n%s", b)
	}
	// A read goes through, as a run with one journaled call.
	env, err = h.DirectCall(ctx, "reader.echo", json.RawMessage(`{"message":"hi"}`))
	if err != nil {
		t.Fatal(err)
	}
	if env.Status != "completed" || !strings.Contains(string(env.Result), "Echo: hi") {
		t.Errorf("a read through a profile: %s %s", env.Status, env.Result)
	}
	lines, err := st.ReadLog(ctx, store.Runs, env.RunID)
	if err != nil || len(lines) != 1 {
		t.Errorf("the direct call's run journal: %d lines, %v", len(lines), err)
	}
}
