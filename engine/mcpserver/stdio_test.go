package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/capabilities-sh/capabilities/store"
	"github.com/google/go-cmp/cmp"
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
