package harness

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func TestAllHasEveryHarnessOnce(t *testing.T) {
	if diff := cmp.Diff(order, Names()); diff != "" {
		t.Errorf("All() (-want +got):\n%s", diff)
	}
	for _, h := range All() {
		if len(h.Files(Env{Home: "/h", Cwd: "/p"})) == 0 {
			t.Errorf("%s has no files", h.Name)
		}
	}
}

func TestFiles(t *testing.T) {
	vars := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	tests := []struct {
		harness string
		env     Env
		want    []string // paths, in order
	}{
		{"claude-code", Env{Home: "/h", Cwd: "/p", GOOS: "linux"}, []string{"/h/.claude.json", "/h/.claude.json", "/p/.mcp.json"}},
		{"claude-code", Env{Home: "/h", GOOS: "linux", Getenv: vars("CLAUDE_CONFIG_DIR", "/cfg")}, []string{"/cfg/.claude.json"}},
		{"codex", Env{Home: "/h", GOOS: "linux", Getenv: vars("CODEX_HOME", "/ch")}, []string{"/ch/config.toml"}},
		{"codex", Env{Home: "/h", Cwd: "/p", GOOS: "darwin"}, []string{"/h/.codex/config.toml", "/p/.codex/config.toml"}},
		{"claude-desktop", Env{Home: "/h", GOOS: "linux"}, []string{"/h/.config/Claude/claude_desktop_config.json"}},
		{"claude-desktop", Env{Home: "/h", GOOS: "linux", Getenv: vars("XDG_CONFIG_HOME", "/x")}, []string{"/x/Claude/claude_desktop_config.json"}},
		{"claude-desktop", Env{Home: "/Users/ana", GOOS: "darwin"}, []string{"/Users/ana/Library/Application Support/Claude/claude_desktop_config.json"}},
		{"claude-desktop", Env{Home: `C:\Users\ana`, GOOS: "windows", Getenv: vars("APPDATA", `D:\Roaming`)}, []string{`D:\Roaming\Claude\claude_desktop_config.json`}},
		{"claude-desktop", Env{Home: `C:\Users\ana`, GOOS: "windows"}, []string{`C:\Users\ana\AppData\Roaming\Claude\claude_desktop_config.json`}},
		{"vscode", Env{Home: "/h", Cwd: "/p", GOOS: "linux"}, []string{"/h/.config/Code/User/mcp.json", "/p/.vscode/mcp.json"}},
		{"vscode", Env{Home: `C:\Users\ana`, Cwd: `C:\src\app`, GOOS: "windows"}, []string{`C:\Users\ana\AppData\Roaming\Code\User\mcp.json`, `C:\src\app\.vscode\mcp.json`}},
		{"zed", Env{Home: "/Users/ana", GOOS: "darwin"}, []string{"/Users/ana/.config/zed/settings.json"}},
		{"zed", Env{Home: `C:\Users\ana`, GOOS: "windows"}, []string{`C:\Users\ana\AppData\Roaming\Zed\settings.json`}},
		{"windsurf", Env{Home: `C:\Users\ana`, GOOS: "windows"}, []string{`C:\Users\ana\.codeium\windsurf\mcp_config.json`}},
		{"hermes", Env{Home: "/h", Getenv: vars("HERMES_HOME", "/hh")}, []string{"/hh/config.yaml"}},
		{"pi", Env{Home: "/h", Cwd: "/p", GOOS: "linux"}, []string{"/h/.pi/agent/mcp.json", "/h/.config/mcp/mcp.json", "/p/.pi/mcp.json"}},
		{"antigravity", Env{Home: "/h", GOOS: "linux"}, []string{"/h/.gemini/antigravity/mcp_config.json"}},
	}
	for _, tt := range tests {
		h, ok := Lookup(tt.harness)
		if !ok {
			t.Fatalf("no harness %s", tt.harness)
		}
		var got []string
		for _, f := range h.Files(tt.env) {
			got = append(got, f.Path)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s %s files (-want +got):\n%s", tt.harness, tt.env.GOOS, diff)
		}
	}
}

func TestWritable(t *testing.T) {
	env := Env{Home: "/h", Cwd: "/p", GOOS: "linux"}
	got := map[string][]bool{}
	for _, h := range All() {
		for _, f := range h.Files(env) {
			got[h.Name] = append(got[h.Name], f.Writable)
		}
	}
	want := map[string][]bool{
		"claude-code": {true, false, false}, "codex": {true, false}, "cursor": {true, false},
		"claude-desktop": {true}, "vscode": {true, false}, "gemini": {true, false}, "windsurf": {true},
		"zed": {true, false}, "antigravity": {false}, "hermes": {false}, "pi": {false, false, false},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("writable (-want +got):\n%s", diff)
	}
}

// sampleEnv lays the hand-written samples of testdata/harness out in a
// throwaway home and project directory.
func sampleEnv(t *testing.T) Env {
	t.Helper()
	root := filepath.Join(testenv.Root(t), "testdata", "harness")
	tmp := t.TempDir()
	env := Env{Home: filepath.Join(tmp, "home"), Cwd: filepath.Join(tmp, "project"), GOOS: "linux"}
	dirs, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		for part, dst := range map[string]string{"home": env.Home, "project": env.Cwd} {
			src := filepath.Join(root, d.Name(), part)
			err := filepath.WalkDir(src, func(p string, de fs.DirEntry, err error) error {
				if err != nil || de.IsDir() {
					return err
				}
				rel, _ := filepath.Rel(src, p)
				b, err := os.ReadFile(p)
				if err != nil {
					return err
				}
				q, _ := json.Marshal(env.Cwd)
				b = bytes.ReplaceAll(b, []byte(`"PROJECT_DIR"`), q)
				if err := os.MkdirAll(filepath.Dir(filepath.Join(dst, rel)), 0o700); err != nil {
					return err
				}
				return os.WriteFile(filepath.Join(dst, rel), b, 0o600)
			})
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				t.Fatal(err)
			}
		}
	}
	return env
}

// TestImportGolden reads every harness's sample and compares the import
// proposals (the dry-run JSON) with testdata/import.golden.json.
func TestImportGolden(t *testing.T) {
	env := sampleEnv(t)
	sc := ScanFiles(env, All())
	existing := []model.Source{{Namespace: "everything", Kind: model.KindStdio, Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-everything", "stdio"}, Cwd: "/tmp"}}
	r := NewReport(Propose(sc, existing), sc)
	got, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = bytes.ReplaceAll(got, []byte(env.Home), []byte("$HOME"))
	got = bytes.ReplaceAll(got, []byte(env.Cwd), []byte("$PROJECT"))
	got = append(got, '\n')
	golden := filepath.Join("testdata", "import.golden.json")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("import proposals (-golden +got):\n%s", diff)
	}
	for _, v := range []string{"ghp_TESTONLY", "lin_api_TESTONLY", "sk-test-TESTONLY", "xoxb-TESTONLY", "sbp_TESTONLY", "eyJhbGciOiJIUzI1NiJ9"} {
		if bytes.Contains(got, []byte(v)) {
			t.Errorf("the report holds a secret value %s…", v)
		}
	}
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		format    Format
		in        string
		line, col int
	}{
		{JSON, "{\n  \"mcpServers\": {\n    \"a\": { \"command\": \"x\" ]\n}", 3, 27},
		{JSONC, "\xef\xbb\xbf{\r\n  // c\r\n  \"a\": tru\r\n}", 3, 8},
		{JSONC, `[1, 2]`, 1, 1},
		{TOML, "[mcp_servers.a]\ncommand = \"x\"\nargs = [\"a\",\n", 3, 13},
		{TOML, "a = 1\na = 2\n", 2, 1},
		{YAML, "mcp_servers:\n  a:\n    command: [x\n", 2, 0},
		{YAML, "- a\n- b\n", 1, 0},
	}
	for _, tt := range tests {
		_, err := Decode(tt.format, []byte(tt.in))
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("Decode(%s, %q) = %v, want a *SyntaxError", tt.format, tt.in, err)
			continue
		}
		if se.Line != tt.line || se.Col != tt.col {
			t.Errorf("Decode(%s, %q) at line %d col %d (%v), want line %d col %d", tt.format, tt.in, se.Line, se.Col, se, tt.line, tt.col)
		}
	}
}

func TestDecodeBOMAndCRLF(t *testing.T) {
	for _, tt := range []struct {
		format Format
		in     string
	}{
		{JSON, "\xef\xbb\xbf{\r\n\"mcpServers\": {\"a\": {\"command\": \"x\"}}\r\n}\r\n"},
		{TOML, "\xef\xbb\xbf[mcp_servers.a]\r\ncommand = \"x\"\r\n"},
		{YAML, "\xef\xbb\xbfmcp_servers:\r\n  a:\r\n    command: x\r\n"},
	} {
		key := "mcpServers"
		if tt.format != JSON {
			key = "mcp_servers"
		}
		got, probs, err := Parse(File{Format: tt.format, ServersKey: []string{key}}, []byte(tt.in))
		if err != nil || len(probs) > 0 {
			t.Fatalf("Parse(%s): %v %v", tt.format, err, probs)
		}
		if diff := cmp.Diff([]Server{{Name: "a", Kind: KindStdio, Command: "x"}}, got); diff != "" {
			t.Errorf("Parse(%s) (-want +got):\n%s", tt.format, diff)
		}
	}
}

func TestEntryProblems(t *testing.T) {
	in := `{"mcpServers": {"ok": {"command": "x"}, "num": {"command": 3}, "none": {"type": "stdio"}, "both": {"command": "x", "url": "http://h"}, "list": "x"}}`
	got, probs, err := Parse(File{Format: JSON, ServersKey: []string{"mcpServers"}}, []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Name != "ok" {
		t.Errorf("servers = %+v, want only ok", got)
	}
	var msgs []string
	for _, p := range probs {
		msgs = append(msgs, p.Server+": "+p.Err.Error())
	}
	want := []string{
		"both: the entry has both a command and a URL",
		"list: the entry is a string, not an object",
		"none: the entry has neither a command nor a URL",
		"num: command is a number, not a string",
	}
	if diff := cmp.Diff(want, msgs); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
	if _, _, err := Parse(File{Format: JSON, ServersKey: []string{"mcpServers"}}, []byte(`{"mcpServers": []}`)); err == nil || !strings.Contains(err.Error(), "mcpServers is a list") {
		t.Errorf("a list of servers: %v", err)
	}
}

func TestScanListsAConfigThatIsADirectory(t *testing.T) {
	env := Env{Home: t.TempDir(), GOOS: "linux"}
	if err := os.MkdirAll(filepath.Join(env.Home, ".cursor", "mcp.json"), 0o700); err != nil {
		t.Fatal(err)
	}
	h, _ := Lookup("cursor")
	sc := ScanFiles(env, []Harness{h})
	if len(sc.Unreadable) != 1 || !strings.Contains(sc.Unreadable[0].Error, "is a directory") || len(sc.Found) != 0 {
		t.Errorf("scan = %+v", sc)
	}
}

func TestIsSecret(t *testing.T) {
	tests := []struct {
		name, value string
		want        bool
	}{
		{"GITHUB_PERSONAL_ACCESS_TOKEN", "anything", true},
		{"OPENAI_API_KEY", "x", true},
		{"DB_PASSWORD", "hunter2", true},
		{"client_secret", "abc", true},
		{"Authorization", "Basic dXNlcjpwYXNz", true},
		{"GH", "ghp_TESTONLYaaaaaaaaaaaaaaaaaaaaaaaaaaaa1", true},
		{"GH", "github_pat_11AAAAAAA0TESTONLYaaaaaaaaaaaa", true},
		{"OPENAI", "sk-proj-TESTONLYaaaaaaaaaaaaaaaa", true},
		{"SLACK", "xoxb-123-456-TESTONLYabc", true},
		{"SLACK", "xoxp-123-456-TESTONLYabc", true},
		{"JWT", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.sig", true},
		{"X-Auth", "Bearer abc.def", true},
		{"GITHUB_TOKEN", "${GITHUB_TOKEN}", false},
		{"GITHUB_TOKEN", "${input:github-token}", false},
		{"Authorization", "Bearer ${CAPABILITIES_TOKEN}", false},
		{"API_KEY", "${env:API_KEY}", false},
		{"API_KEY", "", false},
		{"MEMORY_FILE_PATH", "/tmp/memory.jsonl", false},
		{"SLACK_TEAM_ID", "T01234567", false},
		{"MODE", "sk-short", false},
		{"MAX_TOKENS", "4096", false},
		{"USE_API_KEY", "true", false},
		{"SSH_KEY_PATH", "~/.ssh/id_ed25519", false},
		{"KEY_FILE", "/etc/app/key.pem", false},
		{"API_KEY", "/9j4KxQm+Zz0TESTONLY/aa==", true}, // base64 may begin with "/"
		{"TOKEN_RATE", "0.5", false},
		{"API_KEY", "4096abc", true},
		{"NOT_NAMED", "ghp_TESTONLYaaaaaaaaaaaaaaaaaaaaaaaaaaaa1", true},
	}
	for _, tt := range tests {
		if got := IsSecret(tt.name, tt.value); got != tt.want {
			t.Errorf("IsSecret(%q, %q) = %v, want %v", tt.name, tt.value, got, tt.want)
		}
	}
}

func TestProposeMergesTheSameServer(t *testing.T) {
	mem := Server{Name: "memory", Kind: KindStdio, Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-memory"}}
	memOff := mem
	memOff.Disabled = true
	other := mem
	other.Name, other.Env = "memory", map[string]string{"MEMORY_FILE_PATH": "/tmp/m.jsonl"}
	sc := &Scan{Found: []Found{
		{File: File{Harness: "a", Path: "/a"}, Servers: []Server{memOff}},
		{File: File{Harness: "b", Path: "/b"}, Servers: []Server{mem, {Name: "hub", Kind: KindHTTP, URL: "https://x.example.com/mcp"}}},
		{File: File{Harness: "c", Path: "/c"}, Servers: []Server{other, {Name: "remote", Kind: KindHTTP, URL: "https://x.example.com/mcp"}}},
	}}
	props := Propose(sc, []model.Source{{Namespace: "memory", Kind: model.KindHTTP, URL: "https://elsewhere/mcp"}})
	type row struct {
		NS       string
		Disabled bool
		Origins  []Origin
	}
	var got []row
	for _, p := range props {
		got = append(got, row{p.Namespace, p.Server.Disabled, p.Origins})
	}
	want := []row{
		{"memory2", false, []Origin{{Harness: "a", Path: "/a"}, {Harness: "b", Path: "/b"}}}, // enabled in b: enabled
		{"x", false, []Origin{{Harness: "b", Path: "/b"}, {Harness: "c", Path: "/c"}}},       // "hub" is reserved: from the host
		{"memory3", false, []Origin{{Harness: "c", Path: "/c"}}},                             // another env: another server
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("proposals (-want +got):\n%s", diff)
	}
}

// TestProposeFromRepo: a server is the repository's only when every file
// it was found in is the current directory's own; Claude Code's local
// scope is kept in the person's file, and a file that is both a project
// and a user file (the current directory is home) is the person's.
func TestProposeFromRepo(t *testing.T) {
	s := func(name string) Server { return Server{Name: name, Kind: KindStdio, Command: name} }
	repo := File{Harness: "claude-code", Path: "/r/.mcp.json", Project: true}
	local := File{Harness: "claude-code", Path: "/h/.claude.json", Project: true, InUserFile: true}
	user := File{Harness: "cursor", Path: "/h/.cursor/mcp.json"}
	both := File{Harness: "cursor", Path: "/h/.cursor/mcp.json", Project: true}
	sc := &Scan{Found: []Found{
		{File: repo, Servers: []Server{s("only-repo"), s("also-user")}},
		{File: local, Servers: []Server{s("local")}},
		{File: user, Servers: []Server{s("also-user"), s("home")}},
		{File: both, Servers: []Server{s("home")}},
	}}
	got := map[string]bool{}
	for _, p := range Propose(sc, nil) {
		got[p.Server.Name] = p.FromRepo()
	}
	want := map[string]bool{"only-repo": true, "also-user": false, "local": false, "home": false}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("FromRepo by server (-want +got):\n%s", diff)
	}
}

func TestRequestMovesTheCredential(t *testing.T) {
	p := Proposal{Namespace: "github", Secrets: []string{"GITHUB_PERSONAL_ACCESS_TOKEN"}, Server: Server{Kind: KindStdio, Command: "npx", Args: []string{"-y", "gh"},
		Env: map[string]string{"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_x", "GITHUB_HOST": "github.com"}}}
	req, _, err := p.Request()
	if err != nil {
		t.Fatal(err)
	}
	if req.SecretEnv != "GITHUB_PERSONAL_ACCESS_TOKEN" || req.Secret != "ghp_x" || req.Env["GITHUB_PERSONAL_ACCESS_TOKEN"] != "" || req.Env["GITHUB_HOST"] != "github.com" {
		t.Errorf("stdio request = %+v", req)
	}
	if p.Server.Env["GITHUB_PERSONAL_ACCESS_TOKEN"] != "ghp_x" {
		t.Errorf("the proposal's env was changed")
	}
	h := Proposal{Namespace: "linear", Secrets: []string{"Authorization"}, Server: Server{Kind: KindHTTP, URL: "https://l/mcp", Headers: map[string]string{"Authorization": "Bearer tok", "X-Region": "eu"}}}
	req, notes, err := h.Request()
	if err != nil || req.Secret != "tok" || req.SecretHeader != "" || len(notes) != 0 || !reflect.DeepEqual(req.Headers, map[string]string{"X-Region": "eu"}) {
		t.Errorf("http request = %+v %q %v", req, notes, err)
	}
	k := Proposal{Namespace: "s", Secrets: []string{"X-Api-Key"}, Server: Server{Kind: KindHTTP, URL: "https://s/mcp", Headers: map[string]string{"X-Api-Key": "k"}}}
	if req, _, _ := k.Request(); req.SecretHeader != "X-Api-Key" || req.Secret != "k" {
		t.Errorf("api key request = %+v", req)
	}
	// The hub sends a credential in Authorization as Bearer: a Basic one
	// cannot be carried over (it used to be sent as "Bearer Basic …").
	basic := Proposal{Namespace: "b", Secrets: []string{"Authorization"}, Server: Server{Kind: KindHTTP, URL: "https://b/mcp", Headers: map[string]string{"Authorization": "Basic dXNlcjpwYXNz"}}}
	if req, notes, _ := basic.Request(); req.Secret != "" || req.SecretHeader != "" || len(req.Headers) != 0 || len(notes) != 1 || !strings.Contains(notes[0], "left out") {
		t.Errorf("basic request = %+v %q", req, notes)
	}
	ref := Proposal{Namespace: "gh", Server: Server{Kind: KindStdio, Command: "npx", Env: map[string]string{"GITHUB_TOKEN": "${input:gh}", "ROOT": "${workspaceFolder}"}}}
	req, notes, _ = ref.Request()
	if req.SecretEnv != "GITHUB_TOKEN" || req.Secret != "" || req.Env["GITHUB_TOKEN"] != "" || req.Env["ROOT"] != "${workspaceFolder}" || len(notes) != 2 {
		t.Errorf("reference request = %+v %q", req, notes)
	}
	two := Proposal{Namespace: "two", Secrets: []string{"A_TOKEN", "B_KEY"}, Server: Server{Kind: KindStdio, Command: "x"}}
	if _, _, err := two.Request(); err == nil || !strings.Contains(err.Error(), "2 credentials") {
		t.Errorf("two secrets: %v", err)
	}
}

// TestImportURLPassword: a DATABASE_URL with a password found in an agent
// config is a plain-text credential like a token: import moves the whole
// value into the keychain, and the server reads the same variable back
// from the source's connection (the scrubber learns the value and, from
// model.Secrets, its password). A password too short to scrub on its own,
// and an argument that holds one, are noted.
func TestImportURLPassword(t *testing.T) {
	s := Server{Kind: KindStdio, Command: "npx", Args: []string{"-y", "pg-mcp", "--url", "postgres://app:pw@args/prod"},
		Env: map[string]string{"DATABASE_URL": "postgres://app:Hunter2SuperSecretPw@db.internal/prod", "PGSSLMODE": "require"}}
	if diff := cmp.Diff([]string{"DATABASE_URL"}, Secrets(s)); diff != "" {
		t.Fatalf("Secrets (-want +got):\n%s", diff)
	}
	p := Proposal{Namespace: "pg", Secrets: Secrets(s), Server: s}
	req, notes, err := p.Request()
	if err != nil {
		t.Fatal(err)
	}
	type moved struct{ SecretEnv, Secret string }
	if diff := cmp.Diff(moved{"DATABASE_URL", "postgres://app:Hunter2SuperSecretPw@db.internal/prod"}, moved{req.SecretEnv, req.Secret}); diff != "" {
		t.Errorf("moved (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"PGSSLMODE": "require"}, req.Env); diff != "" {
		t.Errorf("env (-want +got):\n%s", diff)
	}
	want := []string{
		"argument --url holds a credential in plain text: it stays in the command line, scrubbed from what the model sees",
		"the password in argument --url is too short or too common to scrub on its own: the model sees [secret] for the whole value, but not for the password written alone; give it a long, random password",
	}
	if diff := cmp.Diff(want, notes); diff != "" {
		t.Errorf("notes (-want +got):\n%s", diff)
	}
	// Two: the hub keeps one per source, as for tokens.
	s.Env["GITHUB_PAT"] = "abcdEFGHijklMNOPqrst1234"
	if diff := cmp.Diff([]string{"DATABASE_URL", "GITHUB_PAT"}, Secrets(s)); diff != "" {
		t.Errorf("Secrets (-want +got):\n%s", diff)
	}
}

func TestDecodeLeavesTheBytesAlone(t *testing.T) {
	src := []byte("{\n  // a comment\n  \"mcpServers\": {\"a\": {\"command\": \"x\",},},\n}\n")
	was := string(src)
	if _, err := Decode(JSONC, src); err != nil {
		t.Fatal(err)
	}
	if string(src) != was {
		t.Errorf("Decode changed its input:\n%s", src)
	}
}

// TestClaudeCodeFromASubdirectory: run in a folder below a git repository's
// root, Claude Code keys its local-scope servers by the repository's root
// and reads the .mcp.json of every folder up from the current one; import
// finds what `claude mcp list` there lists.
func TestClaudeCodeFromASubdirectory(t *testing.T) {
	tmp, err := filepath.EvalSymlinks(t.TempDir()) // Claude Code writes real paths (macOS: /private/var/…)
	if err != nil {
		t.Fatal(err)
	}
	repo := filepath.Join(tmp, "repo")
	cwd := filepath.Join(repo, "sub", "deeper")
	files := map[string]string{
		filepath.Join(repo, ".git", "HEAD"):        "ref: refs/heads/main\n",
		filepath.Join(tmp, "home", ".claude.json"): `{"projects": {` + string(mustJSON(t, repo)) + `: {"mcpServers": {"local": {"command": "local-mcp"}}}}}`,
		filepath.Join(repo, ".mcp.json"):           `{"mcpServers": {"root": {"command": "root-mcp"}}}`,
		filepath.Join(repo, "sub", ".mcp.json"):    `{"mcpServers": {"mid": {"command": "mid-mcp"}}}`,
		filepath.Join(cwd, ".keep"):                "",
	}
	for p, data := range files {
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	h, _ := Lookup("claude-code")
	// The same folder reached through a symlink: Claude Code keys the
	// project by its real path.
	link := filepath.Join(tmp, "link")
	if err := os.Symlink(repo, link); err != nil {
		t.Fatal(err)
	}
	for _, cwd := range []string{cwd, filepath.Join(link, "sub", "deeper")} {
		sc := ScanFiles(Env{Home: filepath.Join(tmp, "home"), Cwd: cwd}, []Harness{h})
		got := map[string]string{} // server → the file it was read from
		for _, f := range sc.Found {
			for _, s := range f.Servers {
				p, _ := filepath.EvalSymlinks(f.File.Path)
				rel, _ := filepath.Rel(tmp, p)
				got[s.Name] = filepath.ToSlash(rel)
			}
		}
		want := map[string]string{"local": "home/.claude.json", "root": "repo/.mcp.json", "mid": "repo/sub/.mcp.json"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("from %s: servers found (-want +got):\n%s\nunreadable: %v", cwd, diff, sc.Unreadable)
		}
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestProjectServerCwd: a project's server that names a file of the project
// by a relative path runs there in the hub too (the agent starts it in the
// project, the hub anywhere); other servers keep their working directory.
func TestProjectServerCwd(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"server.mjs", filepath.Join("tools", "x", "main.py")} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	stdio := func(cwd, cmd string, args ...string) Server {
		return Server{Kind: KindStdio, Command: cmd, Args: args, Cwd: cwd}
	}
	for _, tc := range []struct {
		name string
		s    Server
		want string
	}{
		{"node server.mjs", stdio("", "node", "server.mjs"), dir},
		{"./bin/server, not there yet", stdio("", "./bin/server"), dir},
		{"uv run tools/x/main.py", stdio("", "uv", "run", "tools/x/main.py"), dir},
		{"a relative cwd", stdio("tools", "node", "x.js"), filepath.Join(dir, "tools")},
		{"an absolute cwd", stdio("/srv", "node", "server.mjs"), "/srv"},
		{"npx and a package", stdio("", "npx", "-y", "@modelcontextprotocol/server-memory"), ""},
		{"uvx and a name", stdio("", "uvx", "mcp-server-time"), ""},
		{"a file not in the project", stdio("", "node", "missing.js"), ""},
		{"absolute paths", stdio("", "/usr/bin/node", filepath.Join(dir, "server.mjs")), ""},
		{"http", Server{Kind: KindHTTP, URL: "http://x/mcp"}, ""},
	} {
		if got := projectCwd(tc.s, dir); got != tc.want {
			t.Errorf("%s: cwd %q, want %q", tc.name, got, tc.want)
		}
	}

	// Through the scan: the repository's .mcp.json gets it, the user's
	// own config does not.
	home := filepath.Join(dir, "home")
	for p, data := range map[string]string{
		filepath.Join(dir, ".mcp.json"):     `{"mcpServers": {"local": {"command": "node", "args": ["server.mjs"]}}}`,
		filepath.Join(home, ".claude.json"): `{"mcpServers": {"user": {"command": "node", "args": ["server.mjs"]}}}`,
	} {
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	h, _ := Lookup("claude-code")
	got := map[string]string{}
	for _, f := range ScanFiles(Env{Home: home, Cwd: dir}, []Harness{h}).Found {
		for _, s := range f.Servers {
			got[s.Name] = s.Cwd
		}
	}
	if diff := cmp.Diff(map[string]string{"local": dir, "user": ""}, got); diff != "" {
		t.Errorf("the servers' cwd (-want +got):\n%s", diff)
	}
}

// TestGeminiAllowedExcluded: Gemini CLI starts only the servers its
// mcp.allowed lists (when it is there) and none its mcp.excluded lists:
// import reads the others as disabled, and says why.
func TestGeminiAllowedExcluded(t *testing.T) {
	h, _ := Lookup("gemini")
	f := h.Files(Env{Home: "/h", GOOS: "linux"})[0]
	servers := `"mcpServers": {"a": {"command": "a"}, "b": {"command": "b"}, "c": {"command": "c"}}`
	for _, tc := range []struct {
		name, doc string
		want      map[string]string // server → why it is off ("" on)
	}{
		{"no lists", `{` + servers + `}`, map[string]string{"a": "", "b": "", "c": ""}},
		{"excluded", `{"mcp": {"excluded": ["b"]}, ` + servers + `}`, map[string]string{"a": "", "b": "mcp.excluded lists it: take it out there", "c": ""}},
		{"allowed", `{"mcp": {"allowed": ["a", "b"]}, ` + servers + `}`, map[string]string{"a": "", "b": "", "c": "mcp.allowed does not list it: add it there"}},
		{"both", `{"mcp": {"allowed": ["a", "b"], "excluded": ["a"]}, ` + servers + `}`, map[string]string{"a": "mcp.excluded lists it: take it out there", "b": "", "c": "mcp.allowed does not list it: add it there"}},
		{"an empty allowed list", `{"mcp": {"allowed": []}, ` + servers + `}`, map[string]string{"a": "mcp.allowed does not list it: add it there", "b": "mcp.allowed does not list it: add it there", "c": "mcp.allowed does not list it: add it there"}},
	} {
		doc, err := Decode(f.Format, []byte(tc.doc))
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		ss, _, err := Servers(f, doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range ss {
			got[s.Name] = TurnedOff(f, doc, s.Name)
			if s.Disabled != (got[s.Name] != "") {
				t.Errorf("%s: %s is disabled %v, but TurnedOff says %q", tc.name, s.Name, s.Disabled, got[s.Name])
			}
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}
