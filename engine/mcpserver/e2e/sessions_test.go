package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/capabilities-sh/capabilities/engine/mcpserver"
)

// TestHTTPSessionsAreCapped: a client that opens session after session and
// never ends one (each held about 17 KB for an hour: 20,000 of them took the
// hub from 44 to 388 MB) does not grow the hub past MaxSessions: the session
// used least recently is closed (its client gets 404 and, as the protocol
// says, opens another), and one used lately keeps working.
func TestHTTPSessionsAreCapped(t *testing.T) {
	t.Parallel()
	h := newHub(t)
	url, token := h.serveHTTP()
	legacy := func(sid, body string) (status int, newSID string) {
		t.Helper()
		req, _ := http.NewRequest("POST", url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+token)
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
			req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("Mcp-Session-Id")
	}
	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"many","version":"1"}}}`
	const list = `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	var ids atomic.Int64
	ids.Store(100)
	open := func() string {
		t.Helper()
		st, sid := legacy("", initialize)
		if st != 200 || sid == "" {
			t.Fatalf("initialize: HTTP %d, session %q", st, sid)
		}
		if st, _ := legacy(sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); st != 202 {
			t.Fatalf("notifications/initialized: HTTP %d", st)
		}
		return sid
	}
	oldest, kept := open(), open()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range mcpserver.MaxSessions / 8 {
				if st, sid := legacy("", initialize); st != 200 || sid == "" {
					t.Errorf("initialize: HTTP %d", st)
					return
				}
				if st, _ := legacy(kept, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/list"}`, ids.Add(1))); st != 200 {
					t.Errorf("tools/list in a session used all along: HTTP %d", st)
					return
				}
			}
		})
	}
	wg.Wait()
	if st, _ := legacy(oldest, list); st != http.StatusNotFound {
		t.Errorf("the session used least recently, after %d more: HTTP %d, want 404 (closed)", mcpserver.MaxSessions, st)
	}
	if st, _ := legacy(kept, list); st != 200 {
		t.Errorf("a session used lately: HTTP %d, want 200", st)
	}
}
