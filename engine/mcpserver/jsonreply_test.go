package mcpserver

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestJSONReply: a POST stream whose first event is the response to its one
// request is answered as application/json; a stream that sends anything
// else first (progress, elicitation), a batch, an event with an id and a
// response that is not an event stream pass through as the SDK wrote them,
// each event flushed as written.
func TestJSONReply(t *testing.T) {
	const (
		resp  = `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"{\"method\":\"x\"}"}],"method":"nested"}}`
		errR  = `{"jsonrpc":"2.0","id":"a","error":{"code":-32601,"message":"no"}}`
		note  = `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1,"result":1}}`
		elicR = `{"jsonrpc":"2.0","id":7,"method":"elicitation/create","params":{"message":"ok?"}}`
	)
	ev := func(data string) string { return "event: message\ndata: " + data + "\n\n" }
	for _, tc := range []struct {
		name     string
		body     string
		events   []string // each written and flushed as the SDK does
		status   int      // WriteHeader before anything, 0 for none
		ct       string   // the handler's Content-Type
		wantCT   string
		wantBody string
	}{
		{"the reply alone", `{"jsonrpc":"2.0","id":1,"method":"tools/call"}`, []string{ev(resp)}, 0, "text/event-stream", "application/json", resp},
		{"an error reply", ` {"jsonrpc":"2.0","id":"a","method":"x"}`, []string{ev(errR)}, 0, "text/event-stream", "application/json", errR},
		{"progress first", `{"jsonrpc":"2.0","id":1,"method":"tools/call"}`, []string{ev(note), ev(resp)}, 0, "text/event-stream", "text/event-stream", ev(note) + ev(resp)},
		{"elicitation first", `{"jsonrpc":"2.0","id":1,"method":"tools/call"}`, []string{ev(elicR), ev(resp)}, 0, "text/event-stream", "text/event-stream", ev(elicR) + ev(resp)},
		{"a batch", `[{"jsonrpc":"2.0","id":1,"method":"tools/call"}]`, []string{ev(resp)}, 0, "text/event-stream", "text/event-stream", ev(resp)},
		{"an event with an id", `{"jsonrpc":"2.0","id":1,"method":"tools/call"}`, []string{"event: message\nid: s_1\ndata: " + resp + "\n\n"}, 0, "text/event-stream", "text/event-stream", "event: message\nid: s_1\ndata: " + resp + "\n\n"},
		{"the SDK's JSON", `{"jsonrpc":"2.0","id":1,"method":"tools/call"}`, []string{errR}, http.StatusBadRequest, "application/json", "application/json", errR},
		{"accepted", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, nil, http.StatusAccepted, "", "", ""},
		{"nothing written", `{"jsonrpc":"2.0","id":1,"method":"tools/call"}`, nil, http.StatusOK, "text/event-stream", "text/event-stream", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &flushRecorder{ResponseRecorder: httptest.NewRecorder()}
			j := &jsonReply{w: rec}
			j.sawBody([]byte(tc.body))
			if tc.ct != "" {
				j.Header().Set("Content-Type", tc.ct)
			}
			if tc.status != 0 {
				j.WriteHeader(tc.status)
			}
			for i, e := range tc.events {
				if _, err := j.Write([]byte(e)); err != nil {
					t.Fatalf("write %d: %v", i, err)
				}
				_ = http.NewResponseController(j).Flush()
				if i == 0 && (rec.flushes != 1 || !strings.Contains(rec.Body.String(), strings.TrimSuffix(e[strings.Index(e, "{"):], "\n\n"))) {
					t.Errorf("after the first event: %d flushes reached the connection and it has %q, want it written and flushed", rec.flushes, rec.Body.String())
				}
			}
			j.finish()
			res := rec.Result()
			want := tc.status
			if want == 0 {
				want = http.StatusOK
			}
			if res.StatusCode != want {
				t.Errorf("status %d, want %d", res.StatusCode, want)
			}
			if got := res.Header.Get("Content-Type"); got != tc.wantCT {
				t.Errorf("Content-Type %q, want %q", got, tc.wantCT)
			}
			if got := rec.Body.String(); got != tc.wantBody {
				t.Errorf("body %q, want %q", got, tc.wantBody)
			}
			if tc.wantCT == "application/json" && tc.status == 0 && res.Header.Get("Content-Length") == "" {
				t.Error("no Content-Length on the JSON reply")
			}
		})
	}
}

type flushRecorder struct {
	*httptest.ResponseRecorder
	flushes int
}

func (f *flushRecorder) Flush() {
	f.flushes++
	f.ResponseRecorder.Flush()
}

// TestHTTPAnswersJSONWhenTheReplyIsAlone: through the real endpoint, a
// request answered by its result alone comes back as application/json, the
// session's id still in its headers.
func TestHTTPAnswersJSONWhenTheReplyIsAlone(t *testing.T) {
	addr := serveHTTP(t, HTTPLimits{})
	post := func(accept string) (string, string) {
		body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
		req, err := http.NewRequestWithContext(context.Background(), "POST", "http://"+addr+"/mcp", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+testToken)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", accept)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Mcp-Session-Id") == "" {
			t.Fatalf("HTTP %d, session %q: %s", resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), b)
		}
		return resp.Header.Get("Content-Type"), string(b)
	}
	ct, body := post("application/json, text/event-stream")
	if ct != "application/json" || !strings.HasPrefix(body, `{"jsonrpc":"2.0","id":1,"result":{`) {
		t.Errorf("accepting both: %q %q, want the result as application/json", ct, body)
	}
}
