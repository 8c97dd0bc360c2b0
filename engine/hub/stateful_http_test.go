package hub_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/secret"
	"github.com/capabilities-sh/capabilities/engine/source"
	"github.com/capabilities-sh/capabilities/store"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// greeterServer is a go-sdk v1.8 streamable-HTTP server with one tool. In
// its default, stateful mode (nil options) it answers server/discover with
// the older versions only and refuses any other request of protocol
// 2026-07-28 (CodeUnsupportedProtocolVersion, HTTP 400); stateless, it
// speaks 2026-07-28. refusals counts its answers of HTTP 400.
func greeterServer(t *testing.T, opts *mcp.StreamableHTTPOptions, refusals *atomic.Int64) (url string, restart func()) {
	t.Helper()
	var current atomic.Pointer[mcp.StreamableHTTPHandler]
	restart = func() { current.Store(greeterHandler(opts)) }
	restart()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w}
		current.Load().ServeHTTP(sw, r)
		if sw.status == http.StatusBadRequest {
			refusals.Add(1)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL, restart
}

// greeterHandler is a new instance of the server (with no sessions).
func greeterHandler(opts *mcp.StreamableHTTPOptions) *mcp.StreamableHTTPHandler {
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server {
		s := mcp.NewServer(&mcp.Implementation{Name: "greeter", Version: "1"}, nil)
		s.AddTool(&mcp.Tool{Name: "greet", InputSchema: map[string]any{"type": "object"}, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello"}}}, nil
			})
		return s
	}, opts)
}

// TestStatefulGoSDKServerIsCalled: a source served by a stateful go-sdk
// v1.8 HTTP server (which refuses protocol 2026-07-28 outside
// server/discover) is added with protocol 2025-11-25, its review accepted,
// and a run calls its tool: on the hub that added it and on a new hub over
// the same store (a reconnect with the protocol the manifest recorded),
// and after the server restarted (a stateful one forgot the session: the
// call after the one that found it gone connects anew), the server
// refusing nothing. A stateless one gets 2026-07-28.
func TestStatefulGoSDKServerIsCalled(t *testing.T) {
	for _, tc := range []struct {
		name     string
		opts     *mcp.StreamableHTTPOptions
		protocol string
	}{
		{"stateful", nil, source.ProtocolLegacy},
		{"stateless", &mcp.StreamableHTTPOptions{Stateless: true}, source.ProtocolLatest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var refusals atomic.Int64
			url, restart := greeterServer(t, tc.opts, &refusals)
			dir := filepath.Join(t.TempDir(), "hub")
			st, _, err := store.Init(dir)
			if err != nil {
				t.Fatal(err)
			}
			secrets := secret.NewMemory(nil)
			h := hub.New(st, hub.Options{Secrets: secrets})
			t.Cleanup(h.Close)
			ps := addReviewed(t, h, hub.AddRequest{Namespace: "greeter", URL: url})
			if got := ps[0].Manifest.Protocol; got != tc.protocol {
				t.Errorf("the manifest records protocol %q, want %q", got, tc.protocol)
			}
			run := func(h *hub.Hub, when string) {
				t.Helper()
				env, err := h.Execute(t.Context(), `return await greeter.greet({})`)
				if err != nil {
					t.Fatalf("%s: %v", when, err)
				}
				if env.Status != "completed" || !strings.Contains(string(env.Result), "hello") {
					t.Errorf("%s: run %s, result %s, error %+v; want the greeting", when, env.Status, env.Result, env.Error)
				}
			}
			run(h, "fresh")
			// The server restarts: a stateful one forgot the session. The
			// first call may find it gone (HTTP 404); the next connects anew
			// (with the protocol the manifest recorded).
			restart()
			env, err := h.Execute(t.Context(), `return await greeter.greet({})`)
			if err != nil {
				t.Fatal(err)
			}
			if env.Status != "completed" && (env.Error == nil || !strings.Contains(env.Error.Message, "session not found")) {
				t.Errorf("the first call after the restart: run %s, error %+v; want the greeting or the session gone", env.Status, env.Error)
			}
			run(h, "after the server restarted")
			h.Close()

			st2, err := store.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			h2 := hub.New(st2, hub.Options{Secrets: secrets})
			t.Cleanup(h2.Close)
			run(h2, "a new hub on the same store")
			if n := refusals.Load(); n != 0 {
				t.Errorf("the server refused %d requests (HTTP 400)", n)
			}
		})
	}
}

// statusWriter notes the status of a response.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Flush() { w.ResponseWriter.(http.Flusher).Flush() }
