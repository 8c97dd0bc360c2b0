package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// rawHTTP speaks protocol 2026-07-28 (stateless: every request carries its
// version, client info and capabilities) to serve --http, byte by byte.
type rawHTTP struct {
	t     *testing.T
	url   string
	token string
}

type rawReply struct {
	status int
	body   string
	msg    struct {
		Result json.RawMessage
		Error  *struct {
			Code    int
			Message string
		}
	}
}

func (c *rawHTTP) post(hdr map[string]string, body string) rawReply {
	c.t.Helper()
	req, err := http.NewRequest("POST", c.url, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		if v == "" {
			req.Header.Del(k)
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("POST %s: %v", c.url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	r := rawReply{status: resp.StatusCode, body: string(b)}
	data := r.body
	if i := strings.Index(data, "data: "); i >= 0 && !strings.HasPrefix(data, "{") {
		data = strings.SplitN(data[i+6:], "\n", 2)[0]
	}
	_ = json.Unmarshal([]byte(data), &r.msg)
	return r
}

// call sends one JSON-RPC request; caps are the client capabilities.
func (c *rawHTTP) call(method string, params map[string]any, caps map[string]any) rawReply {
	c.t.Helper()
	if params == nil {
		params = map[string]any{}
	}
	if caps == nil {
		caps = map[string]any{}
	}
	params["_meta"] = map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "e2e-raw", "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": caps,
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	hdr := map[string]string{"Mcp-Method": method}
	if n, ok := params["name"].(string); ok {
		hdr["Mcp-Name"] = n
	}
	return c.post(hdr, string(b))
}

// tool calls a tool and returns the result's text and whether it is an error.
func (c *rawHTTP) tool(name string, args map[string]any) (text string, isError bool, res map[string]any) {
	c.t.Helper()
	r := c.call("tools/call", map[string]any{"name": name, "arguments": args}, nil)
	if r.msg.Error != nil || r.status != 200 {
		c.t.Fatalf("tools/call %s: HTTP %d %s", name, r.status, r.body)
	}
	_ = json.Unmarshal(r.msg.Result, &res)
	for _, ct := range res["content"].([]any) {
		text += ct.(map[string]any)["text"].(string)
	}
	isError, _ = res["isError"].(bool)
	return text, isError, res
}

func (c *rawHTTP) alive() {
	c.t.Helper()
	r := c.call("tools/list", nil, nil)
	if r.status != 200 || !strings.Contains(r.body, `"execute"`) {
		c.t.Fatalf("the server stopped serving: HTTP %d %s", r.status, r.body)
	}
}

// TestBadInput: each bad request gets a precise error and the server keeps
// serving: the bearer token, Host, Origin, code and resume together or
// neither, 65 KB of code, an unknown run, a resume of another client's
// completed run, malformed JSON-RPC, and an altered or replayed approval
// state.
func TestBadInput(t *testing.T) {
	t.Parallel()
	h := newHub(t)
	_, wc := h.j2()
	url, token := h.serveHTTP()
	c := &rawHTTP{t: t, url: url, token: token}
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"x","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`

	for _, tc := range []struct {
		name   string
		hdr    map[string]string
		body   string
		status int
		want   string
	}{
		{"no bearer token", map[string]string{"Authorization": "", "Mcp-Method": "tools/list"}, list, 401, "missing bearer token"},
		{"wrong bearer token", map[string]string{"Authorization": "Bearer " + strings.Repeat("0", 64), "Mcp-Method": "tools/list"}, list, 401, "wrong bearer token"},
		{"not a bearer scheme", map[string]string{"Authorization": "Basic " + token, "Mcp-Method": "tools/list"}, list, 401, "missing bearer token"},
		{"the scheme in lower case", map[string]string{"Authorization": "bearer " + token, "Mcp-Method": "tools/list"}, list, 200, `"execute"`},
		{"foreign Host", map[string]string{"Host": "evil.example:4790", "Mcp-Method": "tools/list"}, list, 403, `Host "evil.example:4790" is not a loopback address`},
		{"foreign Origin", map[string]string{"Origin": "https://evil.example", "Mcp-Method": "tools/list"}, list, 403, `Origin "https://evil.example" is not a loopback origin`},
		{"malformed JSON-RPC", map[string]string{"Mcp-Method": "tools/list"}, `{"jsonrpc":"2.0","id":1,"method":`, 400, "malformed payload"},
		{"malformed JSON-RPC, legacy", map[string]string{"Mcp-Protocol-Version": "", "Mcp-Method": ""}, `{"jsonrpc":"2.0","id":1,"method":`, 400, "malformed payload"},
	} {
		r := c.post(tc.hdr, tc.body)
		if r.status != tc.status || !strings.Contains(r.body, tc.want) {
			t.Errorf("%s: HTTP %d %q, want %d with %q", tc.name, r.status, r.body, tc.status, tc.want)
		}
		c.alive()
	}

	big := strings.Repeat("x", 65<<10)
	for _, tc := range []struct {
		name string
		args map[string]any
		want string
	}{
		{"code and resume", map[string]any{"code": "return 1", "resume": "r1"}, "pass code or resume, not both"},
		{"neither", map[string]any{}, `pass {code: "…"} to run code, or {resume: runId}`},
		{"only white space", map[string]any{"code": " \n\t"}, "the code is empty"},
		{"65 KB of code", map[string]any{"code": "return '" + big + "'"}, "the limit is 65536 (64 KB)"},
		{"unknown run", map[string]any{"resume": "rnope"}, `unknown run "rnope"`},
		{"unknown argument", map[string]any{"code": "return 1", "sudo": true}, `unknown field "sudo"`},
	} {
		text, isErr, _ := c.tool("execute", tc.args)
		if !isErr || !strings.Contains(text, tc.want) {
			t.Errorf("execute %s: isError %v %q, want %q", tc.name, isErr, text, tc.want)
		}
	}
	c.alive()

	// A completed run: resume returns its final envelope again and runs
	// nothing (TestResumeAfterTheRunFinished has the approved journey).
	ranText, _, res := c.tool("execute", map[string]any{"code": `return await reader.echo({message: "mine"})`})
	done := res["structuredContent"].(map[string]any)["runId"].(string)
	text, isErr, again := c.tool("execute", map[string]any{"resume": done})
	if isErr || text != ranText || again["structuredContent"].(map[string]any)["status"] != "completed" {
		t.Errorf("resume of a completed run: %v %q, want the envelope it finished with: %q", isErr, text, ranText)
	}

	// The approval state: altered → refused, valid → decides once,
	// replayed → refused. Nothing is written until a valid answer.
	elicit := map[string]any{"elicitation": map[string]any{"form": map[string]any{}}}
	first := c.call("tools/call", map[string]any{"name": "execute", "arguments": map[string]any{"code": `return await writer.record({item: "once"})`}}, elicit)
	var ir struct {
		ResultType    string                     `json:"resultType"`
		InputRequests map[string]json.RawMessage `json:"inputRequests"`
		RequestState  string                     `json:"requestState"`
	}
	if err := json.Unmarshal(first.msg.Result, &ir); err != nil || ir.ResultType != "input_required" || len(ir.InputRequests) != 1 || ir.RequestState == "" {
		t.Fatalf("a write with elicitation declared: %s", first.body)
	}
	if strings.Contains(first.body, "http://") || strings.Contains(first.body, token) {
		t.Errorf("the input request carries a URL or the token: %s", first.body)
	}
	var callID string
	for id := range ir.InputRequests {
		callID = id
	}
	answer := func(state string) (string, bool) {
		r := c.call("tools/call", map[string]any{
			"name":           "execute",
			"arguments":      map[string]any{"code": `return await writer.record({item: "once"})`},
			"inputResponses": map[string]any{callID: map[string]any{"action": "accept", "content": map[string]any{"choice": "always"}}},
			"requestState":   state,
		}, elicit)
		var res struct {
			Content []struct{ Text string }
			IsError bool
		}
		_ = json.Unmarshal(r.msg.Result, &res)
		if len(res.Content) == 0 {
			t.Fatalf("answer: HTTP %d %s", r.status, r.body)
		}
		return res.Content[0].Text, res.IsError
	}
	body, sig, _ := strings.Cut(ir.RequestState, ".")
	altered := body[:len(body)-2] + "AA" + "." + sig
	if text, isErr := answer(altered); !isErr || !strings.Contains(text, "the approval was refused") {
		t.Errorf("altered state: %v %q", isErr, text)
	}
	if text, isErr := answer("not-a-state"); !isErr || !strings.Contains(text, "malformed") {
		t.Errorf("malformed state: %v %q", isErr, text)
	}
	if lines(t, wc) != 0 {
		t.Fatal("a refused state let the write through")
	}
	if text, isErr := answer(ir.RequestState); isErr || !strings.Contains(text, "completed") {
		t.Fatalf("valid state: %v %q", isErr, text)
	}
	if text, isErr := answer(ir.RequestState); !isErr || !strings.Contains(text, "refused") {
		t.Errorf("replayed state: %v %q", isErr, text)
	}
	if n := lines(t, wc); n != 1 {
		t.Errorf("writer called %d times, want 1", n)
	}
	// I8: the answer "always" through a replay did not add a second rule,
	// and no MCP tool reaches policy: the policy has exactly the one rule a
	// person chose through the form.
	if out := h.cli("hub", "policy", "list"); strings.Count(out, "writer.record") != 1 || !strings.Contains(out, "approval:elicitation") {
		t.Errorf("policy after one elicited 'always':\n%s", out)
	}
	c.alive()
}
