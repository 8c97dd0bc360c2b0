package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/internal/testenv"
)

// shimResult is one line of testdata/clients/shim_repl.mjs.
type shimResult struct {
	Text       string    `json:"text"`
	Structured *envelope `json:"structured"`
	IsError    bool      `json:"isError"`
	Error      string    `json:"error"`
	Elicited   int       `json:"elicited"`
}

// shimClient is shim_repl.mjs: a real SDK 1.x client connected to one
// `hub serve --stdio`, taking tool calls one at a time.
type shimClient struct {
	t      testing.TB
	stdin  interface{ Write([]byte) (int, error) }
	sc     *bufio.Scanner
	stderr *strings.Builder
}

func (h *hubEnv) shimClient(extraEnv ...string) *shimClient {
	t := h.t
	t.Helper()
	cmd := exec.Command(testenv.Node(t), filepath.Join(clientsDir(t), "shim_repl.mjs"))
	cmd.Env = append(h.env(), extraEnv...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c := &shimClient{t: t, stdin: stdin, stderr: &strings.Builder{}}
	cmd.Stderr = &lockedBuilder{b: c.stderr}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		_ = cmd.Wait()
	})
	c.sc = bufio.NewScanner(stdout)
	c.sc.Buffer(make([]byte, 1<<20), 1<<24)
	c.next() // ready
	return c
}

type lockedBuilder struct {
	mu sync.Mutex
	b  *strings.Builder
}

func (l *lockedBuilder) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (c *shimClient) next() shimResult {
	c.t.Helper()
	if !c.sc.Scan() {
		c.t.Fatalf("the client ended: %v\n%s", c.sc.Err(), c.stderr.String())
	}
	var r shimResult
	if err := json.Unmarshal(c.sc.Bytes(), &r); err != nil {
		c.t.Fatalf("%v: %s", err, c.sc.Text())
	}
	return r
}

func (c *shimClient) call(name string, args map[string]any) shimResult {
	c.t.Helper()
	b, _ := json.Marshal(map[string]any{"name": name, "arguments": args})
	if _, err := c.stdin.Write(append(b, '\n')); err != nil {
		c.t.Fatal(err)
	}
	return c.next()
}

// mustOK fails the test unless r is a successful result.
func (r shimResult) mustOK(t testing.TB, what string) shimResult {
	t.Helper()
	if r.Error != "" || r.IsError {
		t.Fatalf("%s failed: %s%s", what, r.Error, r.Text)
	}
	return r
}

// addScriptedEvents adds scripted.mjs as ns, its events (one "start" line
// each time it starts) in the returned file.
func (h *hubEnv) addScriptedEvents(ns string, write bool) (events string) {
	h.t.Helper()
	events = filepath.Join(h.work, ns+"-events.log")
	args := []string{"hub", "add", "--yes", "--namespace", ns, "--env", "SCRIPTED_EVENTS=" + events,
		"--env", "SCRIPTED_CALLS=" + filepath.Join(h.work, ns+"-calls.jsonl")}
	if write {
		args = append(args, "--env", "SCRIPTED_TOOLS=4")
	}
	args = append(args, "--")
	args = append(args, testenv.Scripted(h.t)...)
	h.cli(args...)
	return events
}

// starts counts the times an upstream started.
func starts(t testing.TB, events string) int {
	t.Helper()
	b, err := os.ReadFile(events)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return strings.Count(string(b), "start\n")
}

// TestShimRelaysToTheLongRunningHub: while `hub serve --http` runs on the
// same CAPABILITIES_HOME, each agent's `serve --stdio` relays its session
// there: search, describe and execute answer through it, a write's form
// (elicitation, a request from the hub to the client) reaches the client and
// the hub runs the write once, a 2026-07-28 client's J2 (input requests) goes
// through as well, and these sessions start no upstream of their own (each
// source started once, by the hub). Killed with
// -9 mid-session, the hub leaves its announcement behind: the session's next
// request fails saying the hub stopped and that the next runs on this
// process's own engine, and the one after does; a new session ignores the
// stale announcement and runs its own engine from the start. With
// CAPABILITIES_NO_SHIM=1 a session runs its own engine while the hub runs.
func TestShimRelaysToTheLongRunningHub(t *testing.T) {
	t.Parallel()
	h := newHub(t)
	readerEv := h.addScriptedEvents("reader", false)
	writerEv := h.addScriptedEvents("writer", true)
	base := map[string]int{"reader": starts(t, readerEv), "writer": starts(t, writerEv)}

	h.serveHTTP()
	var ep struct {
		URL string `json:"url"`
		PID int    `json:"pid"`
	}
	b, err := os.ReadFile(filepath.Join(h.home, "hub", "endpoint.json"))
	if err != nil {
		t.Fatalf("serve --http did not announce itself: %v", err)
	}
	if err := json.Unmarshal(b, &ep); err != nil || ep.PID <= 0 || !strings.HasPrefix(ep.URL, "http://127.0.0.1:") {
		t.Fatalf("announcement %s: %v", b, err)
	}
	if fi, err := os.Stat(filepath.Join(h.home, "hub", "endpoint.json")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the announcement's mode is %v, want 600 (%v)", fi.Mode().Perm(), err)
	}

	echo := `return await reader.echo({message: "through the shim"})`
	clients := make([]*shimClient, 3)
	var wg sync.WaitGroup
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			clients[i] = h.shimClient()
		}()
	}
	wg.Wait()
	for i, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := c.call("search", map[string]any{"query": "echo a message"}).mustOK(t, "search")
			if !strings.Contains(s.Text, "reader.echo") {
				t.Errorf("session %d: search does not find reader.echo:\n%s", i, s.Text)
			}
			d := c.call("describe", map[string]any{"targets": []string{"reader.echo"}}).mustOK(t, "describe")
			if !strings.Contains(d.Text, "echo") {
				t.Errorf("session %d: describe:\n%s", i, d.Text)
			}
			e := c.call("execute", map[string]any{"code": echo}).mustOK(t, "execute")
			if e.Structured == nil || e.Structured.Status != "completed" || string(e.Structured.Result) != `"Echo: through the shim"` {
				t.Errorf("session %d: execute: %s", i, e.Text)
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}

	// A write asks through the client's form; the hub owns the run.
	j2 := clients[0].call("execute", map[string]any{"code": `return await writer.record({item: "once"})`}).mustOK(t, "J2")
	if j2.Elicited != 1 || j2.Structured == nil || j2.Structured.Status != "completed" {
		t.Fatalf("J2 through the shim: asked %d times, %s", j2.Elicited, j2.Text)
	}
	if n := lines(t, filepath.Join(h.work, "writer-calls.jsonl")); n != 1 {
		t.Errorf("writer called %d times, want 1", n)
	}
	if shown := h.cli("hub", "runs", "show", "--json", j2.Structured.RunID); !strings.Contains(shown, `"channel": "elicitation"`) {
		t.Errorf("the decision is not recorded with the elicitation channel:\n%s", shown)
	}

	// A 2026-07-28 client (@modelcontextprotocol/client 2.x): its requests
	// reach the hub's stateless handler, the input request round trip too.
	var c2 struct {
		ProtocolVersion              string
		J2                           toolResult
		Elicitations                 []elicitation
		TransportErrors, NotProtocol []string
	}
	h.client(&c2, nil, "client2_stdio.mjs", "once")
	if c2.ProtocolVersion != "2026-07-28" || len(c2.TransportErrors)+len(c2.NotProtocol) > 0 {
		t.Errorf("2026-07-28 through the shim: negotiated %q, transport errors %q, lines %q", c2.ProtocolVersion, c2.TransportErrors, c2.NotProtocol)
	}
	if e := c2.J2.Structured; e == nil || e.Status != "completed" || len(c2.Elicitations) != 1 {
		t.Errorf("J2 over 2026-07-28 through the shim (asked %d times): %s", len(c2.Elicitations), c2.J2.Text)
	}
	if n := lines(t, filepath.Join(h.work, "writer-calls.jsonl")); n != 2 {
		t.Errorf("writer called %d times, want 2", n)
	}
	for ns, ev := range map[string]string{"reader": readerEv, "writer": writerEv} {
		if got := starts(t, ev) - base[ns]; got != 1 {
			t.Errorf("%s started %d times for 5 sessions and the long-running hub, want once (the hub's)", ns, got)
		}
	}

	// --no-shim's variable: that session runs its own engine.
	own := h.shimClient("CAPABILITIES_NO_SHIM=1")
	own.call("execute", map[string]any{"code": echo}).mustOK(t, "execute with CAPABILITIES_NO_SHIM=1")
	if got := starts(t, readerEv) - base["reader"]; got != 2 {
		t.Errorf("with CAPABILITIES_NO_SHIM=1, reader started %d times in all, want 2 (the hub's, then the session's own)", got)
	}

	// The hub dies mid-session.
	if err := syscall.Kill(ep.PID, syscall.SIGKILL); err != nil {
		t.Fatalf("killing the hub (pid %d): %v", ep.PID, err)
	}
	c := clients[1]
	r := c.call("execute", map[string]any{"code": echo})
	if r.Error == "" || !strings.Contains(r.Error, "stopped") || !strings.Contains(r.Error, ep.URL) || !strings.Contains(r.Error, "own engine") {
		t.Fatalf("the request after the hub died: want an error naming the stopped hub and the fallback, got %+v", r)
	}
	r = c.call("execute", map[string]any{"code": echo}).mustOK(t, "execute on the shim's own engine")
	if r.Structured == nil || string(r.Structured.Result) != `"Echo: through the shim"` {
		t.Errorf("execute on the shim's own engine: %s", r.Text)
	}
	c.call("search", map[string]any{"query": "echo"}).mustOK(t, "search on the shim's own engine")

	// A stale announcement (its process is gone) is ignored.
	if _, err := os.Stat(filepath.Join(h.home, "hub", "endpoint.json")); err != nil {
		t.Fatalf("the killed hub's announcement should still be there: %v", err)
	}
	fresh := h.shimClient()
	fresh.call("execute", map[string]any{"code": echo}).mustOK(t, "execute with a stale announcement")
	if got := starts(t, readerEv) - base["reader"]; got != 4 {
		t.Errorf("reader started %d times, want 4 (the hub, the CAPABILITIES_NO_SHIM=1 session, then each stdio session's own engine)", got)
	}
}

// TestShimIgnoresAnAnnouncementItCannotUse: serve --stdio runs its own
// engine when the announced hub's process is gone (the address is not even
// tried) or when what answers there refuses the session (a wrong token, or
// another server on that port): the session works from its first request.
func TestShimIgnoresAnAnnouncementItCannotUse(t *testing.T) {
	t.Parallel()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		pid      int
		wantHits bool
	}{
		{"its process is gone", dead.Process.Pid, false},
		{"it refuses the session", os.Getpid(), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHub(t)
			ev := h.addScriptedEvents("reader", false)
			before := starts(t, ev)
			var hits atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				hits.Add(1)
				http.Error(w, "wrong bearer token", http.StatusUnauthorized)
			}))
			t.Cleanup(srv.Close)
			ann, _ := json.Marshal(map[string]any{"url": srv.URL + "/mcp", "pid": tc.pid, "startedAt": time.Now()})
			if err := os.WriteFile(filepath.Join(h.home, "hub", "endpoint.json"), ann, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(h.home, "hub", "http-token"), []byte(strings.Repeat("ab", 32)+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			s := h.serveStdio()
			s.initialize()
			res := s.request("tools/call", map[string]any{"name": "execute", "arguments": map[string]any{"code": `return await reader.echo({message: "own"})`}})
			if res["error"] != nil || !strings.Contains(fmt.Sprint(res["result"]), "Echo: own") {
				t.Fatalf("execute: %v", res)
			}
			if got := starts(t, ev) - before; got != 1 {
				t.Errorf("reader started %d times, want once (by this session's own engine)", got)
			}
			if got := hits.Load() > 0; got != tc.wantHits {
				t.Errorf("the announced address was tried: %v, want %v", got, tc.wantHits)
			}
		})
	}
}
