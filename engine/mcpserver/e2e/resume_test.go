package e2e

import (
	"bufio"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/internal/testenv"
)

// repl is testdata/clients/sdk1_repl.mjs: a real SDK 1.x client connected to
// one `hub serve --stdio`, taking tool calls one at a time, so a test can act
// as the person (in a terminal) between the model's calls.
type repl struct {
	t    *testing.T
	call func(name string, args map[string]any) toolResult
}

func (h *hubEnv) repl(t *testing.T, extraEnv ...string) *repl {
	t.Helper()
	return h.replServing(t, nil, extraEnv...)
}

// replServing is repl with serveArgs added to `hub serve --stdio`'s.
func (h *hubEnv) replServing(t *testing.T, serveArgs []string, extraEnv ...string) *repl {
	t.Helper()
	cmd := exec.Command(testenv.Node(t), append([]string{filepath.Join(clientsDir(t), "sdk1_repl.mjs")}, serveArgs...)...)
	cmd.Env = append(h.env(), extraEnv...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		_ = cmd.Wait()
	})
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	next := func() toolResult {
		t.Helper()
		if !sc.Scan() {
			t.Fatalf("the client ended: %v\n%s", sc.Err(), stderr.String())
		}
		var r toolResult
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("%v: %s", err, sc.Text())
		}
		r.raw = append([]byte(nil), sc.Bytes()...)
		return r
	}
	next() // ready
	return &repl{t: t, call: func(name string, args map[string]any) toolResult {
		t.Helper()
		b, _ := json.Marshal(map[string]any{"name": name, "arguments": args})
		if _, err := stdin.Write(append(b, '\n')); err != nil {
			t.Fatal(err)
		}
		return next()
	}}
}

// TestResumeAfterTheRunFinished: the model is told "tell the person, then
// continue with {resume}". The person's `hub approve` (or `hub cancel`)
// finishes the run in another process; the model's execute({resume}) then
// gets the run's final envelope — the same status, result, calls and text,
// as often as it asks — and nothing runs again.
func TestResumeAfterTheRunFinished(t *testing.T) {
	t.Parallel()
	h := newHub(t)
	rc, wc := h.j2()
	c := h.repl(t)
	j2 := `const r = await reader.echo({message: "from the reader"});
const again = await reader.echo({message: "twice"});
const w = await writer.record({item: r});
return w;`

	for _, tc := range []struct {
		name    string
		person  []string // the person's command in a terminal; the run id is appended
		status  string
		result  string // the envelope's result, or
		errCode string // its error's code
		isError bool
		text    string
	}{
		{"approved", []string{"hub", "approve", "--choice", "once"}, "completed", `"recorded Echo: from the reader"`, "", false, `completed (3 calls): "recorded Echo: from the reader"`},
		{"denied", []string{"hub", "approve", "--choice", "deny"}, "failed", "", "tool_error", true, "failed: tool_error: uncaught ToolError from writer.record (approval_denied)"},
		{"cancelled", []string{"hub", "cancel"}, "cancelled", "", "cancelled", false, "cancelled: cancelled: a person cancelled the run"},
	} {
		first := c.call("execute", map[string]any{"code": j2})
		e := first.Structured
		if e == nil || e.Status != "awaiting_approval" {
			t.Fatalf("%s: the write did not ask: %+v", tc.name, first)
		}
		h.cliErr(append(tc.person, e.RunID)...) // a denied run exits 1; the envelope below says how it ended
		reads, writes := lines(t, rc), lines(t, wc)

		var texts []string
		for i := range 2 {
			r := c.call("execute", map[string]any{"resume": e.RunID})
			got := r.Structured
			if got == nil {
				t.Fatalf("%s: resume #%d after the run finished: no envelope, isError %v: %s", tc.name, i+1, r.IsError, r.Text)
			}
			if got.RunID != e.RunID || got.Status != tc.status || r.IsError != tc.isError || len(got.Pending) != 0 {
				t.Errorf("%s: resume #%d = %+v (isError %v), want run %s %s", tc.name, i+1, got, r.IsError, e.RunID, tc.status)
			}
			if tc.result != "" && string(got.Result) != tc.result {
				t.Errorf("%s: resume #%d result %s, want %s", tc.name, i+1, got.Result, tc.result)
			}
			if tc.errCode != "" && (got.Error == nil || got.Error.Code != tc.errCode) {
				t.Errorf("%s: resume #%d error %+v, want code %s", tc.name, i+1, got.Error, tc.errCode)
			}
			if !strings.HasPrefix(r.Text, tc.text) {
				t.Errorf("%s: resume #%d text %q, want it to start with %q", tc.name, i+1, r.Text, tc.text)
			}
			texts = append(texts, r.Text)
		}
		if texts[0] != texts[1] {
			t.Errorf("%s: two resumes differ:\n%s\n%s", tc.name, texts[0], texts[1])
		}
		if n, m := lines(t, rc)-reads, lines(t, wc)-writes; n != 0 || m != 0 {
			t.Errorf("%s: the resumes called reader %d and writer %d more times, want none", tc.name, n, m)
		}
	}
	if n, m := lines(t, rc), lines(t, wc); n != 6 || m != 1 {
		t.Errorf("upstream calls: reader %d (want 6: two per run), writer %d (want 1: the approved run's); a resume repeated a call", n, m)
	}
}

// TestResumeAfterTheRunExpired: nobody decided in time; the first resume
// says expired, and so does every later one.
func TestResumeAfterTheRunExpired(t *testing.T) {
	t.Parallel()
	h := newHub(t)
	_, wc := h.j2()
	c := h.repl(t, "CAPABILITIES_APPROVAL_TTL=1s")
	first := c.call("execute", map[string]any{"code": `return await writer.record({item: "late"})`})
	if first.Structured == nil || first.Structured.Status != "awaiting_approval" {
		t.Fatalf("the write did not ask: %+v", first)
	}
	time.Sleep(1500 * time.Millisecond) // past the approval's 1 s
	for i := range 2 {
		r := c.call("execute", map[string]any{"resume": first.Structured.RunID})
		if r.Structured == nil || r.Structured.Status != "expired" || r.Structured.Error == nil || r.Structured.Error.Code != "expired" {
			t.Errorf("resume #%d of an expired run: %+v", i+1, r)
		}
	}
	if n := lines(t, wc); n != 0 {
		t.Errorf("writer called %d times; nobody approved", n)
	}
}
