package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/capabilities-sh/capabilities/store"
	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// TestStdioKeepsServingAfterMalformedInput: garbage, a message without
// "jsonrpc", one without a method and a broken batch each get a JSON-RPC
// error, and the session goes on to answer initialize and tools/list.
func TestStdioKeepsServingAfterMalformedInput(t *testing.T) {
	h := hub.New(store.NewMem(), hub.Options{})
	defer h.Close()
	s := New(h, Options{})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = s.Serve(ctx, inR, outW); outW.Close() }()
	lines := []string{
		`not json at all`,
		`{"id":5,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":6}`,
		`[1,2`,
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
	}
	go func() {
		for _, l := range lines {
			_, _ = io.WriteString(inW, l+"\n")
		}
	}()
	want := map[string]int{"null": -32700, "5": -32600, "6": -32600}
	got := map[string]int{}
	var tools []string
	sc := bufio.NewScanner(outR)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	deadline := time.After(testenv.Timeout(10 * time.Second))
	done := make(chan struct{})
	go func() {
		defer close(done)
		for sc.Scan() {
			var m struct {
				ID     json.RawMessage
				Error  *struct{ Code int }
				Result *struct {
					Tools []struct{ Name string }
				}
			}
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				t.Errorf("the server wrote a non-JSON line: %s", sc.Text())
				return
			}
			if m.Error != nil {
				got[string(m.ID)] = m.Error.Code
			}
			if string(m.ID) == "2" && m.Result != nil {
				for _, tl := range m.Result.Tools {
					tools = append(tools, tl.Name)
				}
				return
			}
		}
	}()
	select {
	case <-done:
	case <-deadline:
		t.Fatal("no answer to tools/list after malformed input: the session ended")
	}
	for id, code := range want {
		if got[id] != code {
			t.Errorf("message id %s: error code %d, want %d", id, got[id], code)
		}
	}
	if strings.Join(tools, ",") != "search,describe,execute" && strings.Join(tools, ",") != "describe,execute,search" {
		t.Errorf("tools/list after malformed input = %v", tools)
	}
	_ = inW.Close()
}

// stdioSession serves s over pipes and sends one request at a time.
type stdioSession struct {
	t  *testing.T
	in io.WriteCloser
	sc *bufio.Scanner
}

func serveStdio(t *testing.T) *stdioSession {
	t.Helper()
	h := hub.New(store.NewMem(), hub.Options{})
	t.Cleanup(func() { h.Close() })
	s := New(h, Options{})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = s.Serve(ctx, inR, outW); outW.Close() }()
	t.Cleanup(func() { inW.Close() })
	sc := bufio.NewScanner(outR)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	return &stdioSession{t: t, in: inW, sc: sc}
}

// reply is what the test reads of an answer.
type reply struct {
	Error           *struct{ Code int }
	ResultType      string
	Versions        []string
	Tools           []string
	ProtocolVersion string
}

// send writes line (a request with id 1) and returns its answer, with the
// error's message apart.
func (s *stdioSession) send(line string) (reply, string) {
	s.t.Helper()
	if _, err := io.WriteString(s.in, line+"\n"); err != nil {
		s.t.Fatal(err)
	}
	for s.sc.Scan() {
		var m struct {
			ID    json.RawMessage
			Error *struct {
				Code    int
				Message string
			}
			Result *struct {
				ResultType        string
				SupportedVersions []string
				ProtocolVersion   string
				Tools             []struct{ Name string }
			}
		}
		if err := json.Unmarshal(s.sc.Bytes(), &m); err != nil {
			s.t.Fatalf("the server wrote a non-JSON line: %s", s.sc.Text())
		}
		if string(m.ID) != "1" {
			continue // a notification
		}
		var r reply
		var msg string
		if m.Error != nil {
			r.Error = &struct{ Code int }{m.Error.Code}
			msg = m.Error.Message
		}
		if m.Result != nil {
			r.ResultType, r.Versions, r.ProtocolVersion = m.Result.ResultType, m.Result.SupportedVersions, m.Result.ProtocolVersion
			for _, tl := range m.Result.Tools {
				r.Tools = append(r.Tools, tl.Name)
			}
			sort.Strings(r.Tools)
		}
		return r, msg
	}
	s.t.Fatalf("the server closed stdout before answering: %v", s.sc.Err())
	return reply{}, ""
}

// TestStdioServesBothEras: one serve --stdio session answers a client of
// protocol 2026-07-28 (server/discover and tools/list carrying the version
// in _meta) and, in another session, an older client's initialize. A
// server/discover without that envelope is refused with a message that says
// what it lacks, not a bare "method not found" that reads as if stdio had
// no 2026-07-28.
func TestStdioServesBothEras(t *testing.T) {
	const envelope = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}},"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}}`
	tools := []string{"describe", "execute", "search"}
	modern := []string{"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}
	for _, tc := range []struct {
		name    string
		lines   []string // each a request with id 1, sent in turn on one session
		want    []reply
		message []string // a part of each answer's error message
	}{
		{
			name: "2026-07-28",
			lines: []string{
				`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{` + envelope + `}}`,
				`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + envelope + `}}`,
			},
			want: []reply{{ResultType: "complete", Versions: modern}, {ResultType: "complete", Tools: tools}},
		},
		{
			name: "2025-11-25",
			lines: []string{
				`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
				`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
				`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
			},
			want: []reply{{ProtocolVersion: "2025-11-25"}, {Tools: tools}},
		},
		{
			name: "server/discover without the envelope",
			lines: []string{
				`{"jsonrpc":"2.0","id":1,"method":"server/discover"}`,
				`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25"}}}`,
				`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{` + envelope + `}}`,
			},
			want: []reply{{Error: &struct{ Code int }{-32601}}, {Error: &struct{ Code int }{-32601}}, {ResultType: "complete", Versions: modern}},
			message: []string{
				`needs that revision's envelope: params._meta with "io.modelcontextprotocol/protocolVersion": "2026-07-28"`,
				`"io.modelcontextprotocol/clientCapabilities"`,
				"",
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := serveStdio(t)
			var got []reply
			i := 0
			for _, l := range tc.lines {
				if !strings.Contains(l, `"id":1`) {
					if _, err := io.WriteString(s.in, l+"\n"); err != nil {
						t.Fatal(err)
					}
					continue
				}
				r, msg := s.send(l)
				got = append(got, r)
				if i < len(tc.message) && !strings.Contains(msg, tc.message[i]) {
					t.Errorf("answer %d: message %q lacks %q", i, msg, tc.message[i])
				}
				i++
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("answers (-want +got):\n%s", diff)
			}
		})
	}
}

// checkCases are lines check answers itself (want set) or passes on to the
// SDK (want zero): each malformed shape that would end go-sdk's stdio
// session, and valid messages next to them.
var checkCases = []struct {
	name string
	line string
	want checked
}{
	// Passed on.
	{name: "string id", line: `{"jsonrpc":"2.0","id":"a-1","method":"tools/list"}`},
	{name: "integer id", line: `{"jsonrpc":"2.0","id":7,"method":"tools/list"}`},
	{name: "negative id", line: `{"jsonrpc":"2.0","id":-7,"method":"tools/list"}`},
	{name: "integer id written 1.0", line: `{"jsonrpc":"2.0","id":1.0,"method":"tools/list"}`},
	{name: "integer id written 1e2", line: `{"jsonrpc":"2.0","id":1e2,"method":"tools/list"}`},
	{name: "largest exact id", line: `{"jsonrpc":"2.0","id":-9007199254740991,"method":"tools/list"}`},
	{name: "notification", line: `{"jsonrpc":"2.0","method":"notifications/initialized"}`},
	{name: "notification with a null id", line: `{"jsonrpc":"2.0","method":"x","id":null}`},
	{name: "response with a result", line: `{"jsonrpc":"2.0","id":"s-1","result":{"action":"accept"}}`},
	{name: "response with a null result", line: `{"jsonrpc":"2.0","id":3,"result":null}`},
	{name: "response with an error", line: `{"jsonrpc":"2.0","id":"s-1","error":{"code":-32000,"message":"declined","data":{"why":1}}}`},
	{name: "response with a null error", line: `{"jsonrpc":"2.0","id":"s-1","result":{},"error":null}`},
	{name: "member order and unknown members", line: `{"method":"ping","x":{"id":[]},"id":2,"jsonrpc":"2.0"}`},
	{name: "1000 deep", line: `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"a":` + strings.Repeat("[", 997) + strings.Repeat("]", 997) + `}}}`},

	// Answered.
	{name: "not JSON", line: `not json`, want: checked{"null", -32700, "parse error: the line is not valid JSON (each message is one JSON-RPC 2.0 object per line)"}},
	{name: "not an object", line: `null`, want: checked{"null", -32600, "invalid request: a message must be a JSON object"}},
	{name: "batch", line: `[{"jsonrpc":"2.0","id":5,"method":"tools/list"}]`, want: checked{"null", -32600, "invalid request: batches (a JSON array of messages) are not supported; send each JSON-RPC message as an object on a line of its own"}},
	{name: "empty batch", line: `[]`, want: checked{"null", -32600, "invalid request: batches (a JSON array of messages) are not supported; send each JSON-RPC message as an object on a line of its own"}},
	{name: "batch of a number", line: `[1]`, want: checked{"null", -32600, "invalid request: batches (a JSON array of messages) are not supported; send each JSON-RPC message as an object on a line of its own"}},
	{name: "object id", line: `{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}`, want: checked{"null", -32600, `invalid request: "id" must be a string or an integer (got an object)`}},
	{name: "boolean id", line: `{"jsonrpc":"2.0","id":true,"method":"tools/list"}`, want: checked{"null", -32600, `invalid request: "id" must be a string or an integer (got a boolean)`}},
	{name: "array id", line: `{"jsonrpc":"2.0","id":[1],"method":"tools/list"}`, want: checked{"null", -32600, `invalid request: "id" must be a string or an integer (got an array)`}},
	{name: "fractional id", line: `{"jsonrpc":"2.0","id":1.5,"method":"tools/list"}`, want: checked{"null", -32600, `invalid request: "id" must be a string or an integer (got 1.5)`}},
	{name: "tiny id", line: `{"jsonrpc":"2.0","id":1e-400,"method":"tools/list"}`, want: checked{"null", -32600, `invalid request: "id" must be a string or an integer (got 1e-400)`}},
	{name: "id beyond float64", line: `{"jsonrpc":"2.0","id":1e400,"method":"tools/list"}`, want: checked{"null", -32600, `invalid request: "id" 1e400 is beyond the integers this server answers exactly (up to 9007199254740991 either side of 0); use a smaller integer or a string`}},
	{name: "id beyond 2^53", line: `{"jsonrpc":"2.0","id":9007199254740993,"method":"tools/list"}`, want: checked{"null", -32600, `invalid request: "id" 9007199254740993 is beyond the integers this server answers exactly (up to 9007199254740991 either side of 0); use a smaller integer or a string`}},
	{name: "id given twice, the last an object", line: `{"jsonrpc":"2.0","id":3,"id":{},"method":"tools/list"}`, want: checked{"null", -32600, `invalid request: "id" must be a string or an integer (got an object)`}},
	{name: "id given twice, the first an object", line: `{"jsonrpc":"2.0","id":{},"id":3,"method":"tools/list"}`, want: checked{"null", -32600, `invalid request: "id" appears more than once in the message`}},
	{name: "id given twice, both valid", line: `{"jsonrpc":"2.0","id":4,"id":3,"method":"tools/list"}`, want: checked{"null", -32600, `invalid request: "id" appears more than once in the message`}},
	{name: "no jsonrpc", line: `{"id":5,"method":"tools/list"}`, want: checked{"5", -32600, `invalid request: "jsonrpc" must be "2.0"`}},
	{name: "jsonrpc a number", line: `{"jsonrpc":2.0,"id":5,"method":"tools/list"}`, want: checked{"5", -32600, `invalid request: "jsonrpc" must be "2.0"`}},
	{name: "JSONRPC in capitals", line: `{"JSONRPC":"2.0","id":"q","method":"tools/list"}`, want: checked{`"q"`, -32600, `invalid request: "jsonrpc" must be "2.0" (found "JSONRPC": member names are case-sensitive)`}},
	{name: "no method", line: `{"jsonrpc":"2.0","id":6}`, want: checked{"6", -32600, `invalid request: no "method" (nor a "result" or "error" answering the server)`}},
	{name: "Method capitalized", line: `{"jsonrpc":"2.0","id":6,"Method":"tools/list"}`, want: checked{"6", -32600, `invalid request: no "method" (nor a "result" or "error" answering the server) (found "Method": member names are case-sensitive)`}},
	{name: "empty method", line: `{"jsonrpc":"2.0","id":6,"method":""}`, want: checked{"6", -32600, `invalid request: "method" is empty`}},
	{name: "method a number", line: `{"jsonrpc":"2.0","id":6,"method":5}`, want: checked{"6", -32600, `invalid request: "method" must be a string (got 5)`}},
	{name: "method null", line: `{"jsonrpc":"2.0","id":6,"method":null,"result":{}}`, want: checked{"6", -32600, `invalid request: "method" must be a string (got null)`}},
	{name: "error a number", line: `{"jsonrpc":"2.0","id":"x","error":5}`, want: checked{`"x"`, -32600, `invalid request: "error" must be an object with an integer "code" and a string "message" (got 5)`}},
	{name: "error without code", line: `{"jsonrpc":"2.0","id":"x","error":{"message":"m"}}`, want: checked{`"x"`, -32600, `invalid request: "error" must be an object with an integer "code" and a string "message" (no "code")`}},
	{name: "error without message", line: `{"jsonrpc":"2.0","id":"x","error":{"code":1}}`, want: checked{`"x"`, -32600, `invalid request: "error" must be an object with an integer "code" and a string "message" (no "message")`}},
	{name: "error code a string", line: `{"jsonrpc":"2.0","id":"x","error":{"code":"1","message":"m"}}`, want: checked{`"x"`, -32600, `invalid request: "error" must be an object with an integer "code" and a string "message" ("code" is a string)`}},
	{name: "error code fractional", line: `{"jsonrpc":"2.0","id":"x","error":{"code":1.5,"message":"m"}}`, want: checked{`"x"`, -32600, `invalid request: "error" must be an object with an integer "code" and a string "message" ("code" is 1.5)`}},
	{name: "error code beyond int64", line: `{"jsonrpc":"2.0","id":"x","error":{"code":99999999999999999999,"message":"m"}}`, want: checked{`"x"`, -32600, `invalid request: "error" must be an object with an integer "code" and a string "message" ("code" is 99999999999999999999)`}},
	{name: "error message a number", line: `{"jsonrpc":"2.0","id":"x","error":{"code":1,"message":5}}`, want: checked{`"x"`, -32600, `invalid request: "error" must be an object with an integer "code" and a string "message" ("message" is 5)`}},
	{name: "error code twice", line: `{"jsonrpc":"2.0","id":"x","error":{"code":1,"code":"x","message":"m"}}`, want: checked{`"x"`, -32600, `invalid request: "error" must be an object with an integer "code" and a string "message" ("code" appears more than once)`}},
	{name: "a request with an error a number", line: `{"jsonrpc":"2.0","id":2,"method":"ping","error":5}`, want: checked{"2", -32600, `invalid request: "error" must be an object with an integer "code" and a string "message" (got 5)`}},
	{name: "error given twice", line: `{"jsonrpc":"2.0","id":"x","error":5,"error":null}`, want: checked{`"x"`, -32600, `invalid request: "error" appears more than once in the message`}},
	{name: "result and error", line: `{"jsonrpc":"2.0","id":"x","result":{},"error":{"code":1,"message":"m"}}`, want: checked{`"x"`, -32600, `invalid request: a response carries either "result" or "error", not both`}},
	{name: "response with a null id", line: `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"m"}}`, want: checked{"null", -32600, `invalid request: a response (a message with "result" or "error" and no "method") needs the "id" of the request it answers`}},
	{name: "response without id", line: `{"jsonrpc":"2.0","ID":1,"result":{}}`, want: checked{"null", -32600, `invalid request: a response (a message with "result" or "error" and no "method") needs the "id" of the request it answers (found "ID": member names are case-sensitive)`}},
	{name: "1001 deep", line: `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"a":` + strings.Repeat("[", 998) + strings.Repeat("]", 998) + `}}}`, want: checked{"1", -32600, "invalid request: the message nests arrays and objects more than 1000 deep"}},
	{name: "over the size limit", line: bigLine(`"big"`, MaxBodyBytes+1), want: checked{`"big"`, -32600, "invalid request: the message is 1048577 bytes, over the limit of 1048576 bytes"}},
	{name: "server/discover without the envelope", line: `{"jsonrpc":"2.0","id":1,"method":"server/discover"}`, want: checked{"1", -32601, `server/discover is a request of protocol 2026-07-28 or later and needs that revision's envelope: params._meta with "io.modelcontextprotocol/protocolVersion": "2026-07-28" and "io.modelcontextprotocol/clientCapabilities": {…}. A client of an earlier revision starts with initialize instead.`}},
}

// checked is what a test reads of check's reply: zero for none.
type checked struct {
	ID      string
	Code    int
	Message string
}

// bigLine is a ping with id of exactly n bytes.
func bigLine(id string, n int) string {
	head, tail := `{"jsonrpc":"2.0","id":`+id+`,"method":"ping","params":{"_meta":{"pad":"`, `"}}}`
	return head + strings.Repeat("a", n-len(head)-len(tail)) + tail
}

// check answers each line go-sdk's stdio transport could not decode, which
// would end the session, and passes valid messages on.
func TestCheck(t *testing.T) {
	for _, tc := range checkCases {
		t.Run(tc.name, func(t *testing.T) {
			var got checked
			if r := check([]byte(tc.line)); r != nil {
				got = checked{string(r.ID), r.Error.Code, r.Error.Message}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("check(%.200s) (-want +got):\n%s", tc.line, diff)
			}
		})
	}
	if r := check([]byte(bigLine(`"big"`, MaxBodyBytes))); r != nil {
		t.Errorf("a line of %d bytes, the limit, was answered: %s", MaxBodyBytes, r.Error.Message)
	}
}

// Every line check answers, sent between requests on one stdio session,
// gets its error reply, and every request after it its answer: none ends
// the session. Lines check passes on that the SDK answers nothing to (a
// notification with a null id, an answer to no request of the server's)
// end it neither; nor do two lines of the largest size passed on.
func TestStdioAnswersEachMalformedLine(t *testing.T) {
	s := serveStdio(t)
	lines := make(chan string)
	go func() {
		defer close(lines)
		for s.sc.Scan() {
			lines <- s.sc.Text()
		}
	}()
	type msg struct {
		ID     json.RawMessage
		Method string
		Result json.RawMessage
		Error  *struct {
			Code    int
			Message string
		}
	}
	send := func(lines ...string) {
		t.Helper()
		if _, err := io.WriteString(s.in, strings.Join(lines, "\n")+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	// until reads up to the answer to request id, which must be a result,
	// and returns the answers that came before it.
	until := func(id string) []msg {
		t.Helper()
		var before []msg
		deadline := time.After(testenv.Timeout(10 * time.Second))
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("the session ended before answering %s", id)
				}
				var m msg
				if err := json.Unmarshal([]byte(l), &m); err != nil {
					t.Fatalf("the server wrote a non-JSON line: %s", l)
				}
				if m.Method != "" {
					continue // the server's notification or request
				}
				if string(m.ID) == id {
					if m.Result == nil {
						t.Errorf("request %s was not answered with a result: %s", id, l)
					}
					return before
				}
				before = append(before, m)
			case <-deadline:
				t.Fatalf("no answer to request %s: the session ended", id)
			}
		}
	}
	// exchange sends line, then a ping, and returns the answers that came
	// before the ping's. The filter writes its reply to a line before it
	// reads the next.
	exchange := func(line, ping string) []msg {
		t.Helper()
		send(line, `{"jsonrpc":"2.0","id":"`+ping+`","method":"ping"}`)
		return until(`"` + ping + `"`)
	}
	exchange(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`+"\n"+`{"jsonrpc":"2.0","method":"notifications/initialized"}`, "ready")
	for i, tc := range checkCases {
		if tc.want == (checked{}) || tc.want.Code == -32601 {
			continue
		}
		before := exchange(tc.line, fmt.Sprint("good-", i))
		var got []checked
		for _, m := range before {
			c := checked{ID: string(m.ID)}
			if m.Error != nil {
				c.Code, c.Message = m.Error.Code, m.Error.Message
			}
			got = append(got, c)
		}
		if diff := cmp.Diff([]checked{tc.want}, got); diff != "" {
			t.Errorf("%s: replies to %.100s (-want +got):\n%s", tc.name, tc.line, diff)
		}
	}
	for i, line := range []string{
		`{"jsonrpc":"2.0","method":"x","id":null}`,
		`{"jsonrpc":"2.0","id":"no-such-request","result":{}}`,
		`{"jsonrpc":"2.0","id":12345,"error":{"code":-1,"message":"m"}}`,
	} {
		if got := exchange(line, fmt.Sprint("quiet-", i)); len(got) != 0 {
			t.Errorf("replies to %s: %+v, want none", line, got)
		}
	}
	for i := range 2 {
		id := fmt.Sprint(`"big-`, i, `"`)
		send(bigLine(id, maxLine))
		if got := until(id); len(got) != 0 {
			t.Errorf("a ping of %d bytes: replies before its answer: %+v", maxLine, got)
		}
	}
}

// check never panics, and a line it passes on is one go-sdk decodes. The
// seeds are the lines of TestCheck, and a request and a response with each
// member go-sdk reads set to each of a range of values in turn.
func FuzzCheck(f *testing.F) {
	for _, tc := range checkCases {
		if len(tc.line) < 4096 {
			f.Add(tc.line)
		}
	}
	values := []string{`null`, `true`, `0`, `-1`, `1.5`, `1e2`, `1e400`, `-0`, `""`, `"2.0"`, `"x"`, `{}`, `[]`, `[1]`,
		`{"code":1,"message":"m"}`, `{"code":1}`, `{"code":null,"message":null}`, `{"code":"1","message":"m"}`, `{"code":1,"message":"m","data":[]}`}
	for _, base := range [][2]string{{"method", `"ping"`}, {"result", `{}`}} {
		for _, name := range []string{"jsonrpc", "id", "method", "params", "result", "error"} {
			for _, v := range values {
				members := map[string]string{"jsonrpc": `"2.0"`, "id": `1`, base[0]: base[1], name: v}
				var b strings.Builder
				for _, k := range []string{"jsonrpc", "id", "method", "params", "result", "error"} {
					if v, ok := members[k]; ok {
						fmt.Fprintf(&b, ",%q:%s", k, v)
					}
				}
				f.Add("{" + b.String()[1:] + "}")
			}
		}
	}
	f.Fuzz(func(t *testing.T, line string) {
		b := bytes.TrimSpace([]byte(line))
		if len(b) == 0 || bytes.IndexByte(b, '\n') >= 0 {
			return // filterRequests passes check neither
		}
		r := check(b)
		if r == nil {
			if _, err := jsonrpc.DecodeMessage(b); err != nil {
				t.Errorf("check passed %q, which go-sdk does not decode: %v", b, err)
			}
			return
		}
		out, err := json.Marshal(r)
		if err != nil || !json.Valid(out) {
			t.Errorf("the reply to %q does not encode: %v", b, err)
		}
	})
}

// A client that writes its requests and closes its end at once (printf …
// | capabilities hub serve --stdio) gets an answer to each, a slow one
// included, before the session ends.
func TestStdioAnswersWhatWasReadBeforeTheEnd(t *testing.T) {
	h := hub.New(store.NewMem(), hub.Options{})
	defer h.Close()
	s := New(h, Options{})
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"execute","arguments":{"code":"await new Promise(r => setTimeout(r, 300)); return 41 + 1"}}}`,
	}, "\n") + "\n"
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(60*time.Second))
	defer cancel()
	_ = s.Serve(ctx, strings.NewReader(in), &out)
	answered := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var m struct {
			ID     json.RawMessage
			Result json.RawMessage
		}
		if json.Unmarshal([]byte(line), &m) == nil && len(m.ID) > 0 {
			answered[string(m.ID)] = string(m.Result)
		}
	}
	for _, id := range []string{"1", "2", "3"} {
		if answered[id] == "" {
			t.Errorf("request %s was not answered before the session ended; out:\n%s", id, out.String())
		}
	}
	if !strings.Contains(answered["3"], "42") {
		t.Errorf("the execute's answer: %s", answered["3"])
	}
}

// BenchmarkCheck is the stdio filter's look at each line before go-sdk
// reads it: a short execute request and one with 32 KB of code.
//
//	go test ./engine/mcpserver -run '^$' -bench Check -benchmem
func BenchmarkCheck(b *testing.B) {
	for _, c := range []struct{ name, code string }{
		{"short", `const r = await up.echo({message: \"m17\"});\nreturn r`},
		{"32KB", strings.Repeat(`const r = await up.echo({message: \"m17\"});\n`, 700)},
	} {
		line := []byte(`{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"name":"execute","arguments":{"code":"` + c.code + `"},"_meta":{"progressToken":17}}}`)
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(line)))
			b.ReportAllocs()
			for b.Loop() {
				if check(line) != nil {
					b.Fatal("a valid request was refused")
				}
			}
		})
	}
}
