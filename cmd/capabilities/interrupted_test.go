package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/console"
	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/google/go-cmp/cmp"
)

// TestConsoleOffersAnInterruptedRun: a `hub approve` killed (kill -9) after
// the upstream made the approved write leaves its run recorded running; a
// real `hub console` process lists it as interrupted, with the write that
// was in flight, and resumes it on the person's word: the write asks
// (retry or skip) instead of being made again (I6). A run another live
// process is running at that moment is neither listed nor resumed; killed
// in turn, it is listed at the next poll (nothing writes its record), and
// the person cancels it.
func TestConsoleOffersAnInterruptedRun(t *testing.T) {
	h, calls, run1, run2, live := killedAndLive(t)
	c := openConsole(t, h.console())
	if diff := cmp.Diff(waiting{Interrupted: []interrupted{{run1, []string{"writer.record"}}}}, c.waiting()); diff != "" {
		t.Fatalf("the approvals poll with one run killed and one alive (-want +got):\n%s", diff)
	}
	var runs console.Runs
	c.do("GET", "/api/runs", http.StatusOK, &runs)
	statuses := map[string]string{}
	for _, r := range runs.Runs {
		statuses[r.ID] = r.Status
	}
	if diff := cmp.Diff(map[string]string{run1: "interrupted", run2: "running"}, statuses); diff != "" {
		t.Errorf("the Runs screen (-want +got):\n%s", diff)
	}
	c.do("POST", "/api/runs/"+run2+"/resume", http.StatusConflict, nil) // not from under its process

	var resumed console.RunAction
	c.do("POST", "/api/runs/"+run1+"/resume", http.StatusOK, &resumed)
	if resumed.Status != "awaiting_approval" {
		t.Errorf("the resume answered %+v; want awaiting_approval, the write in flight asking", resumed)
	}
	if diff := cmp.Diff(waiting{Approvals: []string{run1 + "/c1-in-flight in_flight [once deny]"}}, c.waiting()); diff != "" {
		t.Errorf("the approvals poll after the resume (-want +got):\n%s", diff)
	}
	h.wantLines(calls, 2)

	_ = live.Process.Kill()
	_ = live.Wait()
	if diff := cmp.Diff(waiting{
		Approvals:   []string{run1 + "/c1-in-flight in_flight [once deny]"},
		Interrupted: []interrupted{{run2, []string{"writer.record"}}},
	}, c.waiting()); diff != "" {
		t.Errorf("the approvals poll after the live run's process was killed (-want +got):\n%s", diff)
	}
	var cancelled console.RunAction
	c.do("POST", "/api/runs/"+run2+"/cancel", http.StatusOK, &cancelled)
	if cancelled.Status != "cancelled" {
		t.Errorf("the cancel answered %+v", cancelled)
	}
	c.do("POST", "/api/approvals/"+run1+"/c1-in-flight", http.StatusOK, map[string]string{"choice": "deny"})
	if diff := cmp.Diff(waiting{}, c.waiting()); diff != "" {
		t.Errorf("the approvals poll at the end (-want +got):\n%s", diff)
	}
	// Skipped, the call fails inside the code (ToolError skipped_in_flight),
	// which does not catch it.
	if _, err := h.command("hub", "exec", "--resume", run1); err == nil || !strings.Contains(err.Error(), "skipped_in_flight") {
		t.Errorf("the resume after the skip: %v; want the run failed with skipped_in_flight", err)
	}
	h.wantLines(calls, 2) // neither write was made twice
}

// killedAndLive makes a hub whose writer holds its answer after it acts,
// and two runs of a write: run1's `hub approve` was killed (SIGKILL) after
// the write was made, run2's is alive, waiting on the write's answer.
func killedAndLive(t *testing.T) (h *browserHub, calls, run1, run2 string, live *exec.Cmd) {
	t.Helper()
	work := t.TempDir()
	h = newBrowserHub(t, work)
	h.run("hub", "init")
	calls, hold := filepath.Join(work, "calls.jsonl"), filepath.Join(work, "hold")
	h.run("hub", "add", "--yes", "--namespace", "writer", "--env", "SCRIPTED_CALLS="+calls, "--env", "SCRIPTED_TOOLS=4",
		"--env", "SCRIPTED_HOLD="+hold, "--", testenv.Node(t), filepath.Join(testenv.Root(t), "testdata", "upstreams", "scripted.mjs"))
	// While hold exists the upstream makes the write, then holds its answer.
	if err := os.WriteFile(hold, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(hold) }) // the upstreams of the killed processes answer, and go

	run1 = h.exec(`return await writer.record({item: "one"})`, "awaiting_approval").RunID
	dead := h.start("hub", "approve", run1, "--choice", "once")
	waitCalls(t, calls, 1)
	_ = dead.Process.Kill() // SIGKILL
	_ = dead.Wait()
	run2 = h.exec(`return await writer.record({item: "two"})`, "awaiting_approval").RunID
	live = h.start("hub", "approve", run2, "--choice", "once") // alive, mid-call
	waitCalls(t, calls, 2)
	return h, calls, run1, run2, live
}

// TestBrowserResumesAnInterruptedRun: the person's side of the above, in
// headless Chromium: the Approvals screen offers the killed run (with the
// write that was in flight) and not the live one; Resume brings up the
// write's retry-or-skip card; once the live run's process is killed too,
// the page's poll offers it, and Cancel ends it.
func TestBrowserResumesAnInterruptedRun(t *testing.T) {
	chromium, pw := requireBrowser(t)
	h, calls, run1, run2, live := killedAndLive(t)
	p := startDriver(t, testenv.Node(t), chromium, pw)
	var opened struct{ Status int }
	p.do(map[string]any{"op": "open", "url": h.console()}, &opened)
	if opened.Status != http.StatusOK {
		t.Fatalf("opening the link: %d", opened.Status)
	}
	if got := p.text(".interrupted-run", run1); !strings.Contains(got, "writer.record") {
		t.Errorf("the interrupted run's entry says %q; want the write that was in flight", got)
	}
	if dir := os.Getenv("CAPABILITIES_ARTIFACTS"); dir != "" {
		p.screenshots(dir, "interrupted", "#interrupted")
	}
	if n := p.count(".interrupted-run button[data-run=" + run2 + "]"); n != 0 {
		t.Errorf("the run a live process is running is offered (%d buttons)", n)
	}
	p.do(map[string]any{"op": "click", "selector": ".run-resume[data-run=" + run1 + "]"}, nil)
	d := p.dialog(run1, "")
	if d.Address != "writer.record" || !slices.Equal(d.Choices, []string{"once", "deny"}) {
		t.Fatalf("after Resume the dialog shows %+v; want writer.record with retry (once) or skip (deny)", d)
	}
	if got := p.choose("deny"); got.Status != http.StatusOK || got.Body.Choice != "deny" {
		t.Fatalf("skipping the write in flight: %+v", got)
	}
	_ = live.Process.Kill()
	_ = live.Wait()
	p.text(".interrupted-run", run2) // the next poll offers it
	p.do(map[string]any{"op": "click", "selector": ".run-cancel[data-run=" + run2 + "]"}, nil)
	if got := p.text("#status", "Cancelled"); !strings.Contains(got, run2) {
		t.Errorf("after Cancel the page says %q", got)
	}
	if out := h.run("hub", "runs", "--status", "cancelled"); !strings.Contains(out, run2) {
		t.Errorf("hub runs --status cancelled:\n%s", out)
	}
	h.wantLines(calls, 2)
	if errs := p.errors(); len(errs) > 0 {
		t.Errorf("the page's errors: %v", errs)
	}
}

// start starts capabilities with args in the background; the test kills it
// if it is still running at the end.
func (h *browserHub) start(args ...string) *exec.Cmd {
	h.t.Helper()
	cmd := exec.Command(h.bin, args...)
	cmd.Dir, cmd.Env = h.work, h.env
	if err := cmd.Start(); err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd
}

// waitCalls waits until the upstream acted on n calls; the bound only ends
// a failing test.
func waitCalls(t *testing.T, file string, n int) {
	t.Helper()
	deadline := time.Now().Add(testenv.Timeout(30 * time.Second))
	for {
		b, _ := os.ReadFile(file)
		if bytes.Count(b, []byte("\n")) >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the upstream acted on %q, still waiting for %d calls", b, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// consoleClient is a person's page on a running `hub console`: its session
// cookie and CSRF token.
type consoleClient struct {
	t    *testing.T
	c    *http.Client
	base string
	csrf string
}

func openConsole(t *testing.T, link string) *consoleClient {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	u, err := url.Parse(link)
	if err != nil {
		t.Fatal(err)
	}
	c := &consoleClient{t: t, c: &http.Client{Jar: jar, Timeout: testenv.Timeout(30 * time.Second)}, base: "http://" + u.Host}
	res, err := c.c.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	var s console.Session
	c.do("GET", "/api/session", http.StatusOK, &s)
	c.csrf = s.CSRF
	return c
}

// do sends a request (a POST with body, when body is not a pointer to
// fill) and checks its status; out, a pointer, receives the answer.
func (c *consoleClient) do(method, path string, status int, out any) {
	c.t.Helper()
	var body io.Reader
	if method == "POST" {
		b := []byte("{}")
		if m, ok := out.(map[string]string); ok {
			b, _ = json.Marshal(m)
			out = nil
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, c.base+path, body)
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-CSRF-Token", c.csrf)
	res, err := c.c.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != status {
		c.t.Fatalf("%s %s: %s %s; want %d", method, path, res.Status, b, status)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			c.t.Fatalf("%s %s: %v\n%s", method, path, err, b)
		}
	}
}

type interrupted struct {
	Run      string
	InFlight []string
}

// waiting is GET /api/approvals in short: each call as run/id kind
// [choices], each interrupted run with its calls in flight.
type waiting struct {
	Approvals   []string
	Interrupted []interrupted
}

func (c *consoleClient) waiting() waiting {
	c.t.Helper()
	var a console.Approvals
	c.do("GET", "/api/approvals", http.StatusOK, &a)
	var w waiting
	for _, p := range a.Approvals {
		w.Approvals = append(w.Approvals, fmt.Sprintf("%s/%s %s %v", p.Run, p.ID, p.Kind, p.Choices))
	}
	for _, r := range a.Interrupted {
		w.Interrupted = append(w.Interrupted, interrupted{r.Run, r.InFlight})
	}
	return w
}
