package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/internal/testenv"
)

// send writes one tool call without waiting for its result (read it with
// within).
func (c *shimClient) send(name string, args map[string]any) {
	c.t.Helper()
	b, _ := json.Marshal(map[string]any{"name": name, "arguments": args})
	if _, err := c.stdin.Write(append(b, '\n')); err != nil {
		c.t.Fatal(err)
	}
}

// within is next, failing the test if no result comes within d.
func (c *shimClient) within(d time.Duration, what string) shimResult {
	c.t.Helper()
	got := make(chan shimResult, 1)
	ended := make(chan struct{})
	go func() {
		if c.sc.Scan() {
			var r shimResult
			if err := json.Unmarshal(c.sc.Bytes(), &r); err == nil {
				got <- r
				return
			}
		}
		close(ended)
	}()
	select {
	case r := <-got:
		return r
	case <-ended:
		c.t.Fatalf("%s: the client ended: %v\n%s", what, c.sc.Err(), c.stderr.String())
	case <-time.After(d):
		c.t.Fatalf("%s: no result within %v\n%s", what, d, c.stderr.String())
	}
	return shimResult{}
}

// hubPID is the pid in the running hub's announcement.
func (h *hubEnv) hubPID() int {
	h.t.Helper()
	var ep struct {
		PID int `json:"pid"`
	}
	b, err := os.ReadFile(filepath.Join(h.home, "hub", "endpoint.json"))
	if err == nil {
		err = json.Unmarshal(b, &ep)
	}
	if err != nil || ep.PID <= 0 {
		h.t.Fatalf("reading the hub's announcement: %v (%s)", err, b)
	}
	return ep.PID
}

// TestShimTellsAFrozenHubFromASlowOne: an agent's request relayed to a hub
// that is alive but frozen (SIGSTOP) mid-request is answered with an error
// naming the hub's pid and how to fix it, instead of waiting for the
// client's own timeout; a request sent while the hub stays frozen is
// answered saying it was not sent (and the hub never sees it); once the hub
// goes on (SIGCONT) it serves the next request, through the same shim (no
// engine of the shim's own starts). Requests that take several liveness
// windows on a hub that is alive are not cut: one waiting on a person's
// answer to the client's form, one waiting on a slow tool. The window is
// shortened (CAPABILITIES_HUB_LIVENESS); what is asserted is what the agent
// gets, never how long it took.
func TestShimTellsAFrozenHubFromASlowOne(t *testing.T) {
	t.Parallel()
	h := newHub(t)
	readerEv := h.addScriptedEvents("reader", false)
	h.addScriptedEvents("writer", true)
	readerCalls := filepath.Join(h.work, "reader-calls.jsonl")
	h.serveHTTP()
	pid := h.hubPID()

	live := testenv.Timeout(time.Second)
	slow := 3 * live // several probes' worth
	env := []string{"CAPABILITIES_HUB_LIVENESS=" + live.String(), "CAPABILITIES_LOG=debug"}

	// Slow but alive: a person answers the write's form after 3 windows.
	person := h.shimClient(append(env, fmt.Sprintf("SHIM_ANSWER_DELAY_MS=%d", slow.Milliseconds()))...)
	w := person.call("execute", map[string]any{"code": `return await writer.record({item: "after a while"})`}).mustOK(t, "a write the person took their time to approve")
	if w.Elicited != 1 || w.Structured == nil || w.Structured.Status != "completed" {
		t.Fatalf("the slowly approved write: asked %d times, %s", w.Elicited, w.Text)
	}
	if n := lines(t, filepath.Join(h.work, "writer-calls.jsonl")); n != 1 {
		t.Errorf("writer called %d times, want 1", n)
	}
	if !strings.Contains(person.stderr.String(), "the hub answered the liveness probe") {
		t.Errorf("the shim did not probe the hub while the person decided (the test would prove nothing):\n%s", person.stderr.String())
	}

	// Slow but alive: a tool that takes 3 windows.
	c := h.shimClient(env...)
	r := c.call("execute", map[string]any{"code": fmt.Sprintf(`return await reader.sleep({ms: %d})`, slow.Milliseconds())}).mustOK(t, "a slow tool")
	if r.Structured == nil || r.Structured.Status != "completed" || !strings.Contains(string(r.Structured.Result), "slept") {
		t.Fatalf("the slow tool: %s", r.Text)
	}
	started := starts(t, readerEv)

	// Frozen mid-request: the hub is stopped while the tool works.
	before := lines(t, readerCalls)
	c.send("execute", map[string]any{"code": fmt.Sprintf(`return await reader.sleep({ms: %d})`, (2 * live).Milliseconds())})
	deadline := time.Now().Add(testenv.Timeout(10 * time.Second))
	for lines(t, readerCalls) == before {
		if time.Now().After(deadline) {
			t.Fatalf("the hub did not call reader.sleep\n%s", c.stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatalf("stopping the hub (pid %d): %v", pid, err)
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGCONT) })
	r = c.within(testenv.Timeout(20*time.Second), "the request the frozen hub holds")
	for _, want := range []string{fmt.Sprintf("pid %d", pid), "is running but has not answered", fmt.Sprintf("kill %d", pid), "outcome is unknown", "goes to the hub again"} {
		if !strings.Contains(r.Error, want) {
			t.Errorf("the request the frozen hub holds: the error does not say %q: %+v", want, r)
		}
	}

	// Still frozen: the next request is not sent.
	c.send("execute", map[string]any{"code": `return await reader.echo({message: "while frozen"})`})
	r = c.within(testenv.Timeout(20*time.Second), "a request while the hub is frozen")
	if !strings.Contains(r.Error, "was not sent to it, so nothing of it happened") || !strings.Contains(r.Error, fmt.Sprintf("pid %d", pid)) {
		t.Errorf("a request while the hub is frozen: want an error saying it was not sent, got %+v", r)
	}

	// The hub goes on: the same session is served by it again.
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		t.Fatalf("continuing the hub (pid %d): %v", pid, err)
	}
	c.send("execute", map[string]any{"code": `return await reader.echo({message: "back"})`})
	r = c.within(testenv.Timeout(20*time.Second), "a request after the hub came back").mustOK(t, "execute after the hub came back")
	if r.Structured == nil || string(r.Structured.Result) != `"Echo: back"` {
		t.Errorf("execute after the hub came back: %s", r.Text)
	}
	if got := starts(t, readerEv); got != started {
		t.Errorf("reader started %d more times: the request after the hub came back ran on the shim's own engine, want the hub's", got-started)
	}
	b, err := os.ReadFile(readerCalls)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "while frozen") {
		t.Errorf("the request answered as not sent reached the upstream:\n%s", b)
	}
}
