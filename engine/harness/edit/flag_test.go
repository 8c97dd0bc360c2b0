package edit

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tailscale/hujson"
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
	back, err := PutBack(JSON, out, []string{"mcpServers"}, "b", raw, Place{})
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
	if len(src) > maxFuzzInput {
		return
	}
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

// TestPutBackWhereItWas: entries moved out of an object (connect
// --replace, with the hub's own entry added) and put back in the order the
// object had them (disconnect, after taking the hub's entry out) give back
// the file's bytes: each where it was, with the comments above it, in
// objects over several lines or on one, with or without trailing commas.
func TestPutBackWhereItWas(t *testing.T) {
	key := []string{"mcpServers"}
	hub := Entry{{Key: "command", Value: "capabilities"}}
	for _, tc := range []struct {
		name   string
		format Format
		src    string
		moved  []string
	}{
		{"middle", JSON, "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\"},\n    \"b\": {\"command\": \"y\"},\n    \"c\": {\"command\": \"z\"}\n  }\n}\n", []string{"b"}},
		{"first", JSON, "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\"},\n    \"b\": {\"command\": \"y\"}\n  }\n}\n", []string{"a"}},
		{"last", JSON, "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\"},\n    \"b\": {\"command\": \"y\"}\n  }\n}\n", []string{"b"}},
		{"two side by side", JSON, "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\"},\n    \"b\": {\"command\": \"y\"},\n    \"c\": {\"command\": \"z\"},\n    \"d\": {}\n  }\n}\n", []string{"c", "b"}},
		{"all", JSON, "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\"},\n    \"b\": {\"command\": \"y\"}\n  }\n}\n", []string{"b", "a"}},
		{"comments above", JSONC, "{\n  \"mcpServers\": {\n    // the first\n    \"a\": {\"command\": \"x\"},\n    /* the second,\n       shared */\n    \"b\": {\"command\": \"y\"}, // same as there\n    \"c\": {\"command\": \"z\"},\n  },\n}\n", []string{"a", "b"}},
		{"trailing commas, last", JSONC, "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\"},\n    \"b\": {\"command\": \"y\"},\n  },\n}\n", []string{"b"}},
		{"trailing comma, the only one", JSONC, "{\n  \"mcpServers\": {\n    \"a\": {\n      \"command\": \"x\"\n    },\n  }\n}\n", []string{"a"}},
		{"trailing commas, all", JSONC, "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\"},\n    \"b\": {\"command\": \"y\"},\n  },\n}\n", []string{"a", "b"}},
		{"one line, first", JSON, `{"mcpServers": {"a": {"command": "x"}, "b": {"command": "y"}, "c": {}}}`, []string{"a"}},
		{"one line, middle", JSON, `{"mcpServers": {"a": {"command": "x"}, "b": {"command": "y"}, "c": {}}}`, []string{"b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := []byte(tc.src)
			out, err := SetEntry(tc.format, src, key, "capabilities", hub)
			if err != nil {
				t.Fatal(err)
			}
			var moved []Replaced
			for _, name := range tc.moved {
				text, ok, err := Take(tc.format, src, key, name)
				if err != nil || !ok {
					t.Fatalf("Take %s: %v %v", name, ok, err)
				}
				at, ok, err := Where(tc.format, src, key, name)
				if err != nil || !ok {
					t.Fatalf("Where %s: %v %v", name, ok, err)
				}
				moved = append(moved, Replaced{Name: name, Entry: text, Place: at})
				if out, err = RemoveEntry(tc.format, out, key, name); err != nil {
					t.Fatal(err)
				}
			}
			if out, err = RemoveEntry(tc.format, out, key, "capabilities"); err != nil {
				t.Fatal(err)
			}
			slices.SortFunc(moved, func(a, b Replaced) int { return a.Place.Index - b.Place.Index })
			for _, r := range moved {
				if out, err = PutBack(tc.format, out, key, r.Name, r.Entry, r.Place); err != nil {
					t.Fatalf("PutBack %s: %v", r.Name, err)
				}
			}
			if diff := cmp.Diff(tc.src, string(out)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestPutBackBesideWhatIsLeft: an entry whose neighbour was taken out since
// goes before the one that followed it; with neither left it goes first if
// it was first, else last; a Lead that is not blanks and comments is not
// written.
func TestPutBackBesideWhatIsLeft(t *testing.T) {
	key := []string{"mcpServers"}
	src := "{\n  \"mcpServers\": {\n    \"x\": {},\n    \"c\": {}\n  }\n}\n"
	for _, tc := range []struct {
		name string
		at   Place
		want string
	}{
		{"after a gone, before c", Place{After: "a", Before: "c", Index: 1}, "{\n  \"mcpServers\": {\n    \"x\": {},\n    \"b\": {},\n    \"c\": {}\n  }\n}\n"},
		{"first", Place{First: true, Before: "gone"}, "{\n  \"mcpServers\": {\n    \"b\": {},\n    \"x\": {},\n    \"c\": {}\n  }\n}\n"},
		{"neighbours gone", Place{After: "a", Before: "d", Index: 3}, "{\n  \"mcpServers\": {\n    \"x\": {},\n    \"c\": {},\n    \"b\": {}\n  }\n}\n"},
		{"unknown", Place{}, "{\n  \"mcpServers\": {\n    \"x\": {},\n    \"c\": {},\n    \"b\": {}\n  }\n}\n"},
		{"a lead that is not one", Place{After: "x", Lead: "\n    \"y\": 1,\n    "}, "{\n  \"mcpServers\": {\n    \"x\": {},\n    \"b\": {},\n    \"c\": {}\n  }\n}\n"},
	} {
		out, err := PutBack(JSON, []byte(src), key, "b", "{}", tc.at)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if diff := cmp.Diff(tc.want, string(out)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}

// FuzzJSONCPutBack: for a file that parses, each entry of mcpServers taken
// out and put back where Where found it is there again, at the same index,
// with the same text, the others in their order.
func FuzzJSONCPutBack(f *testing.F) {
	f.Add([]byte("{\"mcpServers\": {\"a\": {}, \"b\": {\"command\": \"x\"}, \"c\": 1}}"))
	f.Add([]byte("{\n  \"mcpServers\": {\n    // a\n    \"a\": {},\n    \"b\": {}, // b\n    \"c\": 1,\n  },\n}\n"))
	f.Add([]byte("{\"mcpServers\": { /* x */ \"a\": 1 }}"))
	key := []string{"mcpServers"}
	f.Fuzz(func(t *testing.T, src []byte) {
		if len(src) > maxFuzzInput {
			return
		}
		names := func(b []byte) []string {
			d, err := parseJSON(b)
			if err != nil {
				return nil
			}
			objs, _, err := d.walk(key)
			if err != nil || len(objs) < 2 {
				return nil
			}
			var out []string
			for _, m := range objs[1].Members {
				lit, _ := m.Name.Value.(hujson.Literal)
				out = append(out, lit.String())
			}
			return out
		}
		all := names(src)
		seen := map[string]bool{}
		for _, name := range all {
			if seen[name] {
				return // refused by every edit: not ours to guess which one counts
			}
			seen[name] = true
		}
		for _, name := range all {
			text, ok, err := Take(JSONC, src, key, name)
			if err != nil || !ok {
				t.Fatalf("Take %q: %v %v", name, ok, err)
			}
			at, _, err := Where(JSONC, src, key, name)
			if err != nil {
				t.Fatal(err)
			}
			out, err := RemoveEntry(JSONC, src, key, name)
			if err != nil {
				continue // refused: nothing to put back
			}
			back, err := PutBack(JSONC, out, key, name, text, at)
			if err != nil {
				t.Fatalf("PutBack %q into %q: %v", name, out, err)
			}
			if got := names(back); !slices.Equal(got, all) {
				t.Fatalf("%q taken out and put back: members %q, want %q\n%s", name, got, all, back)
			}
			if again, _, _ := Take(JSONC, back, key, name); strings.TrimSpace(again) != strings.TrimSpace(text) {
				t.Fatalf("%q put back as %q, was %q", name, again, text)
			}
		}
	})
}

// FuzzJSONCReplaceDisconnect: connect --replace then disconnect, as the
// CLI does them (the hub's entry set, some of the person's entries moved
// out; the hub's entry taken out, the moved ones put back in their order),
// gives back the file's bytes, trailing commas included; the one exception
// is an object left empty that was written with blanks inside ({ }).
func FuzzJSONCReplaceDisconnect(f *testing.F) {
	f.Add([]byte("{\n  \"servers\": {\n    \"a\": {\n      \"command\": \"x\"\n    },\n  },\n}\n"), uint8(1))
	f.Add([]byte("{\"servers\": {\"a\": {}, \"b\": {\"command\": \"x\"},}}"), uint8(3))
	f.Add([]byte("{\n  \"servers\": {\n    // a\n    \"a\": 1,\n    \"b\": 2 // b\n  }\n}\n"), uint8(2))
	key := []string{"servers"}
	f.Fuzz(func(t *testing.T, src []byte, pick uint8) {
		if len(src) > maxFuzzInput {
			return
		}
		d, err := parseJSON(src)
		if err != nil {
			return
		}
		objs, _, err := d.walk(key)
		if err != nil || len(objs) < 2 {
			return
		}
		var moved []Replaced
		out, err := SetEntry(JSONC, src, key, "capabilities", entry)
		if err != nil {
			return
		}
		for i, m := range objs[1].Members {
			lit, _ := m.Name.Value.(hujson.Literal)
			name := lit.String()
			if name == "capabilities" {
				return // the person's own entry of that name: connect keeps it
			}
			if pick&(1<<(i%8)) == 0 {
				continue
			}
			text, _, err := Take(JSONC, src, key, name)
			if err != nil {
				return
			}
			at, _, _ := Where(JSONC, src, key, name)
			if out, err = RemoveEntry(JSONC, out, key, name); err != nil {
				return
			}
			moved = append(moved, Replaced{Name: name, Entry: text, Place: at})
		}
		back, err := RemoveEntry(JSONC, out, key, "capabilities")
		if err != nil {
			t.Fatalf("taking out the hub's entry: %v\n%q", err, out)
		}
		slices.SortStableFunc(moved, func(a, b Replaced) int { return a.Place.Index - b.Place.Index })
		for _, r := range moved {
			if back, err = PutBack(JSONC, back, key, r.Name, r.Entry, r.Place); err != nil {
				t.Fatalf("PutBack %q: %v\n%q", r.Name, err, back)
			}
		}
		if !bytes.Equal(back, src) && !emptyObjectException(JSONC, src, key) {
			t.Fatalf("connect --replace then disconnect changed the file:\nsrc  %q\nmid  %q\nback %q", src, out, back)
		}
	})
}
