package hub_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/capabilities-sh/capabilities/engine/egress"
	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/secret"
	"github.com/capabilities-sh/capabilities/engine/source"
	"github.com/capabilities-sh/capabilities/store"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func egressHub(t *testing.T, g *egress.Guard) *hub.Hub {
	t.Helper()
	st, _, err := store.Init(filepath.Join(t.TempDir(), "hub"))
	if err != nil {
		t.Fatal(err)
	}
	h := hub.New(st, hub.Options{Secrets: secret.NewMemory(nil), Source: source.Options{Egress: g}})
	t.Cleanup(h.Close)
	return h
}

// TestEgressGuardRefusesALoopbackSource: with an egress guard (a hosted
// hub), adding a remote MCP server or an OpenAPI document on this
// machine's loopback is refused with what was refused, why, and the flag
// that allows it, and the server gets no request; an operator's
// --allow-egress range lets it through; without a guard (a local hub) it
// is added as today.
func TestEgressGuardRefusesALoopbackSource(t *testing.T) {
	var hits atomic.Int64
	mcpHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server {
		s := mcp.NewServer(&mcp.Implementation{Name: "loopy", Version: "1"}, nil)
		s.AddTool(&mcp.Tool{Name: "ping", InputSchema: map[string]any{"type": "object"}, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{}, nil
			})
		return s
	}, nil)
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcpHandler)
	mux.HandleFunc("/openapi.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"openapi":"3.0.3","info":{"title":"Loopy","version":"1"},"servers":[{"url":"http://%s/api"}],
			"paths":{"/ping":{"get":{"operationId":"ping","responses":{"200":{"description":"ok"}}}}}}`, r.Host)
	})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	addr := srv.Listener.Addr().String()
	ctx := t.Context()

	for _, req := range []hub.AddRequest{{URL: srv.URL + "/mcp"}, {Document: srv.URL + "/openapi.json"}} {
		what := req.URL + req.Document
		// A hosted hub: refused, nothing sent.
		_, err := egressHub(t, egress.New()).Propose(ctx, req)
		want := fmt.Sprintf("refusing to connect to %s (loopback) for source %s: a hosted hub reaches only public addresses; an operator may allow a range with --allow-egress 127.0.0.0/8", addr, what)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s with a guard: got %v, want an error saying\n%s", what, err, want)
		}
		if n := hits.Swap(0); n != 0 {
			t.Errorf("%s with a guard: the server got %d requests", what, n)
		}
		// The operator allows the range.
		p, err := egressHub(t, egress.New(netip.MustParsePrefix("127.0.0.0/8"))).Propose(ctx, req)
		if err != nil || len(p.Manifest.Tools) != 1 {
			t.Errorf("%s allowed: got %+v, %v; want its one tool", what, p, err)
		}
		// A local hub, as today.
		p, err = egressHub(t, nil).Propose(ctx, req)
		if err != nil || len(p.Manifest.Tools) != 1 {
			t.Errorf("%s without a guard: got %+v, %v; want its one tool", what, p, err)
		}
		if hits.Swap(0) == 0 {
			t.Errorf("%s: the allowed proposals sent nothing", what)
		}
	}
}
