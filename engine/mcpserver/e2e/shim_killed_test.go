package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/internal/testenv"
)

// TestShimSaysTheHubWasKilled: a real SDK client over a real `hub serve
// --stdio` relaying to a real `hub serve --http`; the hub is killed with -9
// while a write it started is under way (the upstream acted and holds its
// answer). The agent's call gets -32603 whose message says in words that
// the hub this session relayed to (its pid and address) stopped while the
// call was under way, that whether the call happened is unknown and how to
// check (`capabilities hub runs`), and what the person can do (start the
// desktop app or `hub serve --http` again, restart the agent's session).
// The session goes on with the shim's own engine. Before, the words were
// the Go error of the cut connection ("the hub at … stopped: unexpected
// EOF; this request's outcome is unknown").
func TestShimSaysTheHubWasKilled(t *testing.T) {
	t.Parallel()
	h := newHub(t)
	hold := filepath.Join(h.work, "hold")
	calls := filepath.Join(h.work, "writer-calls.jsonl")
	args := []string{"hub", "add", "--yes", "--namespace", "writer", "--env", "SCRIPTED_TOOLS=4",
		"--env", "SCRIPTED_CALLS=" + calls, "--env", "SCRIPTED_HOLD=" + hold, "--"}
	h.cli(append(args, testenv.Scripted(t)...)...)
	hub := h.serveHTTPGroup()

	c := h.shimClient()
	c.call("search", map[string]any{"query": "record an item"}).mustOK(t, "search through the hub")
	idle := h.shimClient() // a second session, idle when the hub is killed
	idle.call("search", map[string]any{"query": "record an item"}).mustOK(t, "search through the hub")

	if err := os.WriteFile(hold, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	// Registered after the hub and the client: runs before their cleanups,
	// so the held upstream answers and ends.
	t.Cleanup(func() { _ = os.Remove(hold) })
	c.send("execute", map[string]any{"code": `return await writer.record({item: "held"})`})
	deadline := time.Now().Add(testenv.Timeout(20 * time.Second))
	for lines(t, calls) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the hub did not call writer.record\n%s\n%s", c.stderr.String(), hub.stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := syscall.Kill(hub.pid, syscall.SIGKILL); err != nil {
		t.Fatalf("killing the hub (pid %d): %v", hub.pid, err)
	}
	r := c.within(testenv.Timeout(60*time.Second), "the call under way when the hub was killed")
	for _, want := range []string{
		"MCP error -32603: ",
		fmt.Sprintf("The capabilities hub this session relayed to (pid %d, %s) stopped", hub.pid, hub.url),
		"while this call was under way",
		"Whether the call happened is unknown",
		"`capabilities hub runs`",
		"start the desktop app or `capabilities hub serve --http` again",
		"restart the agent's session",
	} {
		if !strings.Contains(r.Error, want) {
			t.Errorf("the agent's error does not say %q:\n%+v", want, r)
		}
	}
	goError(t, r.Error)
	t.Logf("the call under way: %s", r.Error)
	if n := lines(t, calls); n != 1 {
		t.Errorf("writer.record was called %d times, want 1", n)
	}
	// The session goes on, on the shim's own engine.
	c.call("search", map[string]any{"query": "record an item"}).mustOK(t, "search after the hub was killed")

	// The idle session's next call finds the hub gone: not sent, so it did
	// not happen.
	r = idle.call("search", map[string]any{"query": "record an item"})
	for _, want := range []string{
		"MCP error -32603: ",
		fmt.Sprintf("The capabilities hub this session relayed to (pid %d, %s) stopped", hub.pid, hub.url),
		"nothing accepts connections at its address any more",
		"before this call",
		"was not sent to it, so nothing of it happened",
		"start the desktop app or `capabilities hub serve --http` again",
		"restart the agent's session",
	} {
		if !strings.Contains(r.Error, want) {
			t.Errorf("the idle session's error does not say %q:\n%+v", want, r)
		}
	}
	goError(t, r.Error)
	t.Logf("the next call of an idle session: %s", r.Error)
	idle.call("search", map[string]any{"query": "record an item"}).mustOK(t, "the idle session's search on its own engine")
}

// goError fails the test when msg shows a Go error's innards instead of
// saying what happened in words.
func goError(t *testing.T, msg string) {
	t.Helper()
	for _, not := range []string{"EOF", "dial tcp", "connection refused", "Post \""} {
		if strings.Contains(msg, not) {
			t.Errorf("the agent's error shows the Go error (%q) instead of saying it in words:\n%s", not, msg)
		}
	}
}
