package sandbox

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/capabilities-sh/capabilities/engine/model"
)

// A namespace named like a global the runtime already has is skipped by the
// prelude (the global wins), so the code could not reach it, and the host's
// one-call path (code.OneCall) would call a tool the sandbox would not. So
// every global a namespace could be named like is one a new source is
// refused (NewNamespace), and one ShadowsGlobal names if an older hub's may have it.
func TestNoNamespaceIsNamedLikeAGlobal(t *testing.T) {
	out, _ := run(t, `return Object.getOwnPropertyNames(globalThis)`)
	if out.Status != StatusCompleted {
		t.Fatalf("listing the globals: %+v", out.Error)
	}
	var names []string
	if err := json.Unmarshal(out.Result, &names); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(names, "console") {
		t.Fatalf("the globals list lacks console: %v", names)
	}
	for _, n := range names {
		if _, ours := testNamespaces[n]; ours {
			continue // this test's own namespaces
		}
		if model.NewNamespace(n) == nil || model.ValidNamespace(n) == nil && !model.ShadowsGlobal(n) {
			t.Errorf("global %q may be taken as a namespace: add it to model's reservedNamespaces (or ShadowsGlobal)", n)
		}
	}
}
