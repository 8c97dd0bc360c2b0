package mcpserver

import (
	"bufio"
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

	"github.com/capabilities-sh/capabilities/internal/testenv"
)

// busyHub is a streamable-HTTP endpoint that answers each tools/call
// according to its code: "busy N" is answered 503 with Retry-After the
// first N times, "cut" has its connection closed without an answer the
// first time; anything else is answered.
type busyHub struct {
	mu    sync.Mutex
	tries map[string]int // code → times it arrived
}

func (b *busyHub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
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
	body, _ := io.ReadAll(r.Body)
	_ = json.Unmarshal(body, &m)
	code := m.Params.Arguments.Code
	b.mu.Lock()
	b.tries[code]++
	n := b.tries[code]
	b.mu.Unlock()
	var busy int
	_, _ = fmt.Sscanf(code, "busy %d", &busy)
	switch {
	case m.Method == "initialize":
		w.Header().Set("Mcp-Session-Id", "s1")
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(m.ID)+`,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"capabilities","version":"0"}}}`)
	case m.ID == nil:
		w.WriteHeader(http.StatusAccepted)
	case code == "cut" && n == 1:
		panic(http.ErrAbortHandler) // the connection is closed, unanswered
	case busy >= n:
		w.Header().Set("Retry-After", "0")
		http.Error(w, "the hub is busy", http.StatusServiceUnavailable)
	default:
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":"+string(m.ID)+",\"result\":{\"content\":[{\"type\":\"text\",\"text\":"+fmt.Sprintf("%q", code)+"}]}}\n\n")
	}
}

// A busy hub is never taken for a stopped one: a request answered 503 with
// Retry-After is sent again after it, until it is served, and a request
// whose connection the live hub cut is answered with an error saying the
// hub still answers, and the session stays with it. The shim never starts
// an engine of its own. (Run with -race.)
func TestShimKeepsABusyHub(t *testing.T) {
	b := &busyHub{tries: map[string]int{}}
	srv := httptest.NewServer(proveHub(func() string { return "t" }, b))
	defer srv.Close()
	s := &Shim{
		Endpoint: Endpoint{URL: srv.URL + "/mcp", PID: 4242},
		Token:    "t",
		Local: func(context.Context) (*Server, func(), error) {
			t.Error("the shim turned to its own engine")
			return nil, nil, io.ErrUnexpectedEOF
		},
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- s.Serve(context.Background(), inR, outW) }()
	lines := make(chan string, 64)
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
		case <-time.After(testenv.Timeout(20 * time.Second)):
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

	// 20 requests at once, each turned away 3 times first.
	for i := range 20 {
		call(100+i, fmt.Sprintf("busy 3 #%d", i))
	}
	for range 20 {
		if got := next("a request the hub was too busy for"); !strings.Contains(got, `"result"`) || !strings.Contains(got, "busy 3 #") {
			t.Errorf("a request answered 503 three times: %s", got)
		}
	}

	call(2, "cut")
	if got := next("a request whose connection was cut"); !strings.Contains(got, `"id":2,"error"`) || !strings.Contains(got, "was cut") || !strings.Contains(got, "the hub still answers") || !strings.Contains(got, "outcome is unknown") {
		t.Errorf("a request whose connection the live hub cut: %s", got)
	}
	call(3, "after")
	if got := next("the next request"); got != `{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"after"}]}}` {
		t.Errorf("the request after the cut: %s", got)
	}
	inW.Close()
	go func() {
		for range lines {
		}
	}()
	<-done
	b.mu.Lock()
	defer b.mu.Unlock()
	if got := b.tries["busy 3 #7"]; got != 4 {
		t.Errorf("a request turned away 3 times arrived %d times, want 4", got)
	}
}
