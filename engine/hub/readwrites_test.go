package hub_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/policy"
	"github.com/capabilities-sh/capabilities/store"
)

// TestReadYourWritesFromAnotherProcess: what another process writes to
// the store (a source added, changed or removed, a rule, a profile) is
// there for the very next execute, search and describe of a hub that has
// already read its catalog, with no pause between them and no store
// watcher running: each request starts with one stat of the store's
// generation (issue 38, item 4).
func TestReadYourWritesFromAnotherProcess(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "hub")
	st, _, err := store.Init(dir)
	if err != nil {
		t.Fatal(err)
	}
	// other is another process: its own handle on the store, its own hub.
	otherSt, err := store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	other := hub.New(otherSt, hub.Options{})
	t.Cleanup(other.Close)
	add := func(ns string, tools ...string) {
		t.Helper()
		m := hub.Manifest{Manifest: model.Manifest{Namespace: ns}, Health: "ok", CheckedAt: time.Now()}
		for _, name := range tools {
			m.Tools = append(m.Tools, model.Tool{Address: ns + "." + name, Name: name, Description: "Forecast the weather: " + name, InputSchema: []byte(`{"type":"object"}`), Contract: name})
		}
		if err := otherSt.Put(ctx, store.Sources, ns, model.Source{Namespace: ns, Kind: model.KindStdio, Command: "node", Args: []string{"server.js"}}); err != nil {
			t.Fatal(err)
		}
		if err := otherSt.Put(ctx, store.Manifests, ns, m); err != nil {
			t.Fatal(err)
		}
	}
	add("alpha", "one")

	h := hub.New(st, hub.Options{})
	t.Cleanup(h.Close)
	result := func(ctx context.Context, code string) string {
		t.Helper()
		env, err := h.Execute(ctx, code)
		if err != nil {
			t.Fatalf("execute %q: %v", code, err)
		}
		if env.Status != "completed" {
			if env.Error != nil {
				return env.Error.Message
			}
			return env.Status
		}
		return string(env.Result)
	}
	if got := result(ctx, `return typeof alpha.one`); got != `"function"` {
		t.Fatalf("the first execute: %s", got)
	}
	search := func(q string) string {
		t.Helper()
		res, err := h.Search(ctx, hub.SearchQuery{Text: q})
		if err != nil {
			t.Fatalf("search %q: %v", q, err)
		}
		return res.Text()
	}
	if got := search("weather forecast"); !strings.Contains(got, "alpha.one") {
		t.Fatalf("the first search: %s", got)
	}

	// Added.
	add("gamma", "lookup")
	if got := result(ctx, `return typeof gamma.lookup`); got != `"function"` {
		t.Errorf("an execute right after another process added gamma: %s", got)
	}
	// Changed: another tool.
	add("gamma", "lookup", "outlook")
	if got := result(ctx, `return typeof gamma.outlook`); got != `"function"` {
		t.Errorf("an execute right after gamma's tools changed: %s", got)
	}
	if got, err := h.Describe(ctx, []string{"gamma.outlook"}, 0); err != nil || !strings.Contains(got, "outlook") {
		t.Errorf("a describe right after gamma's tools changed: %s %v", got, err)
	}
	// A rule: the denied tool leaves search.
	if got := search("weather forecast outlook"); !strings.Contains(got, "gamma.outlook") {
		t.Fatalf("search before the rule: %s", got)
	}
	if _, err := other.SetRule(ctx, "gamma.outlook", policy.Deny, "", "cli"); err != nil {
		t.Fatal(err)
	}
	if got := search("weather forecast outlook"); strings.Contains(got, "gamma.outlook") {
		t.Errorf("a search right after another process denied gamma.outlook still shows it: %s", got)
	}
	// A profile: its view is read anew.
	if err := other.PutProfile(ctx, hub.Profile{Name: "narrow", Mode: hub.ModeCode, Namespaces: []string{"alpha"}}, true); err != nil {
		t.Fatal(err)
	}
	narrow := hub.WithProfile(ctx, "narrow")
	if got := result(narrow, `return typeof gamma`); got != `"undefined"` {
		t.Fatalf("profile narrow shows gamma: %s", got)
	}
	if err := other.PutProfile(ctx, hub.Profile{Name: "narrow", Mode: hub.ModeCode, Namespaces: []string{"alpha", "gamma"}}, false); err != nil {
		t.Fatal(err)
	}
	if got := result(narrow, `return typeof gamma.lookup`); got != `"function"` {
		t.Errorf("an execute right after another process widened profile narrow: %s", got)
	}
	// Removed.
	for _, k := range []store.Kind{store.Manifests, store.Sources} {
		if err := otherSt.Delete(ctx, k, "gamma"); err != nil {
			t.Fatal(err)
		}
	}
	if got := result(ctx, `return await gamma.lookup({})`); !strings.Contains(got, "gamma is not defined") {
		t.Errorf("an execute right after another process removed gamma: %s", got)
	}
	if got := result(ctx, `return typeof alpha.one`); got != `"function"` {
		t.Errorf("after the removal: %s", got)
	}
}
