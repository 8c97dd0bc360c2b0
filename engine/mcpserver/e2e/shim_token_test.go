package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/internal/testenv"
)

// rawStdio is `hub serve --stdio` in a process group of its own, driven
// with raw JSON-RPC lines.
type rawStdio struct {
	t     testing.TB
	in    io.WriteCloser
	lines chan map[string]any
	id    int
}

func (h *hubEnv) rawStdio() *rawStdio {
	h.t.Helper()
	cmd := exec.Command(binPath, "hub", "serve", "--stdio")
	cmd.Env = h.env()
	in, err := cmd.StdinPipe()
	if err != nil {
		h.t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		h.t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	group(h.t, cmd)
	s := &rawStdio{t: h.t, in: in, lines: make(chan map[string]any, 64)}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				s.lines <- m
			}
		}
		close(s.lines)
	}()
	return s
}

func (s *rawStdio) send(v any) {
	s.t.Helper()
	b, _ := json.Marshal(v)
	if _, err := s.in.Write(append(b, '\n')); err != nil {
		s.t.Fatal(err)
	}
}

// request sends a request and returns its answer.
func (s *rawStdio) request(method string, params any) map[string]any {
	s.t.Helper()
	s.id++
	s.send(map[string]any{"jsonrpc": "2.0", "id": s.id, "method": method, "params": params})
	deadline := time.After(testenv.Timeout(60 * time.Second))
	for {
		select {
		case m, ok := <-s.lines:
			if !ok {
				s.t.Fatalf("serve --stdio ended before answering %s", method)
			}
			if m["id"] == float64(s.id) {
				return m
			}
		case <-deadline:
			s.t.Fatalf("serve --stdio did not answer %s", method)
		}
	}
}

func (s *rawStdio) initialize() {
	s.t.Helper()
	if res := s.request("initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "attacked", "version": "1"}}); res["error"] != nil {
		s.t.Fatalf("initialize: %v", res["error"])
	}
	s.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
}

func (s *rawStdio) execute(code string) map[string]any {
	s.t.Helper()
	return s.request("tools/call", map[string]any{"name": "execute", "arguments": map[string]any{"code": code}})
}

// attacker is a listener of this user that records what it is sent.
type attacker struct {
	mu  sync.Mutex
	got []string
}

func (a *attacker) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := httputil.DumpRequest(r, true)
		a.mu.Lock()
		a.got = append(a.got, string(b))
		a.mu.Unlock()
		next.ServeHTTP(w, r)
	})
}

// check fails the test if the token reached the attacker.
func (a *attacker) check(t *testing.T, token string) {
	t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	all := strings.Join(a.got, "\n")
	if strings.Contains(all, token) || strings.Contains(strings.ToLower(all), "authorization:") {
		t.Errorf("the hub's token reached the listener endpoint.json named:\n%s", all)
		return
	}
	t.Logf("the listener got %d requests, none with the token", len(a.got))
}

// pretend answers like an MCP server that takes any token.
var pretend = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"pid": 1, "proof": "0000"}`)
})

// announce writes endpoint.json as another process of this user can: its
// URL, and a pid that is alive (this test's).
func (h *hubEnv) announce(t *testing.T, u string) {
	t.Helper()
	ep, _ := json.Marshal(map[string]any{"url": u, "pid": os.Getpid(), "startedAt": time.Now()})
	if err := os.WriteFile(filepath.Join(h.home, "hub", "endpoint.json"), ep, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestShimSendsTheTokenOnlyToTheHub, as an attacker of the same user would
// try it: with the hub killed, endpoint.json rewritten to name the
// attacker's port; the hub killed mid-session and its port taken; and the
// hub alive, endpoint.json naming a relay in front of it. The next `serve
// --stdio` (or the next request of one relayed before) never sends the
// token there, and its agent is served by its own engine. Before, each got
// `Authorization: Bearer <token>`.
func TestShimSendsTheTokenOnlyToTheHub(t *testing.T) {
	t.Run("the hub killed, endpoint.json rewritten", func(t *testing.T) {
		h := newHub(t)
		h.addScripted("reader", false)
		hub := h.serveHTTPGroup()
		hub.kill()
		var a attacker
		srv := httptest.NewServer(a.wrap(pretend))
		defer srv.Close()
		h.announce(t, srv.URL+"/mcp")
		s := h.rawStdio()
		s.initialize()
		if res := s.execute(`return await reader.echo({message: "own"})`); !strings.Contains(fmt.Sprint(res["result"]), "Echo: own") {
			t.Errorf("execute: %v", res)
		}
		a.check(t, hub.token)
	})

	t.Run("the hub killed mid-session, its port taken", func(t *testing.T) {
		h := newHub(t)
		h.addScripted("reader", false)
		hub := h.serveHTTPGroup()
		s := h.rawStdio()
		s.initialize()
		if res := s.execute(`return await reader.echo({message: "relayed"})`); !strings.Contains(fmt.Sprint(res["result"]), "Echo: relayed") {
			t.Fatalf("execute through the hub: %v", res)
		}
		hub.kill()
		var a attacker
		var ln net.Listener
		deadline := time.Now().Add(testenv.Timeout(10 * time.Second))
		for {
			var err error
			if ln, err = net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(hub.port)); err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("taking the dead hub's port: %v", err)
			}
			time.Sleep(20 * time.Millisecond)
		}
		srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: a.wrap(pretend)}}
		srv.Start()
		defer srv.Close()
		// The shim may learn of the death on a new connection (refused: the
		// request was not sent) or on the one it kept alive, cut under the
		// request (its outcome unknown to it): both say the hub stopped.
		res := s.execute(`return await reader.echo({message: "after"})`)
		if e := fmt.Sprint(res["error"]); !strings.Contains(e, "stopped") || !strings.Contains(e, "was not sent to it") && !strings.Contains(e, "outcome is unknown") {
			t.Errorf("the request after the hub was killed: %v; want the hub stopped, and the request not sent or its outcome unknown", res)
		}
		if res := s.execute(`return await reader.echo({message: "own"})`); !strings.Contains(fmt.Sprint(res["result"]), "Echo: own") {
			t.Errorf("execute on the shim's own engine: %v", res)
		}
		a.check(t, hub.token)
	})

	t.Run("the hub alive, endpoint.json naming a relay to it", func(t *testing.T) {
		h := newHub(t)
		h.addScripted("reader", false)
		hub := h.serveHTTPGroup()
		hu, _ := url.Parse(hub.url)
		var a attacker
		srv := httptest.NewServer(a.wrap(httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: hu.Host})))
		defer srv.Close()
		h.announce(t, srv.URL+"/mcp")
		s := h.rawStdio()
		s.initialize()
		if res := s.execute(`return await reader.echo({message: "own"})`); !strings.Contains(fmt.Sprint(res["result"]), "Echo: own") {
			t.Errorf("execute: %v", res)
		}
		a.check(t, hub.token)
	})
}
