package e2e

import (
	"bufio"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/internal/testenv"
)

// envelope is the structured content of an execute result.
type envelope struct {
	RunID   string          `json:"runId"`
	Status  string          `json:"status"`
	Result  json.RawMessage `json:"result"`
	Error   *struct{ Code, Message string }
	Calls   []struct{ Address string }
	Pending []struct {
		ID, Kind, Address, Message string
		Args                       json.RawMessage
	}
}

type toolResult struct {
	Text       string    `json:"text"`
	Structured *envelope `json:"structured"`
	IsError    bool      `json:"isError"`
	raw        []byte    // the client's whole line (repl only)
}

type elicitation struct {
	Mode            string `json:"mode"`
	Message         string `json:"message"`
	RequestedSchema struct {
		Properties struct {
			Choice struct {
				Enum []string `json:"enum"`
			} `json:"choice"`
		} `json:"properties"`
		Required []string `json:"required"`
	} `json:"requestedSchema"`
}

var wantTools = []string{"describe", "execute", "search"}

// TestSDK1Stdio drives serve --stdio with the @modelcontextprotocol/sdk 1.x
// client that declares no elicitation: tools/list is exactly the three
// tools, search/describe/execute work against real upstreams
// (server-everything and the scripted server), a write returns
// awaiting_approval with the `hub approve` hint and no URL or token, and
// resume before a decision returns the same pending envelope and runs
// nothing.
func TestSDK1Stdio(t *testing.T) {
	t.Parallel()
	h := newHub(t)
	rc, wc := h.j2()
	h.cli(append([]string{"hub", "add", "--yes", "--"}, testenv.Everything(t)...)...)

	var out struct {
		Instructions string
		Tools        []struct {
			Name        string
			Annotations map[string]any
		}
		Search, Describe, Read, J2 toolResult
		Resume                     []toolResult
	}
	h.client(&out, nil, "sdk1_stdio.mjs", "surface")

	var names []string
	for _, tl := range out.Tools {
		names = append(names, tl.Name)
	}
	sort.Strings(names)
	if !slices.Equal(names, wantTools) {
		t.Fatalf("tools/list = %v, want exactly %v (I8: no tool changes configuration)", names, wantTools)
	}
	for _, tl := range out.Tools {
		ro, _ := tl.Annotations["readOnlyHint"].(bool)
		if ro != (tl.Name != "execute") {
			t.Errorf("%s readOnlyHint = %v", tl.Name, ro)
		}
	}
	if !strings.Contains(out.Instructions, "search") {
		t.Errorf("instructions do not mention search: %q", out.Instructions)
	}
	if out.Search.IsError || !strings.Contains(out.Search.Text, "reader.echo(") || !strings.Contains(out.Search.Text, "everything.echo(") {
		t.Errorf("search found neither reader.echo nor everything.echo:\n%s", out.Search.Text)
	}
	if out.Describe.IsError || !strings.Contains(out.Describe.Text, "declare const reader") || !strings.Contains(out.Describe.Text, "message: string") {
		t.Errorf("describe reader.echo:\n%s", out.Describe.Text)
	}
	if e := out.Read.Structured; e == nil || e.Status != "completed" || string(e.Result) != `"Echo: hi"` {
		t.Errorf("execute (a read) = %+v %q", e, out.Read.Text)
	}

	// J2 without elicitation: awaiting_approval, a person must decide.
	e := out.J2.Structured
	if e == nil || e.Status != "awaiting_approval" || len(e.Pending) != 1 || e.Pending[0].Address != "writer.record" {
		t.Fatalf("J2 without elicitation = %+v", e)
	}
	if want := "capabilities hub approve " + e.RunID; !strings.Contains(out.J2.Text, want) || !strings.Contains(out.J2.Text, "person") {
		t.Errorf("the text does not tell the model that a person decides with %q:\n%s", want, out.J2.Text)
	}
	for _, r := range append([]toolResult{out.J2}, out.Resume...) {
		b, _ := json.Marshal(r)
		if regexp.MustCompile(`https?://|[0-9a-f]{32,}|Bearer`).Match(b) {
			t.Errorf("the pending envelope carries a URL or a token: %s", b)
		}
	}
	// resume before a decision: the same pending envelope, nothing runs.
	for i, r := range out.Resume {
		if r.Structured == nil || r.Structured.RunID != e.RunID || r.Structured.Status != "awaiting_approval" ||
			len(r.Structured.Pending) != 1 || r.Structured.Pending[0].ID != e.Pending[0].ID || r.Text != out.J2.Text {
			t.Errorf("resume #%d = %+v, want the same pending envelope", i+1, r)
		}
	}
	// 1 read + the J2 code's 2 reads; the resumes answered from the journal.
	if n := lines(t, rc); n != 3 {
		t.Errorf("reader was called %d times, want 3 (resume must not repeat calls)", n)
	}
	if n := lines(t, wc); n != 0 {
		t.Errorf("writer was called %d times before any decision", n)
	}
}

// TestSDK1StdioElicitation is journey J2 through a real client that declared
// form elicitation: one execute reads from one source and writes to another,
// the hub asks exactly once through the client's form (address, reason,
// argument preview, the four choices), and the run completes with each
// upstream call made once. A declined form is a deny; a cancelled one
// leaves the run waiting for a person.
func TestSDK1StdioElicitation(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		answer     string
		status     string
		writes     int
		resultPart string
	}{
		{"once", "completed", 1, `"recorded Echo: from the reader"`},
		{"decline", "failed", 0, "approval_denied"},
		{"cancel", "awaiting_approval", 0, ""},
	} {
		t.Run(tc.answer, func(t *testing.T) {
			t.Parallel()
			h := newHub(t)
			rc, wc := h.j2()
			var out struct {
				J2           toolResult
				Elicitations []elicitation
			}
			h.client(&out, nil, "sdk1_stdio.mjs", "elicit", tc.answer)
			if len(out.Elicitations) != 1 {
				t.Fatalf("the client was asked %d times, want exactly once: %+v", len(out.Elicitations), out.Elicitations)
			}
			el := out.Elicitations[0]
			e := out.J2.Structured
			if e == nil {
				t.Fatalf("no envelope: %+v", out.J2)
			}
			checkElicitation(t, el, e.RunID)
			if e.Status != tc.status {
				t.Fatalf("status %s, want %s: %s", e.Status, tc.status, out.J2.Text)
			}
			if tc.status == "completed" && string(e.Result) != tc.resultPart {
				t.Errorf("result %s, want %s", e.Result, tc.resultPart)
			}
			if tc.status == "failed" && !strings.Contains(out.J2.Text, tc.resultPart) {
				t.Errorf("declined: %s", out.J2.Text)
			}
			if n := lines(t, rc); n != 2 {
				t.Errorf("reader called %d times, want 2 (each call once)", n)
			}
			if n := lines(t, wc); n != tc.writes {
				t.Errorf("writer called %d times, want %d", n, tc.writes)
			}
			if tc.answer == "cancel" {
				// Nothing was decided: a person can still approve from a terminal.
				out := h.cli("hub", "approve", e.RunID, "--choice", "once")
				if !strings.Contains(out, "completed") || lines(t, wc) != 1 {
					t.Errorf("approve after a cancelled form: %s", out)
				}
			}
			if tc.answer == "once" {
				shown := h.cli("hub", "runs", "show", "--json", e.RunID)
				if !strings.Contains(shown, `"channel": "elicitation"`) {
					t.Errorf("the decision is not recorded with the elicitation channel:\n%s", shown)
				}
			}
		})
	}
}

// checkElicitation: the form names the run, the call's address, the reason,
// a preview of the arguments, and the four choices.
func checkElicitation(t *testing.T, el elicitation, runID string) {
	t.Helper()
	if el.Mode != "form" && el.Mode != "" {
		t.Errorf("mode %q, want form", el.Mode)
	}
	for _, want := range []string{runID, "writer.record", "may change data", `Arguments: {"item":"Echo: from the reader"}`} {
		if !strings.Contains(el.Message, want) {
			t.Errorf("the form's message lacks %q:\n%s", want, el.Message)
		}
	}
	if got := el.RequestedSchema.Properties.Choice.Enum; !slices.Equal(got, []string{"once", "run", "always", "deny"}) {
		t.Errorf("choices %v", got)
	}
}

// TestClient2HTTP is @modelcontextprotocol/client 2.x over HTTP pinned to
// protocol 2026-07-28: it negotiates that revision, sees exactly the three
// tools, and J2 goes through the input-request round trip on the wire — the
// first tools/call answers input_required with the input request, the
// client retries the same call with inputResponses and the requestState, and
// the run completes with each upstream call once.
func TestClient2HTTP(t *testing.T) {
	t.Parallel()
	h := newHub(t)
	rc, wc := h.j2()
	url, token := h.serveHTTP()
	var out struct {
		ProtocolVersion string
		ToolNames       []string
		Search, J2      toolResult
		Elicitations    []elicitation
		Wire            []struct {
			ProtocolHeader                     string
			Tool                               string
			HasInputResponses, HasRequestState bool
			Status                             int
			ResultType                         string
			InputRequestIDs                    []string
			Error                              any
		}
	}
	h.client(&out, []string{"CAP_URL=" + url, "CAP_TOKEN=" + token}, "client2_http.mjs", "once")
	if out.ProtocolVersion != "2026-07-28" {
		t.Fatalf("negotiated %q, want 2026-07-28", out.ProtocolVersion)
	}
	if !slices.Equal(out.ToolNames, wantTools) {
		t.Errorf("tools %v", out.ToolNames)
	}
	if !strings.Contains(out.Search.Text, "writer.record(") {
		t.Errorf("search: %s", out.Search.Text)
	}
	e := out.J2.Structured
	if e == nil || e.Status != "completed" || string(e.Result) != `"recorded Echo: from the reader"` {
		t.Fatalf("J2 over 2026-07-28: %+v %s", e, out.J2.Text)
	}
	if len(out.Elicitations) != 1 {
		t.Fatalf("asked %d times, want once", len(out.Elicitations))
	}
	checkElicitation(t, out.Elicitations[0], e.RunID)
	var ex []int
	for i, w := range out.Wire {
		if w.ProtocolHeader != "2026-07-28" || w.Status != 200 || w.Error != nil {
			t.Errorf("wire #%d: %+v", i, w)
		}
		if w.Tool == "execute" {
			ex = append(ex, i)
		}
	}
	if len(ex) != 2 {
		t.Fatalf("execute went over the wire %d times, want 2 (ask, then answer): %+v", len(ex), out.Wire)
	}
	first, retry := out.Wire[ex[0]], out.Wire[ex[1]]
	if first.ResultType != "input_required" || !slices.Equal(first.InputRequestIDs, []string{e.Pending0ID()}) && len(first.InputRequestIDs) != 1 {
		t.Errorf("first execute: %+v", first)
	}
	if !retry.HasInputResponses || !retry.HasRequestState || retry.ResultType != "complete" {
		t.Errorf("retry: %+v", retry)
	}
	if n, m := lines(t, rc), lines(t, wc); n != 2 || m != 1 {
		t.Errorf("upstream calls: reader %d (want 2), writer %d (want 1)", n, m)
	}
}

// TestClient2Stdio is @modelcontextprotocol/client 2.x over stdio pinned to
// protocol 2026-07-28: the client's stdio transport spawns serve --stdio,
// probes with server/discover (pinned, it has no fallback to initialize),
// sees exactly the three tools, searches, runs a read, and J2 goes through
// the input-request round trip on the pipe — the first tools/call answers
// input_required, the client retries it with inputResponses and the
// requestState, and the run completes with each upstream call once. Nothing
// but protocol reaches the client on serve's stdout.
func TestClient2Stdio(t *testing.T) {
	t.Parallel()
	h := newHub(t)
	rc, wc := h.j2()
	var out struct {
		ProtocolVersion  string
		Instructions     string
		ToolNames        []string
		Search, Read, J2 toolResult
		Elicitations     []elicitation
		Wire             []struct {
			ProtocolMeta                       string
			Tool                               string
			HasInputResponses, HasRequestState bool
			ResultType                         string
			InputRequestIDs                    []string
			Error                              any
		}
		TransportErrors, NotProtocol []string
	}
	h.client(&out, nil, "client2_stdio.mjs", "once")
	if out.ProtocolVersion != "2026-07-28" {
		t.Fatalf("negotiated %q, want 2026-07-28", out.ProtocolVersion)
	}
	if len(out.TransportErrors) > 0 || len(out.NotProtocol) > 0 {
		t.Errorf("serve --stdio wrote something other than protocol on stdout: transport errors %q, lines %q", out.TransportErrors, out.NotProtocol)
	}
	if !slices.Equal(out.ToolNames, wantTools) {
		t.Errorf("tools %v, want %v", out.ToolNames, wantTools)
	}
	if !strings.Contains(out.Instructions, "search") {
		t.Errorf("instructions from server/discover do not mention search: %q", out.Instructions)
	}
	if out.Search.IsError || !strings.Contains(out.Search.Text, "writer.record(") {
		t.Errorf("search: %s", out.Search.Text)
	}
	if e := out.Read.Structured; e == nil || e.Status != "completed" || string(e.Result) != `"Echo: hi"` {
		t.Errorf("execute (a read) = %+v %q", e, out.Read.Text)
	}
	e := out.J2.Structured
	if e == nil || e.Status != "completed" || string(e.Result) != `"recorded Echo: from the reader"` {
		t.Fatalf("J2 over 2026-07-28 on stdio: %+v %s", e, out.J2.Text)
	}
	if len(out.Elicitations) != 1 {
		t.Fatalf("asked %d times, want once", len(out.Elicitations))
	}
	checkElicitation(t, out.Elicitations[0], e.RunID)
	var ex []int
	for i, w := range out.Wire {
		if w.ProtocolMeta != "2026-07-28" || w.Error != nil {
			t.Errorf("wire #%d: %+v", i, w)
		}
		if w.Tool == "execute" {
			ex = append(ex, i)
		}
	}
	if len(ex) != 3 {
		t.Fatalf("execute went over the pipe %d times, want 3 (the read; J2 asks, then answers): %+v", len(ex), out.Wire)
	}
	read, first, retry := out.Wire[ex[0]], out.Wire[ex[1]], out.Wire[ex[2]]
	if read.ResultType != "complete" || len(read.InputRequestIDs) != 0 {
		t.Errorf("the read execute: %+v", read)
	}
	if first.ResultType != "input_required" || len(first.InputRequestIDs) != 1 || first.HasInputResponses {
		t.Errorf("first J2 execute: %+v", first)
	}
	if !retry.HasInputResponses || !retry.HasRequestState || retry.ResultType != "complete" {
		t.Errorf("retry: %+v", retry)
	}
	if n, m := lines(t, rc), lines(t, wc); n != 3 || m != 1 {
		t.Errorf("upstream calls: reader %d (want 3), writer %d (want 1)", n, m)
	}
}

// Pending0ID is the first pending call's id ("" when none).
func (e *envelope) Pending0ID() string {
	if len(e.Pending) == 0 {
		return ""
	}
	return e.Pending[0].ID
}

// inspector runs @modelcontextprotocol/inspector-cli. It reads its own
// package.json relative to the working directory, so it runs from its build
// directory.
func inspector(t *testing.T, h *hubEnv, args ...string) (string, error) {
	t.Helper()
	dir := testenv.NPMPath(t, "@modelcontextprotocol/inspector-cli/build")
	cmd := exec.Command(testenv.Node(t), append([]string{filepath.Join(dir, "index.js")}, args...)...)
	cmd.Dir = dir
	cmd.Env = h.env()
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestInspectorCLI drives the hub with @modelcontextprotocol/inspector-cli
// over stdio and over HTTP with the bearer header (and without it: refused).
func TestInspectorCLI(t *testing.T) {
	t.Parallel()
	h := newHub(t)
	h.j2()
	url, token := h.serveHTTP()
	stdio := []string{binPath, "hub", "serve", "--stdio"}
	httpArgs := []string{url, "--transport", "http", "--header", "Authorization: Bearer " + token}

	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"stdio tools/list", append(stdio, "--method", "tools/list"), []string{`"name": "search"`, `"name": "describe"`, `"name": "execute"`}},
		{"stdio execute", append(stdio, "--method", "tools/call", "--tool-name", "execute", "--tool-arg", `code=return await reader.echo({message: "via inspector"})`), []string{`"status": "completed"`, `Echo: via inspector`}},
		{"http tools/list", append(slices.Clone(httpArgs), "--method", "tools/list"), []string{`"name": "search"`, `"name": "execute"`}},
		{"http search", append(slices.Clone(httpArgs), "--method", "tools/call", "--tool-name", "search", "--tool-arg", "query=record an item"), []string{"writer.record("}},
		{"http describe", append(slices.Clone(httpArgs), "--method", "tools/call", "--tool-name", "describe", "--tool-arg", `targets=["writer.record"]`), []string{"declare const writer"}},
		{"http execute asks", append(slices.Clone(httpArgs), "--method", "tools/call", "--tool-name", "execute", "--tool-arg", `code=return await writer.record({item: "x"})`), []string{`"status": "awaiting_approval"`, "capabilities hub approve r"}},
	} {
		out, err := inspector(t, h, tc.args...)
		if err != nil {
			t.Errorf("%s: %v\n%s", tc.name, err, out)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: output lacks %q:\n%s", tc.name, w, out)
			}
		}
	}
	// Without the bearer header the endpoint refuses, and says why.
	out, err := inspector(t, h, url, "--transport", "http", "--method", "tools/list")
	if err == nil || !strings.Contains(out, "missing bearer token") {
		t.Errorf("inspector without the bearer token: err %v\n%s", err, out)
	}
}

// TestFixedSurfaceTokens measures the three tool definitions and the
// instructions, as a real client receives them, with gpt-tokenizer
// (o200k_base): at most 1,000 tokens.
func TestFixedSurfaceTokens(t *testing.T) {
	t.Parallel()
	h := newHub(t)
	var out struct {
		Encoding                   string
		Tools, Instructions, Total int
		PerTool                    map[string]int
		Names                      []string
	}
	h.client(&out, nil, "tokens.mjs")
	t.Logf("fixed surface: %d tokens (%s): tools %d (%v), instructions %d", out.Total, out.Encoding, out.Tools, out.PerTool, out.Instructions)
	if len(out.Names) != 3 || out.Tools == 0 || out.Instructions == 0 {
		t.Fatalf("measured nothing: %+v", out)
	}
	if out.Total > 1000 {
		t.Errorf("the fixed surface is %d tokens; the budget is 1,000", out.Total)
	}
}

// TestLiveConfiguration: a source added or removed by another process
// (`hub add` / `hub remove` in a terminal) shows up in search of a running
// serve --stdio, without restarting it.
func TestLiveConfiguration(t *testing.T) {
	t.Parallel()
	h := newHub(t)
	h.addScripted("reader", false)
	cmd := exec.Command(testenv.Node(t), filepath.Join(clientsDir(t), "sdk1_repl.mjs"))
	cmd.Env = h.env()
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
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
		return r
	}
	next() // ready
	search := func() string {
		t.Helper()
		if _, err := stdin.Write([]byte(`{"name":"search","arguments":{"query":"record an item","namespace":"writer"}}` + "\n")); err != nil {
			t.Fatal(err)
		}
		return next().Text
	}
	waitFor := func(cond func(string) bool, what string) {
		t.Helper()
		wait := testenv.Timeout(10 * time.Second)
		deadline := time.Now().Add(wait)
		var last string
		for time.Now().Before(deadline) {
			if last = search(); cond(last) {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Fatalf("%s within %v; last search:\n%s", what, wait, last)
	}
	if got := search(); strings.Contains(got, "writer.record") {
		t.Fatalf("writer is found before it was added:\n%s", got)
	}
	h.addScripted("writer", true)
	start := time.Now()
	waitFor(func(s string) bool { return strings.Contains(s, "writer.record(") }, "a source added by hub add did not show up in search")
	t.Logf("hub add → visible in search after %v", time.Since(start).Round(time.Millisecond))
	h.cli("hub", "remove", "writer")
	waitFor(func(s string) bool { return !strings.Contains(s, "writer.record(") }, "a source removed by hub remove still shows in search")
}
