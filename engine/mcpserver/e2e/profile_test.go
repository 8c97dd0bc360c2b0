package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type planOut struct {
	Instructions string
	Capabilities map[string]any
	Tools        []string
	Steps        []json.RawMessage
}

func (p planOut) tool(t *testing.T, i int) directResult {
	t.Helper()
	var r directResult
	if err := json.Unmarshal(p.Steps[i], &r); err != nil {
		t.Fatal(err)
	}
	return r
}

func plan(t *testing.T, steps ...any) string {
	t.Helper()
	b, err := json.Marshal(steps)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

type call struct {
	Tool string         `json:"tool"`
	Args map[string]any `json:"args"`
}

// TestNarrowedCodeModeProfileSDK1: the real TypeScript SDK client over
// `serve --stdio --profile reads`, a code-mode profile that shows reader
// and not writer: the instructions name what it shows, search lists only
// reader's tools, describe refuses writer.record, execute runs reader.echo
// and a call to writer fails as a missing namespace with a hint naming the
// profile (writer's upstream never called). Through the default profile
// (no --profile) the same client sees both, and the instructions are the
// fixed text.
func TestNarrowedCodeModeProfileSDK1(t *testing.T) {
	t.Parallel()
	h := newHub(t)
	_, wc := h.j2()
	h.cli("hub", "profiles", "add", "reads", "--namespace", "reader")
	steps := plan(t,
		call{"search", map[string]any{"query": "record or echo an item", "limit": 25}},
		call{"describe", map[string]any{"targets": []string{"writer.record"}}},
		call{"describe", map[string]any{"targets": []string{"reader.echo"}}},
		call{"execute", map[string]any{"code": `return await reader.echo({message: "hi"})`}},
		call{"execute", map[string]any{"code": `return await writer.record({item: "x"})`}},
	)
	var narrowed, whole planOut
	h.client(&narrowed, nil, "profile_stdio.mjs", "reads", steps)
	h.client(&whole, nil, "profile_stdio.mjs", "-", steps)

	if !strings.Contains(narrowed.Instructions, "This is profile reads: it shows namespaces reader.") {
		t.Errorf("the profile's instructions: %q", narrowed.Instructions)
	}
	if strings.Contains(whole.Instructions, "profile") {
		t.Errorf("the default profile's instructions changed: %q", whole.Instructions)
	}
	if s := narrowed.tool(t, 0); s.IsError || !strings.Contains(s.Text, "reader.echo") || strings.Contains(s.Text, "writer.") {
		t.Errorf("search through the profile:\n%s", s.Text)
	}
	if s := whole.tool(t, 0); s.IsError || !strings.Contains(s.Text, "writer.record") {
		t.Errorf("search through default:\n%s", s.Text)
	}
	if d := narrowed.tool(t, 1); !d.IsError || !strings.Contains(d.Text, `unknown target "writer.record"`) {
		t.Errorf("describe writer.record through the profile: %+v", d)
	}
	if d := whole.tool(t, 1); d.IsError || !strings.Contains(d.Text, "record") {
		t.Errorf("describe writer.record through default: %+v", d)
	}
	if d := narrowed.tool(t, 2); d.IsError || !strings.Contains(d.Text, "echo") {
		t.Errorf("describe reader.echo through the profile: %+v", d)
	}
	if e := narrowed.tool(t, 3); e.IsError || e.Structured["status"] != "completed" || e.Structured["result"] != "Echo: hi" {
		t.Errorf("execute reader.echo through the profile: %+v", e)
	}
	e := narrowed.tool(t, 4)
	errObj, _ := e.Structured["error"].(map[string]any)
	if e.Structured["status"] != "failed" || !strings.Contains(errObj["message"].(string), "writer is not defined") ||
		!strings.Contains(errObj["hint"].(string), "not of profile reads") {
		t.Errorf("execute writer.record through the profile: %+v", e)
	}
	if w := whole.tool(t, 4); w.Structured["status"] != "awaiting_approval" {
		t.Errorf("execute writer.record through default: %+v", w)
	}
	if n := lines(t, wc); n != 0 {
		t.Errorf("writer was called %d times, want 0", n)
	}
}

// TestNarrowedCodeModeProfileHTTP: serve --http's handler serves the
// narrowed code-mode profile at /mcp/reads (go-sdk's client): search lists
// reader's tools only and execute has no writer; /mcp, the default
// profile, still reaches writer (the write asks).
func TestNarrowedCodeModeProfileHTTP(t *testing.T) {
	t.Parallel()
	h := newHub(t)
	_, wc := h.j2()
	h.cli("hub", "profiles", "add", "reads", "--namespace", "reader")
	base := strings.TrimSuffix(conformanceListener(t, h), "/mcp")
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(60*time.Second))
	defer cancel()
	call := func(path, tool string, args map[string]any) string {
		t.Helper()
		c, err := mcp.NewClient(&mcp.Implementation{Name: "profile-http", Version: "1"}, nil).
			Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + path, DisableStandaloneSSE: true}, nil)
		if err != nil {
			t.Fatalf("connecting to %s: %v", path, err)
		}
		defer c.Close()
		res, err := c.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil {
			t.Fatalf("%s on %s: %v", tool, path, err)
		}
		b, _ := json.Marshal(res)
		return string(b)
	}
	if out := call("/mcp/reads", "search", map[string]any{"query": "record or echo", "limit": 25}); !strings.Contains(out, "reader.echo") || strings.Contains(out, "writer.") {
		t.Errorf("search at /mcp/reads: %s", out)
	}
	if out := call("/mcp/reads", "execute", map[string]any{"code": `return typeof writer`}); !strings.Contains(out, `\"undefined\"`) {
		t.Errorf("typeof writer at /mcp/reads: %s", out)
	}
	if out := call("/mcp", "execute", map[string]any{"code": `return await writer.record({item: "x"})`}); !strings.Contains(out, "awaiting_approval") {
		t.Errorf("writer.record at /mcp: %s", out)
	}
	if n := lines(t, wc); n != 0 {
		t.Errorf("writer was called %d times, want 0", n)
	}
}
