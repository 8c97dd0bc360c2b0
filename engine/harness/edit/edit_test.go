package edit

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files of connected output")

var entry = Entry{
	{Key: "type", Value: "stdio"},
	{Key: "command", Value: "/usr/local/bin/capabilities"},
	{Key: "args", Value: []string{"hub", "serve", "--stdio", "--profile", "default"}},
}

// hugeClaude is a ~/.claude.json with many keys of its own.
func hugeClaude() string {
	var b strings.Builder
	b.WriteString("{\n  \"numStartups\": 412,\n")
	for i := range 300 {
		fmt.Fprintf(&b, "  \"key%03d\": {\"seen\": true, \"n\": %d, \"s\": \"a\\u00e9\\\"b\"},\n", i, i)
	}
	b.WriteString("  \"projects\": {\n    \"/home/me/repo\": {\n      \"mcpServers\": {},\n      \"allowedTools\": []\n    }\n  },\n")
	b.WriteString("  \"mcpServers\": {\n    \"memory\": {\n      \"type\": \"stdio\",\n      \"command\": \"npx\",\n      \"args\": [\n        \"-y\",\n        \"@modelcontextprotocol/server-memory\"\n      ],\n      \"env\": {}\n    }\n  },\n  \"userID\": \"abc\"\n}")
	return b.String()
}

var samples = []struct {
	name    string
	format  Format
	keyPath []string
	src     string
}{
	{"claude-code-huge", JSON, []string{"mcpServers"}, hugeClaude()},
	{"claude-code-empty-servers", JSON, []string{"mcpServers"}, "{\n  \"mcpServers\": {},\n  \"theme\": \"dark\"\n}\n"},
	{"cursor-no-servers-key", JSON, []string{"mcpServers"}, "{\n\t\"other\": 1\n}"},
	{"desktop-crlf-bom", JSON, []string{"mcpServers"}, "\xEF\xBB\xBF{\r\n    \"mcpServers\": {\r\n        \"fs\": {\r\n            \"command\": \"C:\\\\tools\\\\fs.exe\",\r\n            \"args\": []\r\n        }\r\n    }\r\n}\r\n"},
	{"vscode-jsonc", JSONC, []string{"servers"}, "// VS Code MCP servers\n{\n  \"inputs\": [\n    {\"id\": \"tok\", \"type\": \"promptString\", \"password\": true}, // prompted\n  ],\n  \"servers\": {\n    /* GitHub */\n    \"github\": {\n      \"type\": \"stdio\",\n      \"command\": \"npx\",\n      \"env\": {\"TOKEN\": \"${input:tok}\"},\n    },\n  },\n}\n"},
	{"gemini-one-line", JSONC, []string{"mcpServers"}, `{"mcpServers": {"a": {"command": "x"}}, "theme": "GitHub"}`},
	{"zed-comments-no-servers", JSONC, []string{"context_servers"}, "// Zed settings\n{\n  \"theme\": \"One Dark\", // my theme\n  \"vim_mode\": true,\n  /* fonts */\n  \"buffer_font_size\": 15,\n}\n"},
	{"zed-empty-with-comment", JSONC, []string{"context_servers"}, "{\n  \"context_servers\": { // none yet\n  }\n}\n"},
	{"windsurf-empty-file", JSON, []string{"mcpServers"}, ""},
	{"codex", TOML, []string{"mcp_servers"}, "# Codex config\nmodel = \"o3\"\n\n[mcp_servers.memory]\ncommand = \"npx\" # the runner\nargs = [\"-y\", \"@modelcontextprotocol/server-memory\"]\n\n[mcp_servers.memory.env]\nMEMORY_FILE_PATH = \"/tmp/m.json\"\n"},
	{"codex-no-final-newline", TOML, []string{"mcp_servers"}, "model = \"o3\""},
	{"codex-crlf-bom", TOML, []string{"mcp_servers"}, "\xEF\xBB\xBFmodel = \"o3\"\r\n\r\n[projects.\"/home/me\"]\r\ntrust_level = \"trusted\"\r\n"},
	{"codex-empty", TOML, []string{"mcp_servers"}, ""},
}

// TestConnectDisconnectRoundTrip: set then remove gives back the bytes;
// set twice is set once; only the entry's bytes were added.
func TestConnectDisconnectRoundTrip(t *testing.T) {
	for _, s := range samples {
		t.Run(s.name, func(t *testing.T) {
			src := []byte(s.src)
			missing, err := Missing(s.format, src, s.keyPath)
			if err != nil {
				t.Fatal(err)
			}
			once, err := SetEntry(s.format, src, s.keyPath, "capabilities", entry)
			if err != nil {
				t.Fatalf("SetEntry: %v", err)
			}
			twice, err := SetEntry(s.format, once, s.keyPath, "capabilities", entry)
			if err != nil {
				t.Fatalf("SetEntry again: %v", err)
			}
			if !bytes.Equal(once, twice) {
				t.Errorf("a second SetEntry changed the file:\n%s", cmp.Diff(string(once), string(twice)))
			}
			if !bytes.Contains(once, []byte("/usr/local/bin/capabilities")) {
				t.Errorf("the entry is not in the result:\n%s", once)
			}
			removed, err := RemoveEntry(s.format, once, s.keyPath, "capabilities")
			if err != nil {
				t.Fatalf("RemoveEntry: %v", err)
			}
			back, err := Prune(s.format, removed, s.keyPath, missing)
			if err != nil {
				t.Fatal(err)
			}
			want := s.src
			if s.src == "" && s.format != TOML {
				want = "{}\n" // an empty JSON file comes back as an empty object
			}
			if diff := cmp.Diff(want, string(back)); diff != "" {
				t.Errorf("connect then disconnect is not the original (-want +got):\n%s", diff)
			}
			golden := filepath.Join("testdata", "golden", s.name+".connected")
			if *update {
				if err := os.WriteFile(golden, once, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			g, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update)", err)
			}
			if diff := cmp.Diff(string(g), string(once)); diff != "" {
				t.Errorf("connected output differs from %s (-want +got):\n%s", golden, diff)
			}
		})
	}
}

// TestUpdateInPlace: an existing entry with another value is replaced where
// it is; the rest stays. Of the entry's keys, the owned ones that the new
// entry does not set go, and the others (what the person added: a timeout,
// a tool's approval) stay as written.
func TestUpdateInPlace(t *testing.T) {
	for _, tc := range []struct {
		name, src, want string
		format          Format
	}{
		{"json", "{\n  \"mcpServers\": {\n    \"capabilities\": {\"command\": \"/old\", \"args\": [\"x\"], \"timeout\": 60000, \"trust\": true /* mine */},\n    \"b\": {} // b\n  }\n}\n",
			"{\n  \"mcpServers\": {\n    \"capabilities\": {\n      \"command\": \"/new\",\n      \"timeout\": 60000,\n      \"trust\": true\n    },\n    \"b\": {} // b\n  }\n}\n", JSONC},
		{"json, nothing of the person's", "{\n  \"mcpServers\": {\n    \"capabilities\": {\"command\": \"/old\"},\n    \"b\": {} // b\n  }\n}\n",
			"{\n  \"mcpServers\": {\n    \"capabilities\": {\n      \"command\": \"/new\"\n    },\n    \"b\": {} // b\n  }\n}\n", JSONC},
		{"toml", "[mcp_servers.capabilities]\ncommand = \"/old\"\nargs = [\"x\"]\n# it starts slowly here\nstartup_timeout_sec = 60 # slow start\n[mcp_servers.capabilities.env]\nCAPABILITIES_HOME = \"/h\"\n\n# ask for this one\n[mcp_servers.capabilities.tools.echo]\napproval_mode = \"approve\"\n\n# next\n[other]\na = 1\n",
			"[mcp_servers.capabilities]\ncommand = \"/new\"\n# it starts slowly here\nstartup_timeout_sec = 60 # slow start\n\n# ask for this one\n[mcp_servers.capabilities.tools.echo]\napproval_mode = \"approve\"\n\n# next\n[other]\na = 1\n", TOML},
		{"toml, CRLF", "[mcp_servers.capabilities]\r\ncommand = \"/old\"\r\nstartup_timeout_sec = 60\r\n\r\n[mcp_servers.capabilities.tools.echo]\r\napproval_mode = \"approve\"\r\n",
			"[mcp_servers.capabilities]\r\ncommand = \"/new\"\r\nstartup_timeout_sec = 60\r\n\r\n[mcp_servers.capabilities.tools.echo]\r\napproval_mode = \"approve\"\r\n", TOML},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := []string{"mcpServers"}
			if tc.format == TOML {
				key = []string{"mcp_servers"}
			}
			got, err := SetEntry(tc.format, []byte(tc.src), key, "capabilities", Entry{{Key: "command", Value: "/new"}}, "args", "env")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, string(got)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			again, err := SetEntry(tc.format, got, key, "capabilities", Entry{{Key: "command", Value: "/new"}}, "args", "env")
			if err != nil || string(again) != string(got) {
				t.Errorf("a second SetEntry changed the file (%v):\n%s", err, again)
			}
		})
	}
}

// TestRefusals: input that edit cannot change exactly is refused with a
// clear error (line and column for what does not parse).
func TestRefusals(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		format    Format
		want      string
	}{
		{"json-syntax", "{\n  \"mcpServers\": {,}\n}", JSON, "line 2, column"},
		{"toml-syntax", "a = 1\nb = = 2\n", TOML, "line 2, column"},
		{"json-not-object", "[1]", JSON, "not a JSON object"},
		{"servers-not-object", `{"mcpServers": []}`, JSON, "not an object"},
		{"duplicate", `{"mcpServers": {}, "mcpServers": {}}`, JSON, "appears twice"},
		{"toml-inline", "mcp_servers = { memory = { command = \"x\" } }\n", TOML, "mcp_servers is an inline table (mcp_servers = { … }), to which no [mcp_servers.capabilities] table can be added; write each of its servers as a [mcp_servers.<name>] table"},
		{"toml-inline-entry", "[mcp_servers]\ncapabilities = { command = \"x\" }\n", TOML, "not written as"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := []string{"mcpServers"}
			if tc.format == TOML {
				key = []string{"mcp_servers"}
			}
			_, err := SetEntry(tc.format, []byte(tc.src), key, "capabilities", entry)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("SetEntry error = %v, want one saying %q", err, tc.want)
			}
		})
	}
}

// maxFuzzInput bounds what the fuzz targets edit: a larger file finds no
// layout a smaller one does not, and minimizing an input costs its length
// times an edit of it (a 60 s run spent half its time minimizing one).
const maxFuzzInput = 512

func fuzzRoundTrip(t *testing.T, format Format, keyPath []string, src []byte) {
	if len(src) > maxFuzzInput {
		return
	}
	var err error
	if format == TOML {
		_, err = parseTOML(src)
	} else {
		_, err = parseJSON(src)
	}
	if err != nil || len(bytes.TrimSpace(bytes.TrimPrefix(src, bom))) == 0 {
		return
	}
	missing, err := Missing(format, src, keyPath)
	if err != nil {
		return
	}
	once, err := SetEntry(format, src, keyPath, "capabilities", entry)
	if err != nil {
		if !errors.Is(err, ErrUnsupported) && !strings.Contains(err.Error(), "object") && !strings.Contains(err.Error(), "twice") {
			t.Fatalf("SetEntry refused with an unexpected error: %v", err)
		}
		return
	}
	twice, err := SetEntry(format, once, keyPath, "capabilities", entry)
	if err != nil || !bytes.Equal(once, twice) {
		t.Fatalf("a second SetEntry changed the file or failed (%v):\n%q\n%q", err, once, twice)
	}
	if _, had := hasEntry(format, src, keyPath); had {
		return // disconnect removes it: the original had one
	}
	removed, err := RemoveEntry(format, once, keyPath, "capabilities")
	if err != nil {
		t.Fatalf("RemoveEntry of what SetEntry wrote: %v\n%q", err, once)
	}
	back, err := Prune(format, removed, keyPath, missing)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(back, src) && !emptyObjectException(format, src, keyPath) {
		t.Fatalf("set then remove changed the file:\nsrc  %q\nset  %q\nback %q", src, once, back)
	}
}

func hasEntry(format Format, src []byte, keyPath []string) (any, bool) {
	if format == TOML {
		d, err := parseTOML(src)
		if err != nil {
			return nil, false
		}
		return lookup(d.values, append(append([]string(nil), keyPath...), "capabilities"))
	}
	v, err := decodeJSON(src)
	if err != nil {
		return nil, false
	}
	m, _ := v.(map[string]any)
	return lookup(m, append(append([]string(nil), keyPath...), "capabilities"))
}

// emptyObjectException: the empty object the entry went into (the servers
// object, or the root when it had no servers key), written with blanks
// inside ({ } or {\n}), comes back as {} (the one layout edit does not keep).
func emptyObjectException(format Format, src []byte, keyPath []string) bool {
	if format == TOML {
		return false
	}
	d, err := parseJSON(src)
	if err != nil {
		return false
	}
	objs, _, err := d.walk(keyPath)
	if err != nil {
		return false
	}
	last := objs[len(objs)-1]
	return len(last.Members) == 0 && len(last.AfterExtra) > 0 && isBlank(last.AfterExtra)
}

func FuzzJSONCConnectDisconnect(f *testing.F) {
	for _, s := range samples {
		if s.format != TOML && len(s.src) <= maxFuzzInput {
			f.Add([]byte(s.src))
		}
	}
	f.Add([]byte(`{"mcpServers":{"a":1,}}`))
	f.Add([]byte("{\"mcpServers\": {\"a\": 1 /* c */ }}"))
	f.Fuzz(func(t *testing.T, src []byte) { fuzzRoundTrip(t, JSONC, []string{"mcpServers"}, src) })
}

func FuzzTOMLConnectDisconnect(f *testing.F) {
	for _, s := range samples {
		if s.format == TOML && len(s.src) <= maxFuzzInput {
			f.Add([]byte(s.src))
		}
	}
	f.Add([]byte("[mcp_servers.a]\ncommand = '''\n[x]\n'''\n"))
	f.Add([]byte("[mcp_servers]\n[mcp_servers.capabilities.env]\nA = \"1\"\n"))
	f.Fuzz(func(t *testing.T, src []byte) { fuzzRoundTrip(t, TOML, []string{"mcp_servers"}, src) })
}

// TestUnprune: an object left with nothing in it goes back to the blank
// file it was read from; anything else in it, or no blank record, keeps it.
func TestUnprune(t *testing.T) {
	empty, ws := "", "\n  \n"
	tests := []struct {
		name   string
		format Format
		src    string
		blank  *string
		want   string
	}{
		{"an empty file", JSON, "{}\n", &empty, ""},
		{"whitespace", JSONC, "{}\r\n", &ws, "\n  \n"},
		{"a byte order mark and the object", JSONC, "\xEF\xBB\xBF{}\n", &empty, ""},
		{"something left in it", JSON, "{\n  \"a\": 1\n}\n", &empty, "{\n  \"a\": 1\n}\n"},
		{"a comment left in it", JSONC, "{\n  // mine\n}\n", &empty, "{\n  // mine\n}\n"},
		{"not blank before", JSON, "{}\n", nil, "{}\n"},
		{"TOML", TOML, "", &empty, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, string(Unprune(tt.format, []byte(tt.src), tt.blank))); diff != "" {
				t.Errorf("Unprune (-want +got):\n%s", diff)
			}
		})
	}
}
