package mcpserver

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/elicit"
	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/auth"
)

// openSession opens a session as the TypeScript SDK 1.x does (initialize,
// then the initialized notification) and returns its id.
func openSession(t testing.TB, handler http.Handler, version, caps string) string {
	t.Helper()
	rec := serveOne(handler, http.Header{}, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"`+version+`","capabilities":`+caps+`,"clientInfo":{"name":"t","version":"1"}}}`)
	sid := rec.Header().Get("Mcp-Session-Id")
	if rec.Code != http.StatusOK || sid == "" {
		t.Fatalf("initialize: HTTP %d, session %q: %s", rec.Code, sid, rec.Body)
	}
	rec = serveOne(handler, http.Header{"Mcp-Session-Id": {sid}, "Mcp-Protocol-Version": {version}}, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if rec.Code != http.StatusAccepted {
		t.Fatalf("initialized: HTTP %d: %s", rec.Code, rec.Body)
	}
	return sid
}

// TestSessionCallAnswersAsGoSDK: every request of a session client, whether
// the hub answers it itself (sessionCalls) or go-sdk does, gets the answer
// go-sdk gives: the same status, content type, cache control and bytes
// (run ids aside). Each case says whether the hub takes it, so a change
// that made it decline everything (or take what it must not) fails too.
func TestSessionCallAnswersAsGoSDK(t *testing.T) {
	h, target := corpusHub(t)
	signer := elicit.NewSigner([]byte("0123456789abcdef0123456789abcdef"), time.Now)
	fast := New(h, Options{Signer: signer})
	t.Cleanup(fast.Close)
	sdk := New(h, Options{Signer: signer})
	t.Cleanup(sdk.Close)
	sdk.calls = nil // the hub declines everything: go-sdk answers
	fastHandler, sdkHandler := fast.HTTPHandler(testToken), sdk.HTTPHandler(testToken)
	type session struct{ fast, sdk string }
	open := func(version, caps string) session {
		return session{openSession(t, fastHandler, version, caps), openSession(t, sdkHandler, version, caps)}
	}
	plain := open("2025-11-25", `{}`)
	older := open("2025-06-18", `{"roots":{"listChanged":true}}`)
	oldest := open("2025-03-26", `{}`)
	eliciting := open("2025-11-25", `{"elicitation":{"form":{}}}`)
	// The TypeScript SDK's order of members.
	call := func(id, tool, args string) string {
		return `{"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args + `},"jsonrpc":"2.0","id":` + id + `}`
	}
	for _, tc := range []struct {
		name string
		sess session
		body string
		hdr  http.Header
		fast bool // the hub answers it
	}{
		{"execute completed", plain, call("2", "execute", `{"code":"return 1"}`), nil, true},
		{"execute with logs", plain, call("3", "execute", `{"code":"console.log('a<b>&c'); return {x: [1, 'é', '\u2028']}"}`), nil, true},
		{"execute failed", plain, call("4", "execute", `{"code":"throw new Error('no')"}`), nil, true},
		{"execute reading an unknown global", plain, call("5", "execute", `{"code":"return nosuch.x()"}`), nil, true},
		{"execute with bad arguments", plain, call("6", "execute", `{"code":1}`), nil, true},
		{"execute with unknown argument", plain, call("7", "execute", `{"code":"return 1","x":1}`), nil, true},
		{"execute with no arguments", plain, `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"execute"}}`, nil, true},
		{"execute with empty arguments", plain, call("9", "execute", `{}`), nil, true},
		{"execute resuming no run", plain, call("10", "execute", `{"resume":"r0000000000000000000"}`), nil, true},
		{"search", plain, call("11", "search", `{"query":"create an issue"}`), nil, true},
		{"search with a bad limit", plain, call("12", "search", `{"query":"x","limit":99}`), nil, true},
		{"search with a query too long", plain, call("13", "search", `{"query":"`+strings.Repeat("x", 300)+`"}`), nil, true},
		{"describe", plain, call("14", "describe", `{"targets":["`+target+`"]}`), nil, true},
		{"describe unknown", plain, call("15", "describe", `{"targets":["nosuch.tool"]}`), nil, true},
		{"a string id", plain, call(`"req-1:a.b"`, "search", `{"query":"issue"}`), nil, true},
		{"a negative id", plain, call(`-7`, "search", `{"query":"issue"}`), nil, true},
		{"the JSON-RPC order of members", plain, `{"jsonrpc":"2.0","id":16,"method":"tools/call","params":{"arguments":{"query":"x"},"name":"search"}}`, nil, true},
		{"spaces and newlines", plain, "{\n \"jsonrpc\" : \"2.0\",\t\"id\": 17 ,\r\n\"method\":\"tools/call\",\"params\":{ \"name\":\"search\", \"arguments\":{\"query\":\"x\"} } }\n", nil, true},
		{"another _meta member", plain, `{"jsonrpc":"2.0","id":18,"method":"tools/call","params":{"_meta":{"claudecode/toolUseId":"toolu_1"},"name":"search","arguments":{"query":"x"}}}`, nil, true},
		{"Content-Type with a charset", plain, call("19", "search", `{"query":"x"}`), http.Header{"Content-Type": {"application/json; charset=utf-8"}}, true},
		{"Accept with wildcards", plain, call("20", "search", `{"query":"x"}`), http.Header{"Accept": {"*/*"}}, true},
		{"Mcp-Method and Mcp-Name headers that disagree", plain, call("21", "search", `{"query":"x"}`), http.Header{"Mcp-Method": {"tools/list"}, "Mcp-Name": {"execute"}}, true},
		{"a 2025-06-18 session", older, call("22", "execute", `{"code":"return [1]"}`), http.Header{"Mcp-Protocol-Version": {"2025-06-18"}}, true},
		{"a 2025-03-26 session", oldest, call("23", "search", `{"query":"x"}`), http.Header{"Mcp-Protocol-Version": {"2025-03-26"}}, true},
		{"an eliciting client's search", eliciting, call("24", "search", `{"query":"x"}`), nil, true},

		// Declined: go-sdk answers both.
		{"an eliciting client's execute", eliciting, call("30", "execute", `{"code":"return 1"}`), nil, false},
		{"an id with an escape", plain, call(`"a\u0041"`, "search", `{"query":"x"}`), nil, false},
		{"an id with an HTML character", plain, call(`"a<b"`, "search", `{"query":"x"}`), nil, false},
		{"a fractional id", plain, call(`1.5`, "search", `{"query":"x"}`), nil, false},
		{"an id with an exponent", plain, call(`1e2`, "search", `{"query":"x"}`), nil, false},
		{"a large id", plain, call(`12345678901234567`, "search", `{"query":"x"}`), nil, false},
		{"a null id", plain, call(`null`, "search", `{"query":"x"}`), nil, false},
		{"a notification", plain, `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"search","arguments":{"query":"x"}}}`, nil, false},
		{"a progress token", plain, `{"jsonrpc":"2.0","id":31,"method":"tools/call","params":{"_meta":{"progressToken":"p"},"name":"search","arguments":{"query":"x"}}}`, nil, false},
		{"a protocol version in _meta", plain, `{"jsonrpc":"2.0","id":32,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25"},"name":"search","arguments":{"query":"x"}}}`, nil, false},
		{"a _meta that is not an object", plain, `{"jsonrpc":"2.0","id":33,"method":"tools/call","params":{"_meta":[1],"name":"search","arguments":{"query":"x"}}}`, nil, false},
		{"a task", plain, `{"jsonrpc":"2.0","id":34,"method":"tools/call","params":{"name":"search","arguments":{"query":"x"},"task":{"ttl":1000}}}`, nil, false},
		{"arguments that are a number", plain, call("35", "search", `5`), nil, false},
		{"arguments that are null", plain, call("36", "search", `null`), nil, false},
		{"arguments that are a list", plain, call("37", "execute", `["return 1"]`), nil, false},
		{"a member twice", plain, `{"jsonrpc":"2.0","id":38,"id":39,"method":"tools/call","params":{"name":"search","arguments":{"query":"x"}}}`, nil, false},
		{"a name twice", plain, `{"jsonrpc":"2.0","id":40,"method":"tools/call","params":{"name":"search","name":"execute","arguments":{"code":"return 1"}}}`, nil, false},
		{"a member in capitals", plain, `{"jsonrpc":"2.0","id":41,"Method":"tools/call","params":{"name":"search","arguments":{"query":"x"}}}`, nil, false},
		{"an escaped method", plain, `{"jsonrpc":"2.0","id":42,"method":"tools\/call","params":{"name":"search","arguments":{"query":"x"}}}`, nil, false},
		{"an escaped tool name", plain, `{"jsonrpc":"2.0","id":43,"method":"tools/call","params":{"name":"sear\u0063h","arguments":{"query":"x"}}}`, nil, false},
		{"not UTF-8", plain, call("44", "execute", "{\"code\":\"return '\xff'\"}"), nil, false},
		{"an unknown member", plain, `{"jsonrpc":"2.0","id":45,"x":1,"method":"tools/call","params":{"name":"search","arguments":{"query":"x"}}}`, nil, false},
		{"another jsonrpc", plain, strings.Replace(call("46", "search", `{"query":"x"}`), `"2.0"`, `"1.0"`, 1), nil, false},
		{"an unknown tool", plain, call("47", "nosuch", `{}`), nil, false},
		{"a batch", plain, `[` + call("48", "search", `{"query":"x"}`) + `]`, nil, false},
		{"not JSON", plain, `{"jsonrpc":"2.0","id":49,`, nil, false},
		{"trailing data", plain, call("50", "search", `{"query":"x"}`) + `{}`, nil, false},
		{"ping", plain, `{"jsonrpc":"2.0","id":51,"method":"ping"}`, nil, false},
		{"tools/list", plain, `{"jsonrpc":"2.0","id":52,"method":"tools/list"}`, nil, false},
		{"no protocol header", plain, call("53", "search", `{"query":"x"}`), http.Header{"Mcp-Protocol-Version": nil}, false},
		{"an unknown protocol header", plain, call("54", "search", `{"query":"x"}`), http.Header{"Mcp-Protocol-Version": {"2024-01-01"}}, false},
		{"accepting JSON only", plain, call("55", "search", `{"query":"x"}`), http.Header{"Accept": {"application/json"}}, false},
		{"Content-Type text", plain, call("56", "search", `{"query":"x"}`), http.Header{"Content-Type": {"text/plain"}}, false},
		{"a bad Content-Type", plain, call("57", "search", `{"query":"x"}`), http.Header{"Content-Type": {"application/json; ="}}, false},
		{"Last-Event-ID", plain, call("58", "search", `{"query":"x"}`), http.Header{"Last-Event-Id": {"x_1"}}, false},
		{"a session that never was", session{"NEVERGIVEN", "NEVERGIVEN"}, call("59", "search", `{"query":"x"}`), nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			do := func(handler http.Handler, sid string) httpAnswer {
				hdr := http.Header{"Mcp-Protocol-Version": {"2025-11-25"}, "Mcp-Session-Id": {sid}}
				for k, v := range tc.hdr {
					if v == nil {
						hdr.Del(k)
					} else {
						hdr[k] = v
					}
				}
				return answer(handler, hdr, tc.body)
			}
			before := sessionCallsTaken.Load()
			got := do(fastHandler, tc.sess.fast)
			if took := sessionCallsTaken.Load() > before; took != tc.fast {
				t.Errorf("the hub took it: %v, want %v", took, tc.fast)
			}
			want := do(sdkHandler, tc.sess.sdk)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("the hub's answer differs from go-sdk's (-go-sdk +hub):\n%s", diff)
			}
		})
	}
}

// TestSessionCallWhenTheHubIsUnavailable: a server whose Unavailable
// returns an error answers a session's call with it, with or without
// go-sdk.
func TestSessionCallWhenTheHubIsUnavailable(t *testing.T) {
	h, _ := corpusHub(t)
	var gone error
	unavailable := func() error { return gone }
	fast := New(h, Options{Unavailable: unavailable})
	t.Cleanup(fast.Close)
	sdk := New(h, Options{Unavailable: unavailable})
	t.Cleanup(sdk.Close)
	sdk.calls = nil
	fh, sh := fast.HTTPHandler(testToken), sdk.HTTPHandler(testToken)
	fsid, ssid := openSession(t, fh, "2025-11-25", `{}`), openSession(t, sh, "2025-11-25", `{}`)
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"execute","arguments":{"code":"return 1"}}}`
	for _, msg := range []string{"", "the hub at /x was removed; serve another"} {
		gone = nil
		if msg != "" {
			gone = jsonError(msg)
		}
		before := sessionCallsTaken.Load()
		got := answer(fh, http.Header{"Mcp-Protocol-Version": {"2025-11-25"}, "Mcp-Session-Id": {fsid}}, body)
		if sessionCallsTaken.Load() == before {
			t.Fatal("the hub declined")
		}
		want := answer(sh, http.Header{"Mcp-Protocol-Version": {"2025-11-25"}, "Mcp-Session-Id": {ssid}}, body)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("unavailable %q: the hub's answer differs from go-sdk's (-go-sdk +hub):\n%s", msg, diff)
		}
		if msg != "" && !strings.Contains(got.Body, "was removed") {
			t.Errorf("unavailable %q: answered %s", msg, got.Body)
		}
	}
}

// TestSessionCallCancelled: a call the hub answers itself is cancelled by
// the client's notifications/cancelled (which go-sdk still answers 202), as
// one go-sdk holds is, and a session that closes cancels its calls.
func TestSessionCallCancelled(t *testing.T) {
	h, _ := corpusHub(t)
	for _, tc := range []struct {
		name string
		end  func(handler http.Handler, sid string) int
	}{
		{"notifications/cancelled", func(handler http.Handler, sid string) int {
			return serveOne(handler, http.Header{"Mcp-Protocol-Version": {"2025-11-25"}, "Mcp-Session-Id": {sid}},
				`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"the person stopped it"}}`).Code
		}},
		{"the session deleted", func(handler http.Handler, sid string) int {
			req := httptest.NewRequestWithContext(context.Background(), http.MethodDelete, "http://127.0.0.1:4790/mcp", nil)
			req.Header.Set("Authorization", "Bearer "+testToken)
			req.Header.Set("Mcp-Session-Id", sid)
			req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
			rec := httptest.NewRecorder()
			handler.ServeHTTP(rec, req)
			return rec.Code
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := New(h, Options{})
			t.Cleanup(s.Close)
			handler := s.HTTPHandler(testToken)
			sid := openSession(t, handler, "2025-11-25", `{}`)
			before := sessionCallsTaken.Load()
			done := make(chan httpAnswer, 1)
			go func() {
				done <- answer(handler, http.Header{"Mcp-Protocol-Version": {"2025-11-25"}, "Mcp-Session-Id": {sid}},
					`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"execute","arguments":{"code":"for (;;) {}"}}}`)
			}()
			// Wait until the call is under way here.
			deadline := time.Now().Add(testenv.Timeout(10 * time.Second))
			for sessionCallsTaken.Load() == before {
				if time.Now().After(deadline) {
					t.Fatal("the call never reached the hub's handler")
				}
				time.Sleep(time.Millisecond)
			}
			time.Sleep(50 * time.Millisecond) // the run has started
			if code := tc.end(handler, sid); code != http.StatusAccepted && code != http.StatusNoContent {
				t.Errorf("ending: HTTP %d", code)
			}
			select {
			case a := <-done:
				if !strings.Contains(a.Body, `cancelled`) {
					t.Errorf("the cancelled call answered %d %s", a.Status, a.Body)
				}
			case <-time.After(testenv.Timeout(10 * time.Second)):
				t.Fatal("the call went on after it was cancelled")
			}
		})
	}
}

// TestSessionCallsWithTheTypeScriptSDK: the TypeScript SDK 1.x client, on an
// HTTP session, gets search, describe and execute answered by the hub
// itself, takes each reply (execute's validated against its output
// schema), and cancels a call: the run stops and the session goes on.
func TestSessionCallsWithTheTypeScriptSDK(t *testing.T) {
	testenv.NPMPath(t, "@modelcontextprotocol/sdk/package.json")
	h, target := corpusHub(t)
	s := New(h, Options{})
	t.Cleanup(s.Close)
	ts := httptest.NewServer(s.HTTPHandler(testToken))
	t.Cleanup(ts.Close)
	before := sessionCallsTaken.Load()
	cmd := exec.Command(testenv.Node(t), filepath.Join(testenv.Root(t), "testdata", "clients", "session_calls.mjs"))
	cmd.Env = append(os.Environ(), "URL="+ts.URL+"/mcp", "TOKEN="+testToken, "DESCRIBE="+target)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	raw, err := cmd.Output()
	if err != nil {
		t.Fatalf("session_calls.mjs: %v\n%s", err, stderr.String())
	}
	type result struct {
		Text       string
		IsError    bool
		Structured *struct {
			Status string
			Result json.RawMessage
			Error  *struct{ Message string }
		}
	}
	var out struct {
		ProtocolVersion                                   string
		Search, Describe, Execute, Thrown, BadArgs, After result
		Cancelled                                         string
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("session_calls.mjs printed %q: %v", raw, err)
	}
	if out.ProtocolVersion != "2025-11-25" {
		t.Errorf("negotiated %q, want 2025-11-25 (a session)", out.ProtocolVersion)
	}
	if out.Search.IsError || !strings.Contains(out.Search.Text, "(") {
		t.Errorf("search: %+v", out.Search)
	}
	if out.Describe.IsError || !strings.Contains(out.Describe.Text, target[strings.Index(target, ".")+1:]) {
		t.Errorf("describe %s: %+v", target, out.Describe)
	}
	if e := out.Execute.Structured; e == nil || e.Status != "completed" || string(e.Result) != `{"n":2,"s":"é<>&"}` {
		t.Errorf("execute: %+v %s", e, out.Execute.Text)
	}
	if e := out.Thrown.Structured; e == nil || e.Status != "failed" || e.Error == nil || !strings.Contains(e.Error.Message, "no") {
		t.Errorf("execute that throws: %+v %s", e, out.Thrown.Text)
	}
	if !out.BadArgs.IsError || !strings.Contains(out.BadArgs.Text, "invalid arguments") {
		t.Errorf("execute with bad arguments: %+v", out.BadArgs)
	}
	if out.Cancelled != "aborted" {
		t.Errorf("the cancelled execute: %s", out.Cancelled)
	}
	if e := out.After.Structured; e == nil || e.Status != "completed" || string(e.Result) != `"still here"` {
		t.Errorf("execute after the cancelled one: %+v %s", e, out.After.Text)
	}
	// Every call but the cancelled one's reply went through the hub's own
	// answer (the cancelled one too: it was taken before it was cancelled).
	if n := sessionCallsTaken.Load() - before; n != 7 {
		t.Errorf("the hub answered %d of the 7 calls itself", n)
	}
	// The cancelled run ended as cancelled, and nothing is still running.
	deadline := time.Now().Add(testenv.Timeout(10 * time.Second))
	for {
		running, err := h.ListRuns(context.Background(), hub.RunFilter{Status: string(model.RunRunning)})
		if err != nil {
			t.Fatal(err)
		}
		if len(running) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d runs still running after the client cancelled", len(running))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if cancelled, err := h.ListRuns(context.Background(), hub.RunFilter{Status: string(model.RunCancelled)}); err != nil || len(cancelled) != 1 {
		t.Errorf("cancelled runs: %d (%v), want 1", len(cancelled), err)
	}
}

// FuzzObjectMembers: whatever objectMembers reads from valid JSON is what
// encoding/json reads: an object with those members and those values.
func FuzzObjectMembers(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search","arguments":{"query":"x"}}}`,
		`{"method":"tools/call","params":{"name":"execute","arguments":{"code":"return \"}\""}},"jsonrpc":"2.0","id":"a,b"}`,
		` { "id" : [1, {"a": "]"}] , "jsonrpc" : null } `,
		`{}`, `{"id":1,"id":2}`, `{"i\u0064":1}`, `[1]`, `{"params":{"_meta":{}}}`,
	} {
		f.Add([]byte(seed))
	}
	names := []string{"jsonrpc", "id", "method", "params"}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) {
			return
		}
		out := make([]json.RawMessage, len(names))
		if !objectMembers(data, out, names...) {
			return
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatalf("objectMembers read %q, which is no object: %v", data, err)
		}
		for i, n := range names {
			want, ok := m[n]
			if (out[i] != nil) != ok {
				t.Fatalf("%q: member %q present %v, encoding/json says %v", data, n, out[i] != nil, ok)
			}
			if ok && string(out[i]) != string(want) {
				t.Fatalf("%q: member %q is %q, encoding/json says %q", data, n, out[i], want)
			}
		}
		if len(m) != countPresent(out) {
			t.Fatalf("%q: %d members read, encoding/json has %d", data, countPresent(out), len(m))
		}
	})
}

func countPresent(out []json.RawMessage) int {
	n := 0
	for _, v := range out {
		if v != nil {
			n++
		}
	}
	return n
}

// TestSessionCallKeepsTheSessionsUser: on a hosted endpoint, where each
// token names a user, a session opened with one user's token answers
// another user's call 403 (go-sdk's check against session hijacking), with
// or without the hub answering calls itself; its own user's call the hub
// answers.
func TestSessionCallKeepsTheSessionsUser(t *testing.T) {
	h, _ := corpusHub(t)
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		return &auth.TokenInfo{UserID: token, Expiration: time.Now().Add(time.Hour)}, nil
	}
	hosted := func(s *Server) http.Handler {
		return auth.RequireBearerToken(verify, nil)(s.HostedHandler(nil))
	}
	fast := New(h, Options{})
	t.Cleanup(fast.Close)
	sdk := New(h, Options{})
	t.Cleanup(sdk.Close)
	sdk.calls = nil
	fh, sh := hosted(fast), hosted(sdk)
	as := func(user string) http.Header { return http.Header{"Authorization": {"Bearer " + user}} }
	opened := func(handler http.Handler) string {
		rec := serveOne(handler, as("alice"), `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
		sid := rec.Header().Get("Mcp-Session-Id")
		if rec.Code != http.StatusOK || sid == "" {
			t.Fatalf("initialize: HTTP %d: %s", rec.Code, rec.Body)
		}
		return sid
	}
	fsid, ssid := opened(fh), opened(sh)
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search","arguments":{"query":"issue"}}}`
	for _, tc := range []struct {
		user   string
		fast   bool
		status int
	}{{"bob", false, http.StatusForbidden}, {"alice", true, http.StatusOK}, {"", false, http.StatusUnauthorized}} {
		hdr := func(sid string) http.Header {
			h := as(tc.user)
			h.Set("Mcp-Session-Id", sid)
			h.Set("Mcp-Protocol-Version", "2025-11-25")
			return h
		}
		before := sessionCallsTaken.Load()
		got := answer(fh, hdr(fsid), body)
		if took := sessionCallsTaken.Load() > before; took != tc.fast {
			t.Errorf("%q: the hub took it: %v, want %v", tc.user, took, tc.fast)
		}
		want := answer(sh, hdr(ssid), body)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%q: the hub's answer differs from go-sdk's (-go-sdk +hub):\n%s", tc.user, diff)
		}
		if got.Status != tc.status {
			t.Errorf("%q: HTTP %d, want %d: %s", tc.user, got.Status, tc.status, got.Body)
		}
	}
}
