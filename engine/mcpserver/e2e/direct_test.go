package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/capabilities-sh/capabilities/internal/testenv"
)

type directResult struct {
	Text       string
	IsError    bool
	Structured map[string]any
}

// directProfile sets up reader and writer (journey J2's sources) and a
// direct-mode profile "issues" showing writer's tools and reader.echo.
func directProfile(t *testing.T) (h *hubEnv, readerCalls, writerCalls string) {
	t.Helper()
	h = newHub(t)
	readerCalls, writerCalls = h.j2()
	h.cli("hub", "profiles", "add", "issues", "--mode", "direct", "--namespace", "writer", "--tool", "reader.echo")
	return h, readerCalls, writerCalls
}

// TestDirectProfileSDK1: the real TypeScript SDK client over `serve --stdio
// --profile issues` lists exactly the profile's tools (namespace__tool,
// their upstream schemas and annotations); a read runs; a write through its
// direct tool answers awaiting_approval and never reaches the upstream
// until a person approves (hub approve); the same call made again then
// returns the result, and the call after that asks again (a direct call is
// a one-call run). Editing the profile sends tools/list_changed and the
// next list has the new set.
func TestDirectProfileSDK1(t *testing.T) {
	t.Parallel()
	h, rc, wc := directProfile(t)
	var out struct {
		Instructions string
		Capabilities struct{ Tools struct{ ListChanged bool } }
		Tools        []struct {
			Name        string
			InputSchema map[string]any
			Annotations map[string]any
		}
		Read           directResult
		Pending        []directResult
		RunID          string
		After, Again   directResult
		Changed        int
		ToolsAfterEdit []string
	}
	h.client(&out, nil, "direct_stdio.mjs", "list", "issues")

	var names []string
	for _, tl := range out.Tools {
		names = append(names, tl.Name)
	}
	sort.Strings(names)
	want := []string{"reader__echo", "writer__changeTools", "writer__echo", "writer__record", "writer__sleep"}
	if !slices.Equal(names, want) {
		t.Fatalf("tools/list = %v, want exactly the profile's %v", names, want)
	}
	for _, tl := range out.Tools {
		if tl.Name != "writer__record" {
			continue
		}
		if ro, _ := tl.Annotations["readOnlyHint"].(bool); ro || tl.Annotations["destructiveHint"] != false {
			t.Errorf("writer__record's annotations are not the upstream's: %v", tl.Annotations)
		}
		if props, _ := tl.InputSchema["properties"].(map[string]any); props["item"] == nil {
			t.Errorf("writer__record's input schema is not the upstream's: %v", tl.InputSchema)
		}
	}
	if !out.Capabilities.Tools.ListChanged {
		t.Error("the server does not declare tools.listChanged")
	}
	if out.Read.IsError || out.Read.Text != "Echo: hi" {
		t.Errorf("reader__echo = %+v", out.Read)
	}
	for i, p := range out.Pending {
		if !p.IsError || !strings.Contains(p.Text, "awaiting_approval") || !strings.Contains(p.Text, "capabilities hub approve "+out.RunID) {
			t.Errorf("write #%d before a decision = %+v", i+1, p)
		}
	}
	if out.Pending[0].Text != out.Pending[1].Text {
		t.Errorf("the same call made again before a decision is not the same waiting run:\n%s\n%s", out.Pending[0].Text, out.Pending[1].Text)
	}
	if out.After.IsError || out.After.Text != "recorded from a direct call" {
		t.Errorf("the write after hub approve = %+v", out.After)
	}
	if !out.Again.IsError || !strings.Contains(out.Again.Text, "awaiting_approval") || strings.Contains(out.Again.Text, out.RunID) {
		t.Errorf("a new write after the approved one must ask again, as a new run: %+v", out.Again)
	}
	if n := lines(t, wc); n != 1 {
		t.Errorf("writer was called %d times, want 1 (only the approved call)", n)
	}
	if n := lines(t, rc); n != 1 {
		t.Errorf("reader was called %d times, want 1", n)
	}
	// The direct call is a run like any: hub runs shows it with its call.
	var shown struct {
		Run struct {
			Status string
		}
		Journal []struct{ Address string }
	}
	if err := json.Unmarshal([]byte(h.cli("hub", "runs", "show", "--json", out.RunID)), &shown); err != nil {
		t.Fatal(err)
	}
	if shown.Run.Status != "completed" || len(shown.Journal) == 0 || slices.ContainsFunc(shown.Journal, func(e struct{ Address string }) bool { return e.Address != "writer.record" }) {
		t.Errorf("hub runs show %s = %+v", out.RunID, shown)
	}
	if out.Changed < 1 {
		t.Errorf("no tools/list_changed after the profile was edited")
	}
	sort.Strings(out.ToolsAfterEdit)
	if want := want[1:]; !slices.Equal(out.ToolsAfterEdit, want) {
		t.Errorf("tools/list after the edit = %v, want %v", out.ToolsAfterEdit, want)
	}
}

// TestDirectProfileSDK1Elicitation: a client that declared form elicitation
// is asked once, through its form, for a write through a direct tool; once
// runs it, a declined form or a deny never reaches the upstream, a
// cancelled form leaves the run waiting.
func TestDirectProfileSDK1Elicitation(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		answer string
		writes int
		want   string
		isErr  bool
	}{
		{"once", 1, "recorded from a direct call", false},
		{"deny", 0, "approval_denied", true},
		{"decline", 0, "approval_denied", true},
		{"cancel", 0, "awaiting_approval", true},
	} {
		t.Run(tc.answer, func(t *testing.T) {
			t.Parallel()
			h, _, wc := directProfile(t)
			var out struct {
				Write        directResult
				Elicitations []elicitation
			}
			h.client(&out, nil, "direct_stdio.mjs", "elicit", "issues", tc.answer)
			if len(out.Elicitations) != 1 {
				t.Fatalf("the client was asked %d times, want once: %+v", len(out.Elicitations), out.Elicitations)
			}
			if m := out.Elicitations[0].Message; !strings.Contains(m, "writer.record") || !strings.Contains(m, `"item":"from a direct call"`) {
				t.Errorf("the form does not name the call and its arguments:\n%s", m)
			}
			if out.Write.IsError != tc.isErr || !strings.Contains(out.Write.Text, tc.want) {
				t.Errorf("writer__record answered %s = %+v, want %q", tc.answer, out.Write, tc.want)
			}
			if n := lines(t, wc); n != tc.writes {
				t.Errorf("writer was called %d times, want %d", n, tc.writes)
			}
		})
	}
}

// TestProfilesCLIBadInput: bad profile input exits non-zero with a message
// naming the problem, and leaves no profile behind; serve refuses an
// unknown profile.
func TestProfilesCLIBadInput(t *testing.T) {
	t.Parallel()
	h := newHub(t)
	h.addScripted("reader", false)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"hub", "profiles", "add", "Bad"}, "must start with a lowercase letter"},
		{[]string{"hub", "profiles", "add", "x", "--mode", "direct", "--namespace", "nope"}, `unknown namespace "nope"`},
		{[]string{"hub", "profiles", "add", "x", "--mode", "direct", "--tool", "reader.nope"}, `unknown tool "reader.nope"`},
		{[]string{"hub", "profiles", "add", "x", "--mode", "sideways"}, `mode "sideways"`},
		{[]string{"hub", "profiles", "edit", "ghost", "--mode", "direct"}, `unknown profile "ghost"`},
		{[]string{"hub", "profiles", "remove", "default"}, "cannot be removed"},
		{[]string{"hub", "serve", "--stdio", "--no-shim", "--profile", "ghost"}, `unknown profile "ghost"`},
		{[]string{"hub", "connect", "--profile", "ghost", "--dry-run"}, `unknown profile "ghost"`},
	} {
		out, err := h.cliErr(tc.args...)
		if err == nil || !strings.Contains(out, tc.want) {
			t.Errorf("%s: err %v, want a failure saying %q:\n%s", strings.Join(tc.args, " "), err, tc.want, out)
		}
	}
	if out := h.cli("hub", "profiles", "list"); strings.TrimSpace(out) != "default\tcode\tevery tool" {
		t.Errorf("profiles after refused input:\n%s", out)
	}
}

// TestConnectProfileWritesItsEntry: hub connect --profile issues writes an
// entry named capabilities-issues running serve --stdio --profile issues,
// beside the default profile's capabilities entry; disconnect takes both
// out.
func TestConnectProfileWritesItsEntry(t *testing.T) {
	t.Parallel()
	h, _, _ := directProfile(t)
	home := t.TempDir()
	cfg := filepath.Join(home, ".cursor", "mcp.json")
	if err := os.MkdirAll(filepath.Dir(cfg), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, []byte(`{"mcpServers": {}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	connect := func(args ...string) {
		t.Helper()
		cmd := exec.Command(binPath, append([]string{"hub", "connect", "--client", "cursor"}, args...)...)
		cmd.Env = append(h.env(), "HOME="+home, "XDG_CONFIG_HOME=")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("hub connect %v: %v\n%s", args, err, out)
		}
	}
	orig, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	connect("--profile", "issues")
	connect()
	var got struct {
		MCPServers map[string]struct {
			Command string
			Args    []string
		} `json:"mcpServers"`
	}
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	want := map[string][]string{
		"capabilities":        {"hub", "serve", "--stdio", "--profile", "default"},
		"capabilities-issues": {"hub", "serve", "--stdio", "--profile", "issues"},
	}
	for name, args := range want {
		if e, ok := got.MCPServers[name]; !ok || !slices.Equal(e.Args, args) {
			t.Errorf("entry %s = %+v, want args %v:\n%s", name, e, args, b)
		}
	}
	// disconnect takes both entries out: the file is as it was.
	cmd := exec.Command(binPath, "hub", "disconnect", "--client", "cursor")
	cmd.Env = append(h.env(), "HOME="+home, "XDG_CONFIG_HOME=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("hub disconnect: %v\n%s", err, out)
	}
	if b, _ := os.ReadFile(cfg); string(b) != string(orig) {
		t.Errorf("after disconnect the config is\n%s\nwant\n%s", b, orig)
	}
}

// TestDirectProfileOverHTTP: serve --http serves the direct-mode profile at
// /mcp/issues to @modelcontextprotocol/inspector-cli (its tools listed
// exactly, a read runs, a write asks), /mcp stays the default code-mode
// surface, and an unknown profile's path is refused saying so.
func TestDirectProfileOverHTTP(t *testing.T) {
	t.Parallel()
	h, _, wc := directProfile(t)
	url, token := h.serveHTTP()
	auth := []string{"--transport", "http", "--header", "Authorization: Bearer " + token}
	for _, tc := range []struct {
		name    string
		args    []string
		want    []string
		wantNot []string
	}{
		{"direct tools/list", append([]string{url + "/issues"}, append(slices.Clone(auth), "--method", "tools/list")...),
			[]string{`"name": "reader__echo"`, `"name": "writer__record"`, `"name": "writer__echo"`}, []string{`"name": "execute"`, `"name": "reader__sleep"`}},
		{"direct read", append([]string{url + "/issues"}, append(slices.Clone(auth), "--method", "tools/call", "--tool-name", "reader__echo", "--tool-arg", "message=via inspector")...),
			[]string{"Echo: via inspector"}, []string{`"isError": true`}},
		{"direct write asks", append([]string{url + "/issues"}, append(slices.Clone(auth), "--method", "tools/call", "--tool-name", "writer__record", "--tool-arg", "item=x")...),
			[]string{"awaiting_approval", "capabilities hub approve r"}, nil},
		{"default stays code mode", append([]string{url}, append(slices.Clone(auth), "--method", "tools/list")...),
			[]string{`"name": "search"`, `"name": "execute"`}, []string{"reader__echo"}},
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
		for _, w := range tc.wantNot {
			if strings.Contains(out, w) {
				t.Errorf("%s: output has %q:\n%s", tc.name, w, out)
			}
		}
	}
	if n := lines(t, wc); n != 0 {
		t.Errorf("writer was called %d times without a decision", n)
	}
	out, err := inspector(t, h, append([]string{url + "/ghost"}, append(slices.Clone(auth), "--method", "tools/list")...)...)
	if err == nil || !strings.Contains(out, `unknown profile "ghost"`) {
		t.Errorf("an unknown profile's path: err %v\n%s", err, out)
	}
}

// TestConformanceDirect runs the conformance suite's server scenarios that
// apply to any tool surface against a direct-mode profile's endpoint.
func TestConformanceDirect(t *testing.T) {
	t.Parallel()
	h, _, _ := directProfile(t)
	url := conformanceListener(t, h) + "/issues"
	script := testenv.Tool(t, "conformance/run-conformance.sh")
	testenv.NPMPath(t, "@modelcontextprotocol/conformance/dist/index.js")
	for _, sc := range []string{"server-initialize", "ping", "tools-list", "dns-rebinding-protection"} {
		out := t.TempDir()
		cmd := exec.Command("sh", script, filepath.Join(testenv.Root(t), "testdata", "npm"), "server", "--url", url, "--scenario", sc, "-o", out)
		b, err := cmd.CombinedOutput()
		text := string(b)
		if err != nil || strings.Contains(text, "FAIL") || !strings.Contains(text, "Passed:") {
			t.Errorf("conformance scenario %s on a direct-mode endpoint: %v\n%s", sc, err, text)
			continue
		}
		t.Logf("conformance %s (direct): %s", sc, lastLine(text))
	}
}

// TestDirectSurfaceTokensCorpus measures, with gpt-tokenizer (o200k_base)
// through the TypeScript SDK client, what tools/list and the instructions
// cost an agent for the 19-source corpus: a direct-mode profile showing
// every tool against the default code-mode surface. It logs both; the
// direct listing is every tool's definition, so it is larger.
func TestDirectSurfaceTokensCorpus(t *testing.T) {
	t.Parallel()
	h := newHub(t)
	addCorpusCopies(t, h, 1)
	h.cli("hub", "profiles", "add", "everything", "--mode", "direct")
	type surface struct {
		Tools, Instructions, Total int
		Names                      []string
	}
	var manifestTools int
	curated := ""
	for _, m := range testenv.CorpusManifests(t) {
		manifestTools += len(m.Tools)
		if m.Namespace == "github" || curated == "" {
			curated = m.Namespace
		}
	}
	h.cli("hub", "profiles", "add", "curated", "--mode", "direct", "--namespace", curated)
	var code, direct, one surface
	h.client(&code, nil, "tokens.mjs")
	h.client(&direct, nil, "tokens.mjs", "everything")
	h.client(&one, nil, "tokens.mjs", "curated")
	t.Logf("19-source corpus, o200k_base: code mode %d tokens (%d tools); direct mode, every tool: %d tokens (%d tools of %d in the manifests; tools/list %d, instructions %d); direct mode, namespace %s only: %d tokens (%d tools)",
		code.Total, len(code.Names), direct.Total, len(direct.Names), manifestTools, direct.Tools, direct.Instructions, curated, one.Total, len(one.Names))
	if len(code.Names) != 3 || len(direct.Names) < manifestTools*9/10 {
		t.Fatalf("code mode lists %d tools, direct mode %d of %d", len(code.Names), len(direct.Names), manifestTools)
	}
	if direct.Total <= code.Total {
		t.Errorf("direct mode (%d tokens) is not larger than code mode (%d)", direct.Total, code.Total)
	}
}

// TestDirectProfileThroughTheShim: with a long-running hub serving (serve
// --http), serve --stdio --profile issues relays to its /mcp/issues: the
// TypeScript client sees the profile's tools, a write waits for hub
// approve and then runs once, and tools/list_changed comes through the
// relay after the profile is edited.
func TestDirectProfileThroughTheShim(t *testing.T) {
	t.Parallel()
	h, _, wc := directProfile(t)
	h.serveHTTP()
	var out struct {
		Tools          []struct{ Name string }
		After          directResult
		Changed        int
		ToolsAfterEdit []string
	}
	h.client(&out, nil, "direct_stdio.mjs", "list", "issues")
	var names []string
	for _, tl := range out.Tools {
		names = append(names, tl.Name)
	}
	sort.Strings(names)
	if want := []string{"reader__echo", "writer__changeTools", "writer__echo", "writer__record", "writer__sleep"}; !slices.Equal(names, want) {
		t.Errorf("tools/list through the shim = %v, want %v", names, want)
	}
	if out.After.IsError || out.After.Text != "recorded from a direct call" {
		t.Errorf("the write after hub approve = %+v", out.After)
	}
	if n := lines(t, wc); n != 1 {
		t.Errorf("writer was called %d times, want 1", n)
	}
	if out.Changed < 1 || len(out.ToolsAfterEdit) != 4 {
		t.Errorf("after the edit: %d list_changed, tools %v", out.Changed, out.ToolsAfterEdit)
	}
}

// TestDirectSameCallInAnotherProcess: the agent's `serve --stdio` is
// restarted between its write that asked and its call made again (or a
// second session makes the same call). The call made again, in the new
// process, is the same waiting run; once a person approved it in a
// terminal, the call made again gets that write's result, and the upstream
// was called once: a person who approves does not make the write twice.
// The call after that is a new run and asks again.
func TestDirectSameCallInAnotherProcess(t *testing.T) {
	t.Parallel()
	h, _, wc := directProfile(t)
	write := map[string]any{"item": "once"}
	runOf := func(r toolResult) string {
		t.Helper()
		m := regexp.MustCompile(`capabilities hub approve (r[0-9a-f]+)`).FindStringSubmatch(r.Text)
		if !r.IsError || !strings.Contains(r.Text, "awaiting_approval") || m == nil {
			t.Fatalf("the write did not ask for a person: %+v", r)
		}
		return m[1]
	}
	first := runOf(h.replServing(t, []string{"--profile", "issues"}).call("writer__record", write))

	second := h.replServing(t, []string{"--profile", "issues"})
	if id := runOf(second.call("writer__record", write)); id != first {
		t.Errorf("the same call in another process before a decision is run %s, want the waiting run %s", id, first)
	}
	h.cli("hub", "approve", first, "--choice", "once")
	if n := lines(t, wc); n != 1 {
		t.Fatalf("writer was called %d times after the approval, want 1", n)
	}

	third := h.replServing(t, []string{"--profile", "issues"})
	got := third.call("writer__record", map[string]any{"item": "once"})
	if got.IsError || got.Text != "recorded once" {
		t.Errorf("the same call made again after the approval, in a third process = %+v, want the write's result", got)
	}
	if n := lines(t, wc); n != 1 {
		t.Errorf("writer was called %d times, want 1: the call made again wrote again", n)
	}
	if id := runOf(second.call("writer__record", write)); id == first {
		t.Errorf("the call after the result was handed over continues run %s, want a new run", id)
	}
	if n := lines(t, wc); n != 1 {
		t.Errorf("writer was called %d times, want 1", n)
	}
}
