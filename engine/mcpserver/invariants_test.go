package mcpserver

import (
	"context"
	"encoding/json"
	"sort"
	"strings"
	"testing"

	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/store"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestInvariantI8ModelCannotChangeConfiguration: the model's whole reach is
// three tools, none of which adds sources, changes connections, edits
// policy or records a decision; inside execute, `hub` offers only search
// and describe.
func TestInvariantI8ModelCannotChangeConfiguration(t *testing.T) {
	h := hub.New(store.NewMem(), hub.Options{})
	defer h.Close()
	s := New(h, Options{})
	ctx := context.Background()
	cs := connectInMemory(t, s)
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range list.Tools {
		names = append(names, tl.Name)
	}
	sort.Strings(names)
	if strings.Join(names, ",") != "describe,execute,search" {
		t.Fatalf("tools = %v, want exactly search, describe, execute", names)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "execute", Arguments: map[string]any{
		"code": `return {hub: Object.getOwnPropertyNames(hub).sort(), globals: ["approval", "policy", "store", "secrets", "process", "require", "fetch"].filter(n => typeof globalThis[n] !== "undefined")}`,
	}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(res.StructuredContent)
	var env struct {
		Status string
		Result struct {
			Hub     []string
			Globals []string
		}
	}
	if err := json.Unmarshal(b, &env); err != nil || env.Status != "completed" {
		t.Fatalf("execute: %s %v", b, err)
	}
	// hub.read reads a large result kept for a run (a handle): it changes nothing.
	if strings.Join(env.Result.Hub, ",") != "describe,read,search" || len(env.Result.Globals) != 0 {
		t.Errorf("inside execute: hub has %v, configuration globals %v; want only describe, read and search, and none", env.Result.Hub, env.Result.Globals)
	}
	// Unknown arguments are refused, not ignored: no hidden way in.
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "execute", Arguments: map[string]any{"code": "return 1", "policy": "allow"}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError {
		t.Error("execute accepted an unknown argument")
	}
}
