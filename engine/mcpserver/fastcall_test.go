package mcpserver

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestFastCallAnswersAsGoSDK: every request, whether the hub answers it
// itself (fastCall) or go-sdk does, gets the answer go-sdk gives: the same
// status, content type, cache control and bytes (run ids aside). Each case
// also says whether fastCall takes it, so a change that made it decline
// everything (or take what it must not) fails too.
func TestFastCallAnswersAsGoSDK(t *testing.T) {
	h, target := corpusHub(t)
	fast := New(h, Options{})
	t.Cleanup(fast.Close)
	sdk := New(h, Options{})
	t.Cleanup(sdk.Close)
	sdk.calls = nil // fastCall declines everything: go-sdk answers
	fastHandler, sdkHandler := fast.HTTPHandler(testToken), sdk.HTTPHandler(testToken)

	const (
		caps = `"io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":true}}`
		info = `"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}`
		ver  = `"io.modelcontextprotocol/protocolVersion":"2026-07-28"`
		meta = `"_meta":{` + caps + `,` + info + `,` + ver + `}`
	)
	call := func(id, tool, args string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{` + meta + `,"name":"` + tool + `","arguments":` + args + `}}`
	}
	for _, tc := range []struct {
		name string
		tool string // Mcp-Name
		body string
		hdr  http.Header
		fast bool // fastCall answers it
	}{
		{"execute completed", "execute", call("2", "execute", `{"code":"return 1"}`), nil, true},
		{"execute with logs", "execute", call("3", "execute", `{"code":"console.log('a<b>&c'); return {x: [1, 'é']}"}`), nil, true},
		{"execute failed", "execute", call("4", "execute", `{"code":"throw new Error('no')"}`), nil, true},
		{"execute reading an unknown global", "execute", call("5", "execute", `{"code":"return nosuch.x()"}`), nil, true},
		{"execute with bad arguments", "execute", call("6", "execute", `{"code":1}`), nil, true},
		{"execute with unknown argument", "execute", call("7", "execute", `{"code":"return 1","x":1}`), nil, true},
		{"execute with no arguments", "execute", `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{` + meta + `,"name":"execute"}}`, nil, true},
		{"execute resuming no run", "execute", call("9", "execute", `{"resume":"r0000000000000000000"}`), nil, true},
		{"search", "search", call("10", "search", `{"query":"create an issue"}`), nil, true},
		{"search with a bad limit", "search", call("11", "search", `{"query":"x","limit":99}`), nil, true},
		{"describe", "describe", call("12", "describe", `{"targets":["`+target+`"]}`), nil, true},
		{"describe unknown", "describe", call("13", "describe", `{"targets":["nosuch.tool"]}`), nil, true},
		{"a string id", "search", call(`"req-1:a.b"`, "search", `{"query":"issue"}`), nil, true},
		{"a negative id", "search", call(`-7`, "search", `{"query":"issue"}`), nil, true},
		{"no clientInfo", "search", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{` + caps + `,` + ver + `},"name":"search","arguments":{"query":"x"}}}`, nil, true},
		{"Content-Type with a charset", "search", call("1", "search", `{"query":"x"}`), http.Header{"Content-Type": {"application/json; charset=utf-8"}}, true},

		// Declined: go-sdk answers both.
		{"an id with an escape", "search", call(`"a\u0041"`, "search", `{"query":"x"}`), nil, false},
		{"an id with an HTML character", "search", call(`"a<b"`, "search", `{"query":"x"}`), nil, false},
		{"a fractional id", "search", call(`1.5`, "search", `{"query":"x"}`), nil, false},
		{"a large id", "search", call(`12345678901234567`, "search", `{"query":"x"}`), nil, false},
		{"a null id", "search", call(`null`, "search", `{"query":"x"}`), nil, false},
		{"a notification", "search", `{"jsonrpc":"2.0","method":"tools/call","params":{` + meta + `,"name":"search","arguments":{"query":"x"}}}`, nil, false},
		{"a progress token", "search", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{` + caps + `,` + ver + `,"progressToken":"p"},"name":"search","arguments":{"query":"x"}}}`, nil, false},
		{"a client that elicits", "execute", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}},` + ver + `},"name":"execute","arguments":{"code":"return 1"}}}`, nil, false},
		{"no clientCapabilities", "search", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{` + ver + `},"name":"search","arguments":{"query":"x"}}}`, nil, false},
		{"bad clientInfo", "search", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{` + caps + `,"io.modelcontextprotocol/clientInfo":"me",` + ver + `},"name":"search","arguments":{"query":"x"}}}`, nil, false},
		{"an older version in _meta", "search", strings.Replace(call("1", "search", `{"query":"x"}`), "2026-07-28", "2025-11-25", 1), nil, false},
		{"no _meta", "search", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search","arguments":{"query":"x"}}}`, nil, false},
		{"input responses", "execute", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{` + meta + `,"name":"execute","arguments":{"code":"return 1"},"inputResponses":{}}}`, nil, false},
		{"a request state", "execute", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{` + meta + `,"name":"execute","arguments":{"code":"return 1"},"requestState":"x"}}`, nil, false},
		{"Mcp-Name another tool", "describe", call("1", "search", `{"query":"x"}`), nil, false},
		{"Mcp-Name missing", "", call("1", "search", `{"query":"x"}`), nil, false},
		{"an unknown tool", "nosuch", call("1", "nosuch", `{}`), nil, false},
		{"a batch", "search", `[` + call("1", "search", `{"query":"x"}`) + `]`, nil, false},
		{"not JSON", "search", `{"jsonrpc":"2.0","id":1,`, nil, false},
		{"trailing data", "search", call("1", "search", `{"query":"x"}`) + `{}`, nil, false},
		{"an unknown member", "search", strings.Replace(call("1", "search", `{"query":"x"}`), `"jsonrpc":"2.0"`, `"jsonrpc":"2.0","x":1`, 1), nil, false},
		{"another jsonrpc", "search", strings.Replace(call("1", "search", `{"query":"x"}`), `"2.0"`, `"1.0"`, 1), nil, false},
		{"accepting JSON only", "search", call("1", "search", `{"query":"x"}`), http.Header{"Accept": {"application/json"}}, false},
		{"Content-Type text", "search", call("1", "search", `{"query":"x"}`), http.Header{"Content-Type": {"text/plain"}}, false},
		{"Mcp-Method another", "search", call("1", "search", `{"query":"x"}`), http.Header{"Mcp-Method": {"tools/list"}}, false},
		{"an older protocol header", "search", call("1", "search", `{"query":"x"}`), http.Header{"Mcp-Protocol-Version": {"2025-11-25"}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hdr := http.Header{"Mcp-Protocol-Version": {"2026-07-28"}, "Mcp-Method": {"tools/call"}}
			if tc.tool != "" {
				hdr.Set("Mcp-Name", tc.tool)
			}
			for k, v := range tc.hdr {
				hdr[k] = v
			}
			if took := fast.fastCall(httptest.NewRecorder(), request(hdr, tc.body)); took != tc.fast {
				t.Errorf("fastCall took it: %v, want %v", took, tc.fast)
			}
			got, want := answer(fastHandler, hdr, tc.body), answer(sdkHandler, hdr, tc.body)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("the hub's answer differs from go-sdk's (-go-sdk +hub):\n%s", diff)
			}
		})
	}
}

// TestFastCallWhenTheHubIsUnavailable: a server whose Unavailable returns
// an error answers every call with it, with or without go-sdk, and one
// whose Unavailable returns nil runs the call.
func TestFastCallWhenTheHubIsUnavailable(t *testing.T) {
	h, _ := corpusHub(t)
	var gone error
	unavailable := func() error { return gone }
	fast := New(h, Options{Unavailable: unavailable})
	t.Cleanup(fast.Close)
	sdk := New(h, Options{Unavailable: unavailable})
	t.Cleanup(sdk.Close)
	sdk.calls = nil
	hdr := http.Header{"Mcp-Protocol-Version": {"2026-07-28"}, "Mcp-Method": {"tools/call"}, "Mcp-Name": {"execute"}}
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"name":"execute","arguments":{"code":"return 1"}}}`
	for _, err := range []error{nil, errors.New("the hub at /x was removed; serve another")} {
		gone = err
		if !fast.fastCall(httptest.NewRecorder(), request(hdr, body)) {
			t.Fatal("fastCall declined")
		}
		got, want := answer(fast.HTTPHandler(testToken), hdr, body), answer(sdk.HTTPHandler(testToken), hdr, body)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("unavailable %v: the hub's answer differs from go-sdk's (-go-sdk +hub):\n%s", err, diff)
		}
		if err != nil && !strings.Contains(got.Body, "was removed") {
			t.Errorf("unavailable %v: answered %s", err, got.Body)
		}
	}
}

// TestFastCallGivesTheBodyBack: a request fastCall declines reaches go-sdk
// with its body whole, even after fastCall read it.
func TestFastCallGivesTheBodyBack(t *testing.T) {
	h, _ := corpusHub(t)
	s := New(h, Options{})
	t.Cleanup(s.Close)
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search","arguments":{"query":"x"}}}`
	r := request(http.Header{"Mcp-Protocol-Version": {"2026-07-28"}, "Mcp-Method": {"tools/call"}, "Mcp-Name": {"search"}}, body)
	if s.fastCall(httptest.NewRecorder(), r) {
		t.Fatal("fastCall took a call without _meta")
	}
	var b strings.Builder
	buf := make([]byte, 7) // small reads, across the part fastCall read
	for {
		n, err := r.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	if b.String() != body {
		t.Errorf("the body after fastCall declined: %q, want %q", b.String(), body)
	}
}

type httpAnswer struct {
	Status                    int
	ContentType, CacheControl string
	SessionID                 string
	Body                      string
}

var runIDs = regexp.MustCompile(`r[0-9a-f]{20}`)

// answer serves one POST and returns what the client sees, run ids made
// alike.
func answer(handler http.Handler, hdr http.Header, body string) httpAnswer {
	rec := httptest.NewRecorder()
	handler.ServeHTTP(rec, request(hdr, body))
	return httpAnswer{
		Status:       rec.Code,
		ContentType:  rec.Header().Get("Content-Type"),
		CacheControl: rec.Header().Get("Cache-Control"),
		SessionID:    rec.Header().Get("Mcp-Session-Id"),
		Body:         runIDs.ReplaceAllString(rec.Body.String(), "r<id>"),
	}
}

func request(hdr http.Header, body string) *http.Request {
	req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1:4790/mcp", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		req.Header[k] = v
	}
	return req
}
