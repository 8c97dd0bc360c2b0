package mcpserver

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/store"
	"github.com/google/go-cmp/cmp"
)

// post sends one JSON-RPC message to the endpoint of srv over HTTP with an
// older protocol (a stateful session) and returns the status, the session
// id answered and the body.
func post(t *testing.T, url, sessionID, body string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequest("POST", url+"/mcp", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	if sessionID != "" {
		req.Header.Set("Mcp-Session-Id", sessionID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), string(b)
}

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// TestSessionIDsNameTheNode: a process given a node name hands out session
// ids that begin with it and a dot (a proxy routes by that prefix), in every
// profile's endpoint; a session another process holds, or one that never
// was, is answered 404, which tells the client to start a new session.
func TestSessionIDsNameTheNode(t *testing.T) {
	h := hub.New(store.NewMem(), hub.Options{})
	t.Cleanup(func() { h.Close() })
	mk := func(node string) *httptest.Server {
		s := New(h, Options{Node: node})
		t.Cleanup(s.Close)
		ts := httptest.NewServer(s.HTTPHandler(testToken))
		t.Cleanup(ts.Close)
		return ts
	}
	a, b := mk("web-1_a"), mk("b")

	code, sid, body := post(t, a.URL, "", initializeBody)
	if code != 200 || NodeOf(sid) != "web-1_a" || len(sid) < len("web-1_a.")+20 {
		t.Fatalf("initialize on node web-1_a: HTTP %d, session id %q (want web-1_a.<random>)\n%s", code, sid, body)
	}
	ping := `{"jsonrpc":"2.0","id":2,"method":"ping"}`
	if code, _, body := post(t, a.URL, sid, ping); code != 200 {
		t.Errorf("a ping in the session on its own node: HTTP %d\n%s", code, body)
	}
	if code, _, body := post(t, b.URL, sid, ping); code != http.StatusNotFound || !strings.Contains(body, "session not found") {
		t.Errorf("a ping in node web-1_a's session on node b: HTTP %d %q, want 404 session not found", code, body)
	}
	if code, _, body := post(t, a.URL, "web-1_a.NEVERGIVEN", ping); code != http.StatusNotFound {
		t.Errorf("a session id that was never given: HTTP %d %q, want 404", code, body)
	}
	// A new session on b after the 404 is b's.
	if code, sid2, body := post(t, b.URL, "", initializeBody); code != 200 || NodeOf(sid2) != "b" || sid2 == sid {
		t.Errorf("initialize on node b: HTTP %d, session id %q\n%s", code, sid2, body)
	}

	// Without a node, ids are go-sdk's and name nothing.
	code, sid, _ = post(t, mk("").URL, "", initializeBody)
	if code != 200 || sid == "" || NodeOf(sid) != "" {
		t.Errorf("initialize without a node: HTTP %d, session id %q (want one without a dot)", code, sid)
	}
}

func TestDefaultNode(t *testing.T) {
	for _, tc := range []struct {
		host string
		port int
		want string
	}{
		{"web-1", 4790, "web-1-4790"},
		{"Web-1.Example.COM", 4790, "web-1-4790"},
		{"ip-10-0-0-7.ec2.internal", 8080, "ip-10-0-0-7-8080"},
		{"my host+x", 1, "my-host-x-1"},
		{"", 4790, "hub-4790"},
		{"---", 4790, "hub-4790"},
		{strings.Repeat("a", 80), 65535, strings.Repeat("a", 57) + "-65535"},
	} {
		got := DefaultNode(tc.host, tc.port)
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("DefaultNode(%q, %d) (-want +got):\n%s", tc.host, tc.port, diff)
		}
		if err := ValidNode(got); err != nil {
			t.Errorf("DefaultNode(%q, %d) = %q is not valid: %v", tc.host, tc.port, got, err)
		}
	}
}

func TestValidNode(t *testing.T) {
	for _, tc := range []struct {
		node, err string
	}{
		{"a", ""},
		{"web-1_b", ""},
		{"A9", ""},
		{"", "use 1 to 63 characters"},
		{strings.Repeat("x", 64), "use 1 to 63 characters"},
		{"a.b", `character '.' at 2`},
		{"-a", `character '-' at 1`},
		{"é", `character 'é' at 1`},
		{"a b", `character ' ' at 2`},
	} {
		err := ValidNode(tc.node)
		if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("ValidNode(%q) = %v, want %q", tc.node, err, tc.err)
		}
	}
}
