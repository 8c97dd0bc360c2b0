package edit

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFlagRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name   string
		format Format
		path   []string
		key    string
		value  bool
		src    string
		want   string // after SetFlag
	}{
		{
			name: "codex", format: TOML, path: []string{"mcp_servers", "memory"}, key: "enabled", value: false,
			src:  "model = \"o3\"\n\n[mcp_servers.memory]\ncommand = \"npx\" # runs it\nargs = [\"-y\", \"@modelcontextprotocol/server-memory\"]\n\n[mcp_servers.memory.env]\nA = \"1\"\n\n[mcp_servers.other]\ncommand = \"x\"\n",
			want: "model = \"o3\"\n\n[mcp_servers.memory]\nenabled = false\ncommand = \"npx\" # runs it\nargs = [\"-y\", \"@modelcontextprotocol/server-memory\"]\n\n[mcp_servers.memory.env]\nA = \"1\"\n\n[mcp_servers.other]\ncommand = \"x\"\n",
		},
		{
			name: "codex CRLF", format: TOML, path: []string{"mcp_servers", "m"}, key: "enabled", value: false,
			src:  "a = 1\r\n[mcp_servers.m]\r\ncommand = 'x'",
			want: "a = 1\r\n[mcp_servers.m]\r\nenabled = false\r\ncommand = 'x'",
		},
		{
			name: "zed", format: JSONC, path: []string{"context_servers", "memory"}, key: "enabled", value: false,
			src:  "{\n  // my servers\n  \"context_servers\": {\n    \"memory\": {\n      \"command\": \"npx\", // here\n      \"args\": [],\n    },\n  },\n}\n",
			want: "{\n  // my servers\n  \"context_servers\": {\n    \"memory\": {\n      \"command\": \"npx\", // here\n      \"args\": [],\n      \"enabled\": false,\n    },\n  },\n}\n",
		},
		{
			name: "windsurf one line", format: JSON, path: []string{"mcpServers", "m"}, key: "disabled", value: true,
			src:  "{\"mcpServers\": {\"m\": {\"command\": \"x\"}}}",
			want: "{\"mcpServers\": {\"m\": {\"command\": \"x\", \"disabled\": true}}}",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := SetFlag(tc.format, []byte(tc.src), tc.path, tc.key, tc.value)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, string(got)); diff != "" {
				t.Errorf("SetFlag (-want +got):\n%s", diff)
			}
			again, err := SetFlag(tc.format, got, tc.path, tc.key, tc.value)
			if err != nil || string(again) != string(got) {
				t.Errorf("SetFlag twice changed the file again (err %v)", err)
			}
			back, err := RemoveFlag(tc.format, got, tc.path, tc.key)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.src, string(back)); diff != "" {
				t.Errorf("RemoveFlag did not give back the bytes (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFlagReplacesAnExistingValue(t *testing.T) {
	src := "[mcp_servers.m]\ncommand = \"x\"\nenabled = true\nargs = []\n"
	got, err := SetFlag(TOML, []byte(src), []string{"mcp_servers", "m"}, "enabled", false)
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.Replace(src, "enabled = true", "enabled = false", 1); string(got) != want {
		t.Errorf("got %q, want %q", got, want)
	}
	back, err := SetFlag(TOML, got, []string{"mcp_servers", "m"}, "enabled", true)
	if err != nil || string(back) != src {
		t.Errorf("setting it back: %q, %v", back, err)
	}
}

func TestFlagAfterAHeaderThatEndsTheFile(t *testing.T) {
	got, err := SetFlag(TOML, []byte("a = 1\r\n[mcp_servers.m]"), []string{"mcp_servers", "m"}, "enabled", false)
	if want := "a = 1\r\n[mcp_servers.m]\r\nenabled = false"; err != nil || string(got) != want {
		t.Errorf("got %q, %v; want %q", got, err, want)
	}
}

func TestFlagRefusesAMissingEntry(t *testing.T) {
	for _, tc := range []struct {
		format Format
		src    string
	}{
		{TOML, "[mcp_servers.other]\ncommand = \"x\"\n"},
		{JSON, `{"mcpServers": {"other": {}}}`},
		{TOML, "mcp_servers.m.command = \"x\"\n"}, // dotted keys: not a table edit makes safely
	} {
		if _, err := SetFlag(tc.format, []byte(tc.src), []string{"mcp_servers", "m"}, "enabled", false); err == nil {
			t.Errorf("%s %q: no error", tc.format, tc.src)
		}
	}
}

func TestSetRawPutsAnEntryBack(t *testing.T) {
	src := "{\n  \"mcpServers\": {\n    \"a\": {\n      \"command\": \"x\"\n    },\n    \"b\": {\n      \"command\": \"y\",\n      \"args\": [\"1\"]\n    }\n  }\n}\n"
	raw, ok, err := Take(JSON, []byte(src), []string{"mcpServers"}, "b")
	if err != nil || !ok {
		t.Fatalf("Take: %v %v", ok, err)
	}
	out, err := RemoveEntry(JSON, []byte(src), []string{"mcpServers"}, "b")
	if err != nil {
		t.Fatal(err)
	}
	back, err := PutBack(JSON, out, []string{"mcpServers"}, "b", raw)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(src, string(back)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// fuzzFlag: for a file that parses, turning each entry off (SetFlag) and
// back (RemoveFlag, or SetFlag with the value it had) gives back the same
// bytes, or is refused.
func fuzzFlag(t *testing.T, format Format, keyPath []string, key string, off bool, src []byte) {
	var names []string
	switch format {
	case TOML:
		d, err := parseTOML(src)
		if err != nil {
			return
		}
		if m, ok := lookup(d.values, keyPath); ok {
			if m, ok := m.(map[string]any); ok {
				for n := range m {
					names = append(names, n)
				}
			}
		}
	default:
		v, err := decodeJSON(src)
		if err != nil {
			return
		}
		m, _ := v.(map[string]any)
		if s, ok := lookup(m, keyPath); ok {
			if s, ok := s.(map[string]any); ok {
				for n := range s {
					names = append(names, n)
				}
			}
		}
	}
	for _, n := range names {
		path := append(append([]string(nil), keyPath...), n)
		prior, had, err := EntryJSON(format, src, path, key)
		if err != nil {
			t.Fatalf("EntryJSON: %v", err)
		}
		set, err := SetFlag(format, src, path, key, off)
		if err != nil {
			continue // refused: not an object, not a table, a key twice…
		}
		v, ok, err := EntryJSON(format, set, path, key)
		if err != nil || !ok || string(v) != fmt.Sprint(off) {
			t.Fatalf("after SetFlag %s = %s, %v, %v\n%q", n, v, ok, err, set)
		}
		var back []byte
		switch {
		case !had:
			back, err = RemoveFlag(format, set, path, key)
		case string(prior) == "true" || string(prior) == "false":
			back, err = SetFlag(format, set, path, key, string(prior) == "true")
		default:
			continue // a flag that was not a bool: SetFlag replaced it
		}
		if err != nil {
			t.Fatalf("undoing SetFlag of %s: %v\n%q", n, err, set)
		}
		if !bytes.Equal(back, src) && !(had && format != TOML) {
			t.Fatalf("set then undo changed the file:\nsrc  %q\nset  %q\nback %q", src, set, back)
		}
	}
}

func FuzzTOMLFlag(f *testing.F) {
	f.Add([]byte("[mcp_servers.m]\ncommand = \"x\"\n"))
	f.Add([]byte("[mcp_servers.m]\nenabled = true\n[mcp_servers.m.env]\nA = \"1\"\n"))
	f.Add([]byte("[mcp_servers]\nm = { command = \"x\" }\n"))
	f.Fuzz(func(t *testing.T, src []byte) { fuzzFlag(t, TOML, []string{"mcp_servers"}, "enabled", false, src) })
}

func FuzzJSONCFlag(f *testing.F) {
	f.Add([]byte("{\"mcpServers\": {\"m\": {\"command\": \"x\"}}}"))
	f.Add([]byte("{\n  \"mcpServers\": {\n    \"m\": { // c\n      \"disabled\": false,\n    },\n  },\n}\n"))
	f.Fuzz(func(t *testing.T, src []byte) { fuzzFlag(t, JSONC, []string{"mcpServers"}, "disabled", true, src) })
}
