package mcpserver

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/store"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestUnavailableAnswersEveryCall: while Options.Unavailable returns an
// error (the desktop app's hub folder was deleted), every tool call is
// answered with that error as a tool error, before the hub is asked (the
// hub here would answer `return 1` with 1); listing the tools still works,
// and calls go through again once it returns nil.
func TestUnavailableAnswersEveryCall(t *testing.T) {
	h := hub.New(store.NewMem(), hub.Options{})
	defer h.Close()
	var gone atomic.Bool
	gone.Store(true)
	unavailable := func() error {
		if gone.Load() {
			return errors.New("the hub at /x/hub was deleted")
		}
		return nil
	}
	ctx := context.Background()
	cs := connectInMemory(t, New(h, Options{Unavailable: unavailable}))
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatalf("listing the tools while unavailable: %v", err)
	}
	for _, call := range []*mcp.CallToolParams{
		{Name: "execute", Arguments: map[string]any{"code": "return 1"}},
		{Name: "search", Arguments: map[string]any{"query": "x"}},
	} {
		res, err := cs.CallTool(ctx, call)
		if err != nil {
			t.Fatalf("%s: %v", call.Name, err)
		}
		if got := textOf(res); !res.IsError || got != "the hub at /x/hub was deleted" {
			t.Errorf("%s while unavailable: isError %v, %q; want the unavailable error", call.Name, res.IsError, got)
		}
	}
	gone.Store(false)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "execute", Arguments: map[string]any{"code": "return 1"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError || strings.Contains(textOf(res), "deleted") {
		t.Errorf("execute once available again: isError %v, %q", res.IsError, textOf(res))
	}
}

func textOf(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}
