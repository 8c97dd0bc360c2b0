package hub

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/capabilities-sh/capabilities/store"
)

// Listing runs (hub runs, runs show, cancel) builds no sandbox: compiling
// QuickJS cost every such command 0.6 s of CPU. Execute builds it.
func TestListingRunsBuildsNoSandbox(t *testing.T) {
	st, _, err := store.Init(filepath.Join(t.TempDir(), "hub"))
	if err != nil {
		t.Fatal(err)
	}
	h := New(st, Options{})
	defer h.Close()
	eng, err := h.Runs()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := eng.List(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	if h.runs.driver.Load() != nil {
		t.Fatal("listing runs built the sandbox")
	}
	env, err := h.Execute(context.Background(), "return 1 + 1")
	if err != nil || string(env.Result) != "2" {
		t.Fatalf("execute: %+v %v", env, err)
	}
	if h.runs.driver.Load() == nil {
		t.Fatal("execute ran without building the sandbox")
	}
}
