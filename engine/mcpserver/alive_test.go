package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/internal/testenv"
)

// The liveness probe answers the hub's own clients only, behind the checks
// of the MCP endpoint (bearer token, loopback Host and Origin), and says
// which process serves.
func TestAlivePathIsGuardedLikeTheEndpoint(t *testing.T) {
	addr := serveHTTP(t, HTTPLimits{})
	for _, tc := range []struct {
		name, method string
		hdr          map[string]string
		status       int
		want         string
	}{
		{"the hub's token", "GET", map[string]string{"Authorization": "Bearer " + testToken}, 200, fmt.Sprintf(`{"pid":%d}`, os.Getpid())},
		{"HEAD", "HEAD", map[string]string{"Authorization": "Bearer " + testToken}, 200, ""},
		{"no token", "GET", nil, 401, "missing bearer token"},
		{"a wrong token", "GET", map[string]string{"Authorization": "Bearer " + strings.Repeat("0", len(testToken))}, 401, "wrong bearer token"},
		{"a foreign Host", "GET", map[string]string{"Authorization": "Bearer " + testToken, "Host": "evil.example"}, 403, "not a loopback address"},
		{"a foreign Origin", "GET", map[string]string{"Authorization": "Bearer " + testToken, "Origin": "https://evil.example"}, 403, "not a loopback origin"},
		{"POST", "POST", map[string]string{"Authorization": "Bearer " + testToken}, 405, "answers GET"},
	} {
		req, err := http.NewRequest(tc.method, "http://"+addr+AlivePath, nil)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range tc.hdr {
			if k == "Host" {
				req.Host = v
				continue
			}
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status || !strings.Contains(string(b), tc.want) {
			t.Errorf("%s: HTTP %d %q, want %d with %q", tc.name, resp.StatusCode, b, tc.status, tc.want)
		}
	}
}

// gateHub is a streamable-HTTP endpoint that can be frozen: while gate is
// set, every request it gets (the liveness probe too) waits until the gate
// is closed, as a stopped process's connections do. tools/call answers after
// hold.
type gateHub struct {
	mu    sync.Mutex
	gate  chan struct{}
	hold  time.Duration
	calls []string // the code of each tools/call it started to serve
}

func (g *gateHub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	gate, hold := g.gate, g.hold
	g.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-r.Context().Done():
			return
		}
	}
	if r.URL.Path == AlivePath {
		_, _ = io.WriteString(w, `{"pid":1}`)
		return
	}
	var m struct {
		shimMsg
		Params struct {
			Arguments struct{ Code string } `json:"arguments"`
		} `json:"params"`
	}
	b, _ := io.ReadAll(r.Body)
	_ = json.Unmarshal(b, &m)
	switch {
	case m.Method == "initialize":
		w.Header().Set("Mcp-Session-Id", "s1")
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(m.ID)+`,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"capabilities","version":"0"}}}`)
	case m.ID == nil:
		w.WriteHeader(http.StatusAccepted)
	default:
		g.mu.Lock()
		g.calls = append(g.calls, m.Params.Arguments.Code)
		g.mu.Unlock()
		select {
		case <-time.After(hold):
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":"+string(m.ID)+",\"result\":{\"content\":[]}}\n\n")
	}
}

// The shim's side of the liveness probe, in one process (run with -race;
// TestShimTellsAFrozenHubFromASlowOne in e2e stops a real hub): a call
// held for several windows by a hub that answers the probe is answered; a
// call the frozen hub holds is answered with an error, and so is a call
// sent while it stays frozen, unsent; a notification meanwhile does not
// hold the session up; the thawed hub serves the next call, and the shim
// never turns to an engine of its own.
func TestShimGivesUpOnAFrozenHub(t *testing.T) {
	live := testenv.Timeout(100 * time.Millisecond)
	g := &gateHub{hold: 4 * live}
	srv := httptest.NewServer(proveHub(func() string { return "t" }, g))
	defer srv.Close()
	s := &Shim{
		Endpoint: Endpoint{URL: srv.URL + "/mcp", PID: 4242},
		Token:    "t",
		Liveness: live,
		Local: func(context.Context) (*Server, func(), error) {
			t.Error("the shim turned to its own engine")
			return nil, nil, io.ErrUnexpectedEOF
		},
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- s.Serve(context.Background(), inR, outW) }()
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	next := func(what string) string {
		t.Helper()
		select {
		case l := <-lines:
			return l
		case <-time.After(testenv.Timeout(10 * time.Second)):
			t.Fatalf("%s: no answer from the shim", what)
			return ""
		}
	}
	send := func(line string) { _, _ = io.WriteString(inW, line+"\n") }
	call := func(id int, code string) {
		send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"execute","arguments":{"code":%q}}}`, id, code))
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	next("initialize")
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	call(2, "slow")
	if got := next("a slow call"); got != `{"jsonrpc":"2.0","id":2,"result":{"content":[]}}` {
		t.Errorf("a call the live hub held for 4 windows: %s", got)
	}

	g.mu.Lock()
	g.gate, g.hold = make(chan struct{}), 0
	g.mu.Unlock()
	call(3, "held")
	if got := next("a call the frozen hub holds"); !strings.Contains(got, `"id":3,"error"`) || !strings.Contains(got, "(pid 4242) is running but has not answered") || !strings.Contains(got, "outcome is unknown") {
		t.Errorf("a call the frozen hub holds: %s", got)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}`)
	call(4, "unsent")
	if got := next("a call while frozen"); !strings.Contains(got, `"id":4,"error"`) || !strings.Contains(got, "was not sent to it, so nothing of it happened") {
		t.Errorf("a call while the hub stays frozen: %s", got)
	}

	g.mu.Lock()
	close(g.gate)
	g.gate = nil
	g.mu.Unlock()
	call(5, "thawed")
	if got := next("a call after the thaw"); got != `{"jsonrpc":"2.0","id":5,"result":{"content":[]}}` {
		t.Errorf("a call after the hub came back: %s", got)
	}
	inW.Close()
	go func() {
		for range lines {
		}
	}()
	<-done
	g.mu.Lock()
	defer g.mu.Unlock()
	if slices.Contains(g.calls, "unsent") {
		t.Errorf("the call answered as not sent reached the hub: %q", g.calls)
	}
	if !slices.Contains(g.calls, "thawed") {
		t.Errorf("the thawed hub did not serve the next call: %q", g.calls)
	}
}
