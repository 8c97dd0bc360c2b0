package mcpserver

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestReadSSE(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []string
	}{
		{"one event", "event: message\ndata: {\"a\": 1}\n\n", []string{`{"a":1}`}},
		{"id and CRLF", "id: 7\r\nevent: message\r\ndata: {\"a\":1}\r\n\r\n", []string{`{"a":1}`}},
		{"data over lines", "data: {\"a\":\ndata: 2}\n\n", []string{`{"a":2}`}},
		{"two events, a comment, an empty one", ": ping\n\ndata: [1]\n\ndata: {}\n\n", []string{`[1]`, `{}`}},
		{"not JSON is skipped", "data: hello\n\ndata: 3\n\n", []string{`3`}},
		{"unterminated last event is dropped", "data: {}\n\ndata: {\"b\":1}", []string{`{}`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			if err := readSSE(strings.NewReader(tc.in), func(b []byte) { got = append(got, string(b)) }); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("events (-want +got):\n%s", d)
			}
		})
	}
}

func TestModernVersion(t *testing.T) {
	for _, tc := range []struct{ params, want string }{
		{``, ""},
		{`{}`, ""},
		{`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25"}}`, ""},
		{`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`, "2026-07-28"},
		{`{"_meta":{"io.modelcontextprotocol/protocolVersion":7}}`, ""},
	} {
		if got := modernVersion(shimMsg{Method: "tools/list", Params: []byte(tc.params)}); got != tc.want {
			t.Errorf("modernVersion(%s) = %q, want %q", tc.params, got, tc.want)
		}
	}
}
