package source_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/source"
	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// greeter is a go-sdk server with one tool whose list may change.
func greeter() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "greeter", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "greet", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello"}}}, nil
		})
	return s
}

// refusing wraps h: a POST that refuse picks (by its JSON-RPC method) gets
// HTTP 400 with, when asJSON, the JSON-RPC error a stateful go-sdk v1.8
// server answers a 2026-07-28 request with (CodeUnsupportedProtocolVersion
// listing the versions it speaks), else a plain-text body. It notes the
// requests refused and those other than server/discover sent with
// 2026-07-28.
func refusing(h http.Handler, asJSON bool, refuse func(method, version string) bool, refused, modern *[]string, mu *sync.Mutex) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			h.ServeHTTP(w, r)
			return
		}
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		_ = json.Unmarshal(body, &req)
		version := r.Header.Get("Mcp-Protocol-Version")
		if version >= "2026-07-28" && req.Method != "server/discover" && req.Method != "" {
			mu.Lock()
			*modern = append(*modern, req.Method)
			mu.Unlock()
		}
		if !refuse(req.Method, version) {
			h.ServeHTTP(w, r)
			return
		}
		mu.Lock()
		*refused = append(*refused, req.Method)
		mu.Unlock()
		if !asJSON {
			http.Error(w, fmt.Sprintf("Bad Request: protocol version %q is only supported on stateless HTTP servers", version), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":%d,"message":"protocol version %q is not supported by this server","data":{"supported":["2025-11-25","2025-06-18"],"requested":%q}}}`,
			req.ID, mcp.CodeUnsupportedProtocolVersion, version, version)
	})
}

// TestServerRefusingTheLatestProtocolGetsTheOlder: servers that refuse
// protocol 2026-07-28 — a stateful go-sdk v1.8 server (which answers
// server/discover with the older versions only), servers that refuse
// server/discover itself (HTTP 400 with the JSON-RPC error, or plain
// text) — are spoken to with 2025-11-25 at once (the discover timeout is
// longer than the connect timeout: waiting for it would fail), their tool
// is called, and a reconnect with the protocol they got works too. A
// stateless server gets 2026-07-28. The fallback is go-sdk's own
// (Client.Connect tries initialize 2025-11-25 on any error of
// server/discover); this test keeps the hub relying on it.
func TestServerRefusingTheLatestProtocolGetsTheOlder(t *testing.T) {
	never := func(string, string) bool { return false }
	discover := func(method, _ string) bool { return method == "server/discover" }
	stateful := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return greeter() }, nil)
	stateless := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return greeter() }, &mcp.StreamableHTTPOptions{Stateless: true})
	for _, tc := range []struct {
		name    string
		handler http.Handler
		asJSON  bool
		refuse  func(method, version string) bool
		want    string
		refused bool
	}{
		{name: "stateful go-sdk", handler: stateful, refuse: never, want: source.ProtocolLegacy},
		{name: "refuses server/discover (JSON-RPC)", handler: stateful, asJSON: true, refuse: discover, want: source.ProtocolLegacy, refused: true},
		{name: "refuses server/discover (plain text)", handler: stateful, refuse: discover, want: source.ProtocolLegacy, refused: true},
		{name: "stateless go-sdk", handler: stateless, refuse: never, want: source.ProtocolLatest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var refused, modern []string
			srv := httptest.NewServer(refusing(tc.handler, tc.asJSON, tc.refuse, &refused, &modern, &mu))
			t.Cleanup(srv.Close)
			src := model.Source{Namespace: "greeter", Kind: model.KindHTTP, URL: srv.URL}
			protocol := ""
			for _, when := range []string{"first", "reconnect"} {
				// An hour to answer server/discover, more than the whole
				// connection gets: only the refusal can end the 2026-07-28
				// attempt in time.
				s, err := source.Connect(t.Context(), src, source.Options{
					Protocol: protocol, DiscoverTimeout: time.Hour, ConnectTimeout: testenv.Timeout(30 * time.Second),
					OnToolsChanged: func(string) {},
				})
				if err != nil {
					t.Fatalf("%s connection: %v", when, err)
				}
				if got := s.Protocol(); got != tc.want {
					t.Errorf("%s connection: protocol %q, want %q", when, got, tc.want)
				}
				res, err := s.CallTool(t.Context(), "greet", json.RawMessage(`{}`))
				if err != nil {
					t.Errorf("%s connection: calling greet: %v", when, err)
				} else if b, _ := json.Marshal(res); !strings.Contains(string(b), "hello") {
					t.Errorf("%s connection: greet answered %s, want hello", when, b)
				}
				protocol = s.Protocol()
				s.Close()
			}
			mu.Lock()
			defer mu.Unlock()
			if tc.refused && len(refused) == 0 {
				t.Errorf("the server refused nothing; the test does not test the refusal")
			}
			if tc.want == source.ProtocolLegacy && len(modern) > 0 {
				t.Errorf("the hub sent %v with protocol 2026-07-28 to a server that does not speak it", modern)
			}
			if tc.want == source.ProtocolLatest && len(modern) == 0 {
				t.Errorf("the hub sent nothing but server/discover with protocol 2026-07-28")
			}
		})
	}
}
