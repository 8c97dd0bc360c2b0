package mcpserver

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/capabilities-sh/capabilities/store"
)

// BenchmarkHTTPRequest is the hub's side of one HTTP request, in process
// and without a network: the handler `serve --http` mounts, given a request
// as the go-sdk client (protocol 2026-07-28, stateless) or the TypeScript
// SDK 1.x (a session) sends it, answered into a recorder. ns/op and
// allocs/op are the hub's fixed cost of a request on a hub holding the 19
// corpus sources (none of them called: execute runs `return 1`):
//
//	go test ./engine/mcpserver -run '^$' -bench HTTPRequest -benchmem -count 6
func BenchmarkHTTPRequest(b *testing.B) {
	h, target := corpusHub(b)
	s := New(h, Options{})
	b.Cleanup(s.Close)
	handler := s.HTTPHandler(testToken)
	sid := benchSession(b, handler)
	const meta = `"_meta":{"io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":true}},"io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"},"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`
	for _, tc := range []struct{ name, method, tool, params string }{
		{"execute", "tools/call", "execute", `"name":"execute","arguments":{"code":"return 1"}`},
		{"search", "tools/call", "search", `"name":"search","arguments":{"query":"create an issue"}`},
		{"describe", "tools/call", "describe", `"name":"describe","arguments":{"targets":["` + target + `"]}`},
		{"ping", "ping", "", ``},
	} {
		if tc.method == "ping" {
			// 2026-07-28 has no ping (go-sdk answers it 404).
			b.Run("session/ping", func(b *testing.B) {
				benchPost(b, handler, http.Header{"Mcp-Protocol-Version": {"2025-11-25"}, "Mcp-Session-Id": {sid}}, `{"jsonrpc":"2.0","id":2,"method":"ping"}`)
			})
			continue
		}
		b.Run("modern/"+tc.name, func(b *testing.B) {
			params := meta
			if tc.params != "" {
				params += "," + tc.params
			}
			body := `{"jsonrpc":"2.0","id":2,"method":"` + tc.method + `","params":{` + params + `}}`
			hdr := http.Header{
				"Mcp-Protocol-Version": {"2026-07-28"},
				"Mcp-Method":           {tc.method},
			}
			if tc.tool != "" {
				hdr.Set("Mcp-Name", tc.tool)
			}
			benchPost(b, handler, hdr, body)
		})
		b.Run("session/"+tc.name, func(b *testing.B) {
			body := `{"jsonrpc":"2.0","id":2,"method":"` + tc.method + `"`
			if tc.params != "" {
				body += `,"params":{` + tc.params + `}`
			}
			body += "}"
			benchPost(b, handler, http.Header{"Mcp-Protocol-Version": {"2025-11-25"}, "Mcp-Session-Id": {sid}}, body)
		})
	}
}

// corpusHub is a hub on a memory store holding the 19 corpus sources (their
// servers never started), and the address of one of their tools.
func corpusHub(tb testing.TB) (*hub.Hub, string) {
	tb.Helper()
	st := store.NewMem()
	ctx := context.Background()
	ms := testenv.CorpusManifests(tb)
	for _, m := range ms {
		src := model.Source{Namespace: m.Namespace, Kind: model.KindStdio, Command: "node", Args: []string{"server.js"}}
		if err := st.Put(ctx, store.Sources, m.Namespace, src); err != nil {
			tb.Fatal(err)
		}
		if err := st.Put(ctx, store.Manifests, m.Namespace, hub.Manifest{Manifest: m, Health: "ok", CheckedAt: time.Now()}); err != nil {
			tb.Fatal(err)
		}
	}
	h := hub.New(st, hub.Options{})
	tb.Cleanup(func() { h.Close() })
	return h, ms[0].Tools[0].Address
}

// benchSession opens a 2025-11-25 session as the TypeScript SDK does and
// returns its id.
func benchSession(b *testing.B, handler http.Handler) string {
	b.Helper()
	rec := serveOne(handler, http.Header{}, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`)
	sid := rec.Header().Get("Mcp-Session-Id")
	if rec.Code != http.StatusOK || sid == "" {
		b.Fatalf("initialize: HTTP %d, session %q: %s", rec.Code, sid, rec.Body)
	}
	rec = serveOne(handler, http.Header{"Mcp-Session-Id": {sid}, "Mcp-Protocol-Version": {"2025-11-25"}}, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if rec.Code != http.StatusAccepted {
		b.Fatalf("initialized: HTTP %d: %s", rec.Code, rec.Body)
	}
	return sid
}

func benchPost(b *testing.B, handler http.Handler, hdr http.Header, body string) {
	rec := serveOne(handler, hdr, body)
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"result"`) || strings.Contains(rec.Body.String(), `"isError":true`) {
		b.Fatalf("HTTP %d: %s", rec.Code, rec.Body)
	}
	b.ReportAllocs()
	for b.Loop() {
		serveOne(handler, hdr, body)
	}
}

// serveOne serves one POST to /mcp with the headers a client sends.
func serveOne(handler http.Handler, hdr http.Header, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequestWithContext(context.Background(), http.MethodPost, "http://127.0.0.1:4790/mcp", io.NopCloser(bytes.NewReader([]byte(body))))
	req.ContentLength = int64(len(body))
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		req.Header[k] = v
	}
	rec := httptest.NewRecorder()
	handler.ServeHTTP(rec, req)
	return rec
}
