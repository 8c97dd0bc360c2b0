package harness

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/google/go-cmp/cmp"
)

// Clearly fake credentials.
const (
	fakeToken1 = "ghp_FAKEFAKEFAKEFAKEFAKEFAKEFAKEFAKE0001"
	fakeToken2 = "ghp_FAKEFAKEFAKEFAKEFAKEFAKEFAKEFAKE0002"
)

func TestSameServer(t *testing.T) {
	mem := func(env map[string]string) Server {
		return Server{Name: "memory", Kind: KindStdio, Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-memory"}, Env: env}
	}
	memSrc := func(env map[string]string, secretEnv string) model.Source {
		return model.Source{Namespace: "memory", Kind: model.KindStdio, Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-memory"}, Env: env, SecretEnv: secretEnv}
	}
	web := func(url string, h map[string]string) Server {
		return Server{Name: "web", Kind: KindHTTP, URL: url, Headers: h}
	}
	webSrc := func(url string, h map[string]string, secretHeader string) model.Source {
		return model.Source{Namespace: "web", Kind: model.KindHTTP, URL: url, Headers: h, SecretHeader: secretHeader}
	}
	type result struct{ Same, Exact bool }
	tests := []struct {
		name string
		s    Server
		src  model.Source
		want result
	}{
		{"same command, no env", mem(nil), memSrc(nil, ""), result{true, true}},
		{"an empty env is none", mem(map[string]string{}), memSrc(nil, ""), result{true, true}},
		{"same env", mem(map[string]string{"MEMORY_FILE_PATH": "/tmp/a.jsonl"}), memSrc(map[string]string{"MEMORY_FILE_PATH": "/tmp/a.jsonl"}, ""), result{true, true}},
		{"env only in the entry", mem(map[string]string{"MEMORY_FILE_PATH": "/tmp/a.jsonl"}), memSrc(nil, ""), result{false, false}},
		{"env only in the source", mem(nil), memSrc(map[string]string{"MEMORY_FILE_PATH": "/tmp/a.jsonl"}, ""), result{false, false}},
		{"env differing in value", mem(map[string]string{"MEMORY_FILE_PATH": "/tmp/a.jsonl"}), memSrc(map[string]string{"MEMORY_FILE_PATH": "/tmp/b.jsonl"}, ""), result{false, false}},
		{"a reference compared as written", mem(map[string]string{"ROOT": "${workspaceFolder}"}), memSrc(map[string]string{"ROOT": "${HOME}"}, ""), result{false, false}},
		{"other args", mem(nil), model.Source{Kind: model.KindStdio, Command: "npx", Args: []string{"@modelcontextprotocol/server-memory"}}, result{false, false}},
		{"other command", mem(nil), model.Source{Kind: model.KindStdio, Command: "bunx", Args: []string{"-y", "@modelcontextprotocol/server-memory"}}, result{false, false}},
		{"cwd only in the entry", Server{Kind: KindStdio, Command: "x", Cwd: "/tmp"}, model.Source{Kind: model.KindStdio, Command: "x"}, result{false, false}},
		{"the same cwd, cleaned", Server{Kind: KindStdio, Command: "x", Cwd: "/tmp/"}, model.Source{Kind: model.KindStdio, Command: "x", Cwd: "/tmp"}, result{true, true}},
		{"other cwd", Server{Kind: KindStdio, Command: "x", Cwd: "/tmp/a"}, model.Source{Kind: model.KindStdio, Command: "x", Cwd: "/tmp/b"}, result{false, false}},
		// A project's entry that import gave its folder is still run by the
		// source an older import added with the cwd as written.
		{"the project's folder, the source with none", Server{Kind: KindStdio, Command: "node", Args: []string{"./server.js"}, Cwd: "/p", CwdFromProject: true}, model.Source{Kind: model.KindStdio, Command: "node", Args: []string{"./server.js"}}, result{true, false}},
		{"the project's folder, the source with it", Server{Kind: KindStdio, Command: "node", Args: []string{"./server.js"}, Cwd: "/p", CwdFromProject: true}, model.Source{Kind: model.KindStdio, Command: "node", Args: []string{"./server.js"}, Cwd: "/p/"}, result{true, true}},
		{"a relative cwd made absolute, the source with it as written", Server{Kind: KindStdio, Command: "node", Args: []string{"x.js"}, Cwd: "/p/tools", CwdWritten: "tools", CwdFromProject: true}, model.Source{Kind: model.KindStdio, Command: "node", Args: []string{"x.js"}, Cwd: "tools/"}, result{true, false}},
		{"the project's folder, the source in another", Server{Kind: KindStdio, Command: "node", Args: []string{"./server.js"}, Cwd: "/p", CwdFromProject: true}, model.Source{Kind: model.KindStdio, Command: "node", Args: []string{"./server.js"}, Cwd: "/q"}, result{false, false}},
		{"the project's folder, other args", Server{Kind: KindStdio, Command: "node", Args: []string{"./server.js"}, Cwd: "/p", CwdFromProject: true}, model.Source{Kind: model.KindStdio, Command: "node", Args: []string{"./other.js"}}, result{false, false}},
		// A credential is compared by name, not by value.
		{"the credential moved to the keychain", mem(map[string]string{"GITHUB_TOKEN": fakeToken1}), memSrc(nil, "GITHUB_TOKEN"), result{true, true}},
		{"a credential differing only in value", mem(map[string]string{"GITHUB_TOKEN": fakeToken1, "MEMORY_FILE_PATH": "/tmp/a.jsonl"}), memSrc(map[string]string{"GITHUB_TOKEN": fakeToken2, "MEMORY_FILE_PATH": "/tmp/a.jsonl"}, ""), result{true, true}},
		{"a credential filled in by the harness", mem(map[string]string{"GITHUB_TOKEN": "${GITHUB_TOKEN}"}), memSrc(nil, "GITHUB_TOKEN"), result{true, true}},
		{"a credential the source does not take", mem(map[string]string{"GITHUB_TOKEN": fakeToken1}), memSrc(nil, ""), result{false, false}},
		{"a credential in another variable", mem(map[string]string{"GH_TOKEN": fakeToken1}), memSrc(nil, "GITHUB_TOKEN"), result{false, false}},
		{"a credential only the source takes", mem(nil), memSrc(nil, "GITHUB_TOKEN"), result{true, false}},
		{"a credential differing, env too", mem(map[string]string{"GITHUB_TOKEN": fakeToken1, "MEMORY_FILE_PATH": "/tmp/a.jsonl"}), memSrc(nil, "GITHUB_TOKEN"), result{false, false}},
		{"stdio is not http", mem(nil), webSrc("https://x.example.com/mcp", nil, ""), result{false, false}},
		{"the same URL", web("https://x.example.com/mcp", nil), webSrc("https://x.example.com/mcp", nil, ""), result{true, true}},
		{"a trailing slash", web("https://x.example.com/mcp/", nil), webSrc("https://x.example.com/mcp", nil, ""), result{true, false}},
		{"another URL", web("https://x.example.com/mcp", nil), webSrc("https://y.example.com/mcp", nil, ""), result{false, false}},
		{"the same headers, named in another case", web("https://x.example.com/mcp", map[string]string{"X-Region": "eu"}), webSrc("https://x.example.com/mcp", map[string]string{"x-region": "eu"}, ""), result{true, true}},
		{"a header differing in value", web("https://x.example.com/mcp", map[string]string{"X-Region": "eu"}), webSrc("https://x.example.com/mcp", map[string]string{"X-Region": "us"}, ""), result{false, false}},
		{"a header only in the entry", web("https://x.example.com/mcp", map[string]string{"X-Region": "eu"}), webSrc("https://x.example.com/mcp", nil, ""), result{false, false}},
		{"a bearer token: the source's Authorization", web("https://x.example.com/mcp", map[string]string{"Authorization": "Bearer FAKE-token-0001"}), webSrc("https://x.example.com/mcp", nil, ""), result{true, true}},
		{"a header filled in by the harness is not compared", web("https://x.example.com/mcp", map[string]string{"Authorization": "Bearer ${X_TOKEN}", "X-Region": "${REGION}"}), webSrc("https://x.example.com/mcp", nil, ""), result{true, true}},
		{"an API key header differing only in value", web("https://x.example.com/mcp", map[string]string{"X-Api-Key": "FAKEkey0001FAKEkey0001"}), webSrc("https://x.example.com/mcp", nil, "X-API-Key"), result{true, true}},
		{"an API key the source sends as Bearer", web("https://x.example.com/mcp", map[string]string{"X-Api-Key": "FAKEkey0001FAKEkey0001"}), webSrc("https://x.example.com/mcp", nil, ""), result{false, false}},
		{"a credential header only the source takes", web("https://x.example.com/mcp", nil), webSrc("https://x.example.com/mcp", nil, "X-Api-Key"), result{true, false}},
	}
	for _, tt := range tests {
		var got result
		got.Same, got.Exact = sameServer(tt.s, tt.src)
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s: sameServer (-want +got):\n%s", tt.name, diff)
		}
	}
}

// TestProposeFindsTheExistingSource: an entry is the hub's source only
// when its environment (credentials aside) is the source's; of several
// sources that run it, the exact one; a server the hub does not have is
// proposed, under a free namespace.
func TestProposeFindsTheExistingSource(t *testing.T) {
	args := []string{"-y", "@modelcontextprotocol/server-memory"}
	entry := func(name string, env map[string]string) Server {
		return Server{Name: name, Kind: KindStdio, Command: "npx", Args: args, Env: env}
	}
	source := func(ns string, env map[string]string, secretEnv string) model.Source {
		return model.Source{Namespace: ns, Kind: model.KindStdio, Command: "npx", Args: args, Env: env, SecretEnv: secretEnv}
	}
	sources := []model.Source{
		source("gmem", nil, ""),
		source("ghmem", nil, "GITHUB_TOKEN"), // partly: runs an entry with no credential too
		source("memory2", map[string]string{"MEMORY_FILE_PATH": "/tmp/agent-memory.jsonl"}, ""),
		source("plain", nil, ""),
	}
	tests := []struct {
		name       string
		s          Server
		ns, exists string
	}{
		{"the same env", entry("memory", map[string]string{"MEMORY_FILE_PATH": "/tmp/agent-memory.jsonl"}), "memory2", "memory2"},
		{"no env: the exact one, the first", entry("gmem", nil), "gmem", "gmem"},
		{"a credential the source takes", entry("ghsecret", map[string]string{"GITHUB_TOKEN": fakeToken1}), "ghmem", "ghmem"},
		{"another env: new", entry("memory", map[string]string{"MEMORY_FILE_PATH": "/tmp/other.jsonl"}), "memory", ""},
		{"another credential: new", entry("ghsecret", map[string]string{"GH_TOKEN": fakeToken1}), "ghsecret", ""},
	}
	for _, tt := range tests {
		sc := &Scan{Found: []Found{{File: File{Harness: "a", Path: "/a"}, Servers: []Server{tt.s}}}}
		props := Propose(sc, sources)
		if len(props) != 1 {
			t.Fatalf("%s: %d proposals, want 1", tt.name, len(props))
		}
		if got := [2]string{props[0].Namespace, props[0].Existing}; got != [2]string{tt.ns, tt.exists} {
			t.Errorf("%s: namespace, existing = %q, want %q", tt.name, got, [2]string{tt.ns, tt.exists})
		}
	}
	// The exact source is preferred wherever it is in the list.
	sc := &Scan{Found: []Found{{File: File{Harness: "a", Path: "/a"}, Servers: []Server{entry("mem", nil)}}}}
	if p := Propose(sc, []model.Source{source("ghmem", nil, "GITHUB_TOKEN"), source("gmem", nil, "")}); p[0].Existing != "gmem" {
		t.Errorf("no env, the partial source first: existing = %q, want gmem", p[0].Existing)
	}
}

// TestProposeKnowsAProjectServerImportedAsWritten: a project's server
// naming its files by relative paths, imported before import gave it the
// project's folder (the source has no cwd), is that source: not proposed
// again as a second one, and the report says what the source lacks. A
// source with the folder is the exact one, preferred.
func TestProposeKnowsAProjectServerImportedAsWritten(t *testing.T) {
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	for p, data := range map[string]string{
		filepath.Join(dir, ".mcp.json"): `{"mcpServers": {"local": {"command": "node", "args": ["./server.js"]}}}`,
		filepath.Join(dir, "server.js"): "",
	} {
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	h, _ := Lookup("claude-code")
	sc := ScanFiles(Env{Home: home, Cwd: dir}, []Harness{h})
	old := model.Source{Namespace: "local", Kind: model.KindStdio, Command: "node", Args: []string{"./server.js"}}
	withDir := model.Source{Namespace: "local2", Kind: model.KindStdio, Command: "node", Args: []string{"./server.js"}, Cwd: dir}
	type got struct {
		Proposals int
		Existing  string
		Notes     []string
	}
	for _, tc := range []struct {
		name    string
		sources []model.Source
		want    got
	}{
		{"the old source", []model.Source{old}, got{1, "local", []string{"the hub's local was imported before import gave a project's server its folder: it runs with no working directory: wherever the hub runs, where the agent runs it in " + dir + "; to have the hub run it there, `capabilities hub remove local` and import it again"}}},
		{"the source with the folder, preferred", []model.Source{old, withDir}, got{1, "local2", nil}},
		{"none", nil, got{1, "", nil}},
	} {
		props := Propose(sc, tc.sources)
		g := got{Proposals: len(props)}
		if len(props) > 0 {
			g.Existing = props[0].Existing
		}
		if r := NewReport(props, sc); len(r.Servers) > 0 && r.Servers[0].Existing {
			g.Notes = r.Servers[0].Notes
		}
		if diff := cmp.Diff(tc.want, g); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}

// TestProposeKeepsOtherEnvironmentsApart: entries of the same command are
// one proposal only with the same working directory and environment
// (credentials included), or for HTTP the same URL and headers whatever
// their credential.
func TestProposeKeepsOtherEnvironmentsApart(t *testing.T) {
	x := func(name, cwd string, env map[string]string) Server {
		return Server{Name: name, Kind: KindStdio, Command: "x", Cwd: cwd, Env: env}
	}
	web := func(name string, h map[string]string) Server {
		return Server{Name: name, Kind: KindHTTP, URL: "https://x.example.com/mcp", Headers: h}
	}
	sc := &Scan{Found: []Found{
		{File: File{Harness: "a", Path: "/a"}, Servers: []Server{
			x("x", "", map[string]string{"MODE": "a"}),
			x("xtmp", "/tmp", nil),
			x("xtok", "", map[string]string{"X_TOKEN": fakeToken1}),
			web("eu", map[string]string{"X-Region": "eu", "Authorization": "Bearer FAKE-token-0001"}),
		}},
		{File: File{Harness: "b", Path: "/b"}, Servers: []Server{
			x("x", "", map[string]string{"MODE": "a"}),
			x("xb", "", map[string]string{"MODE": "b"}),
			x("xtmp", "/tmp/", nil),
			x("xvar", "/var/tmp", nil),
			x("xtok", "", map[string]string{"X_TOKEN": fakeToken2}),
			web("eu", map[string]string{"x-region": "eu"}),
			web("us", map[string]string{"X-Region": "us"}),
		}},
	}}
	got := map[string][]string{}
	for _, p := range Propose(sc, nil) {
		for _, o := range p.Origins {
			got[p.Namespace] = append(got[p.Namespace], o.Harness)
		}
	}
	want := map[string][]string{
		"x": {"a", "b"}, "xtmp": {"a", "b"}, "xtok": {"a"}, "eu": {"a", "b"},
		"xb": {"b"}, "xvar": {"b"}, "xtok2": {"b"}, "us": {"b"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("proposals and their harnesses (-want +got):\n%s", diff)
	}
}

// TestDirect: connect --replace turns off only the entries the hub runs as
// they are: not one with another environment, nor one holding a credential
// the hub's source does not take.
func TestDirect(t *testing.T) {
	f := File{Harness: "claude-code", Format: JSON, ServersKey: []string{"mcpServers"}, Vars: Vars{Braces: true, Default: true}}
	src := []byte(`{"mcpServers": {
  "memory": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"], "env": {"MEMORY_FILE_PATH": "/tmp/agent-memory.jsonl"}},
  "other": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"], "env": {"MEMORY_FILE_PATH": "/tmp/other.jsonl"}},
  "ghsecret": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"], "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "` + fakeToken1 + `"}},
  "github": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"], "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "` + fakeToken2 + `"}},
  "linear": {"type": "http", "url": "https://mcp.linear.example/mcp", "headers": {"Authorization": "Bearer FAKE-token-0001"}},
  "linear-eu": {"type": "http", "url": "https://mcp.linear.example/mcp", "headers": {"X-Region": "eu"}},
  "filled": {"command": "${BIN:-npx}", "args": ["-y", "@modelcontextprotocol/server-${NAME}"], "env": {"MEMORY_FILE_PATH": "${TMP}/agent-memory.jsonl"}}
}}`)
	vars := map[string]string{"NAME": "memory", "TMP": "/tmp"}
	env := Env{Getenv: func(k string) string { return vars[k] }}
	sources := []model.Source{
		{Namespace: "gmem", Kind: model.KindStdio, Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-memory"}},
		{Namespace: "memory2", Kind: model.KindStdio, Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-memory"}, Env: map[string]string{"MEMORY_FILE_PATH": "/tmp/agent-memory.jsonl"}},
		{Namespace: "github", Kind: model.KindStdio, Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-github"}, SecretEnv: "GITHUB_PERSONAL_ACCESS_TOKEN"},
		{Namespace: "linear", Kind: model.KindHTTP, URL: "https://mcp.linear.example/mcp"},
	}
	got, err := Direct(env, f, src, sources)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"filled", "github", "linear", "memory"}, got); diff != "" {
		t.Errorf("Direct (-want +got):\n%s", diff)
	}
}
