package model

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestToolIdent(t *testing.T) {
	tests := []struct{ in, want string }{
		{"create_issue", "createIssue"},
		{"get-sum", "getSum"},
		{"echo", "echo"},
		{"API-post-search", "apiPostSearch"},
		{"linear_getViewer", "linearGetViewer"},
		{"getViewer", "getViewer"},
		{"GetViewer", "getViewer"},
		{"name with spaces", "nameWithSpaces"},
		{"2fa_check", "_2faCheck"},
		{"a.b.c", "aBC"},
		{"__private__", "private"},
		{"---", "tool"},
		{"", "tool"},
		{"émoji_ñame", "mojiAme"},
		{"URL", "url"},
		{"list_PRs", "listPRs"},
	}
	for _, tt := range tests {
		if got := ToolIdent(tt.in); got != tt.want {
			t.Errorf("ToolIdent(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestToolIdentsCollisions(t *testing.T) {
	got := ToolIdents([]string{"get_file", "get-file", "getFile", "echo", "echo"})
	want := map[string]string{
		"getFile":  "getFile",
		"get_file": "getFile_" + suffixOf("get_file"),
		"get-file": "getFile_" + suffixOf("get-file"),
		"echo":     "echo",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ToolIdents (-want +got):\n%s", diff)
	}
	// Stable: order and unrelated tools do not change the suffixes.
	again := ToolIdents([]string{"zzz", "get-file", "getFile", "get_file"})
	for _, n := range []string{"get_file", "get-file", "getFile"} {
		if again[n] != got[n] {
			t.Errorf("ident of %q changed with the order: %q vs %q", n, again[n], got[n])
		}
	}
}

// suffixOf is the collision suffix the address rule documents: the first 4
// hex digits of the SHA-256 of the upstream name.
func suffixOf(name string) string {
	sum := sha256.Sum256([]byte(name))
	return hex.EncodeToString(sum[:])[:4]
}

func TestSanitizeNamespace(t *testing.T) {
	tests := []struct{ in, want string }{
		{"mcp-servers/everything", "everything"},
		{"memory-server", "memory"},
		{"secure-filesystem-server", "filesystem"},
		{"@modelcontextprotocol/server-github", "github"},
		{"Slack MCP Server", "slack"},
		{"MongoDB MCP Server", "mongodb"},
		{"mcp", "mcp"},
		{"123abc", "abc"},
		{"", ""},
		{"Notion API", "notion_api"},
	}
	for _, tt := range tests {
		if got := SanitizeNamespace(tt.in); got != tt.want {
			t.Errorf("SanitizeNamespace(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if got := SanitizeNamespace(tt.in); got != "" && ValidNamespace(got) != nil && got != "mcp" {
			t.Errorf("SanitizeNamespace(%q) = %q is not a valid namespace: %v", tt.in, got, ValidNamespace(got))
		}
	}
}

func TestValidNamespace(t *testing.T) {
	for _, ok := range []string{"github", "a", "my_server2"} {
		if err := ValidNamespace(ok); err != nil {
			t.Errorf("ValidNamespace(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", "Github", "2x", "a-b", "a.b", "hub", "console", "this_name_is_far_too_long_for_a_namespace"} {
		if err := ValidNamespace(bad); err == nil {
			t.Errorf("ValidNamespace(%q) = nil, want an error", bad)
		}
	}
}

func TestContractDigest(t *testing.T) {
	base := UpstreamTool{
		Name:        "echo",
		Description: "Echo back.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"message":{"type":"string"}}}`),
	}
	d := ContractDigest(base)
	reordered := base
	reordered.InputSchema = json.RawMessage(`{ "properties": {"message": {"type": "string"}}, "type": "object" }`)
	if ContractDigest(reordered) != d {
		t.Error("key order or whitespace changed the contract")
	}
	yes := true
	for name, change := range map[string]func(*UpstreamTool){
		"description":  func(u *UpstreamTool) { u.Description += " Now louder." },
		"name":         func(u *UpstreamTool) { u.Name = "echo2" },
		"inputSchema":  func(u *UpstreamTool) { u.InputSchema = json.RawMessage(`{"type":"object"}`) },
		"outputSchema": func(u *UpstreamTool) { u.OutputSchema = json.RawMessage(`{"type":"object"}`) },
		"annotations":  func(u *UpstreamTool) { u.Annotations = &Annotations{ReadOnlyHint: &yes} },
		"number":       func(u *UpstreamTool) { u.InputSchema = json.RawMessage(`{"type":"object","maxLength":1.0}`) },
	} {
		u := base
		change(&u)
		if ContractDigest(u) == d {
			t.Errorf("changing %s did not change the contract", name)
		}
	}
	if len(d) != 64 {
		t.Errorf("digest %q is not hex SHA-256", d)
	}
	// Invalid JSON still digests, and differently from valid.
	bad := base
	bad.InputSchema = json.RawMessage(`{"type":`)
	if ContractDigest(bad) == d {
		t.Error("an invalid schema digested like the valid one")
	}
}

func TestNewTools(t *testing.T) {
	tools := NewTools("gh", []UpstreamTool{{Name: "create_issue"}, {Name: "create-issue"}, {Name: "create_issue"}})
	var got []string
	for _, tl := range tools {
		got = append(got, tl.Address)
	}
	want := []string{"gh.createIssue_" + suffixOf("create_issue"), "gh.createIssue_" + suffixOf("create-issue")}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("addresses (-want +got):\n%s", diff)
	}
}

func TestEffect(t *testing.T) {
	yes, no := true, false
	tests := []struct {
		a    *Annotations
		want Effect
	}{
		{nil, EffectDestructive},
		{&Annotations{}, EffectDestructive},
		{&Annotations{ReadOnlyHint: &yes}, EffectRead},
		{&Annotations{ReadOnlyHint: &no}, EffectDestructive},
		{&Annotations{ReadOnlyHint: &no, DestructiveHint: &no}, EffectWrite},
		{&Annotations{ReadOnlyHint: &yes, DestructiveHint: &yes}, EffectRead},
	}
	for _, tt := range tests {
		tl := Tool{Annotations: tt.a}
		if got := tl.Effect(); got != tt.want {
			t.Errorf("Effect(%+v) = %s, want %s", tt.a, got, tt.want)
		}
	}
}

func TestQuoteCommand(t *testing.T) {
	got := QuoteCommand([]string{"node", "/a b/index.js", "it's", "--x=1", ""})
	want := `node '/a b/index.js' 'it'\''s' --x=1 ''`
	if got != want {
		t.Errorf("QuoteCommand = %s, want %s", got, want)
	}
}

var identRE = regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$]*$`)

// TestToolIdentsSuffixCollision: two names whose 4-digit suffixes are the
// same (found by FuzzToolIdents) still get two addresses; a read-only tool
// and a write must never share one.
func TestToolIdentsSuffixCollision(t *testing.T) {
	a, b := "get::::::file_____", "get____file______________"
	if suffixOf(a) != suffixOf(b) {
		t.Fatalf("the seed no longer collides at 4 digits: %s vs %s", suffixOf(a), suffixOf(b))
	}
	m := ToolIdents([]string{a, b, "getFile"})
	if m[a] == m[b] {
		t.Fatalf("both %q and %q became %q", a, b, m[a])
	}
	for _, n := range []string{a, b} {
		if !strings.HasPrefix(m[n], "getFile_") || len(m[n]) != len("getFile_")+8 {
			t.Errorf("%q → %q, want getFile_ and 8 hex digits", n, m[n])
		}
	}
	if m["getFile"] != "getFile" {
		t.Errorf("getFile → %q, want it unchanged", m["getFile"])
	}
}

func FuzzToolIdents(f *testing.F) {
	for _, s := range []string{"create_issue", "get-sum", "API-post-search", "", "---", "2fa", "a b", "ä", "getFile"} {
		f.Add(s, s+"_x")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		id := ToolIdent(a)
		if !identRE.MatchString(id) {
			t.Fatalf("ToolIdent(%q) = %q is not a JavaScript identifier", a, id)
		}
		if ToolIdent(a) != id {
			t.Fatal("not deterministic")
		}
		m := ToolIdents([]string{a, b, ToolIdent(a), ToolIdent(b)})
		seen := map[string]string{}
		for n, id := range m {
			if other, ok := seen[id]; ok {
				t.Fatalf("ToolIdents gave %q and %q the same identifier %q", n, other, id)
			}
			seen[id] = n
		}
		for _, v := range m {
			if !identRE.MatchString(v) {
				t.Fatalf("identifier %q is not a JavaScript identifier", v)
			}
		}
	})
}

// A global of the runtime is refused to a new source, and still read as a
// namespace an older hub's source may have (so it can be listed and removed).
func TestNewNamespaceRefusesAGlobal(t *testing.T) {
	if err := NewNamespace("performance"); err == nil || !strings.Contains(err.Error(), "--namespace") {
		t.Errorf("NewNamespace(performance) = %v, want a refusal saying how to pick another", err)
	}
	if err := ValidNamespace("performance"); err != nil {
		t.Errorf("ValidNamespace(performance) = %v: an older hub's source would be lost", err)
	}
	if err := NewNamespace("github"); err != nil {
		t.Errorf("NewNamespace(github) = %v", err)
	}
}
