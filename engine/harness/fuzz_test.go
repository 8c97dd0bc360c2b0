package harness

import (
	"errors"
	"testing"
)

// fuzzRead checks that a reader never panics, and that bad input is a
// *SyntaxError (with a position when the parser gives one) or entries
// reported as problems.
func fuzzRead(f *testing.F, format Format, key string, seeds ...string) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, err := Decode(format, data)
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("Decode error %v (%T) is not a *SyntaxError", err, err)
			}
			if se.Line < 0 || se.Col < 0 || se.Msg == "" {
				t.Fatalf("bad position or message: %+v", se)
			}
			return
		}
		servers, probs, err := Servers(File{Format: format, ServersKey: []string{key}}, doc)
		if err != nil {
			return
		}
		for _, s := range servers {
			if s.Kind != KindStdio && s.Kind != KindHTTP {
				t.Fatalf("server %q of kind %q", s.Name, s.Kind)
			}
		}
		for _, p := range probs {
			if p.Err == nil {
				t.Fatalf("a problem without an error: %+v", p)
			}
		}
	})
}

func FuzzReadJSONC(f *testing.F) {
	fuzzRead(f, JSONC, "mcpServers",
		`{"mcpServers": {"a": {"command": "x", "args": ["1"], "env": {"K": "v"}}}}`,
		"\xef\xbb\xbf{\r\n // c\r\n \"mcpServers\": {\"b\": {\"url\": \"http://h\", \"headers\": {\"A\": \"b\"},},},\r\n}",
		`{"mcpServers": {"z": {"command": {"path": "p", "args": [1, true]}, "enabled": false}}}`,
		`{"mcpServers": {"x": {"command": 3}}}`, `/* */ [`, ``)
}

func FuzzReadTOML(f *testing.F) {
	fuzzRead(f, TOML, "mcp_servers",
		"[mcp_servers.a]\ncommand = \"x\"\nargs = [\"-y\", \"p\"]\n[mcp_servers.a.env]\nK = \"v\"\n",
		"[mcp_servers.b]\r\nurl = 'http://h'\r\nhttp_headers = { A = \"b\" }\r\nenabled = false\r\n",
		"[mcp_servers]\na = 1\n", "a = [\n", "[x]\ny = 1979-05-27T07:32:00Z\n")
}
