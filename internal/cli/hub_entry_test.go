package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/capabilities-sh/capabilities/engine/harness"
	"github.com/google/go-cmp/cmp"
)

// TestIsHubEntry: the rule for an entry that is connect's (and that
// connect may update, disconnect may take out), and the person's entries
// it must not take for one.
func TestIsHubEntry(t *testing.T) {
	stdio := func(cmd string, args ...string) harness.Server {
		return harness.Server{Name: "capabilities", Kind: harness.KindStdio, Command: cmd, Args: args}
	}
	withEnv := func(s harness.Server, env map[string]string) harness.Server { s.Env = env; return s }
	serve := []string{"hub", "serve", "--stdio"}
	tests := []struct {
		name string
		s    harness.Server
		bins []string // hubBinaries
		want bool
	}{
		{"what connect writes", stdio("/usr/local/bin/capabilities", "hub", "serve", "--stdio", "--profile", "default"), nil, true},
		{"an older path", stdio("/old/place/capabilities", "hub", "serve", "--stdio", "--profile", "default"), nil, true},
		{"another profile", stdio("/usr/bin/capabilities", "hub", "serve", "--stdio", "--profile", "issues"), nil, true},
		{"--profile=NAME", stdio("/usr/bin/capabilities", "hub", "serve", "--stdio", "--profile=issues"), nil, true},
		{"no profile (the README's claude mcp add)", stdio("capabilities", serve...), nil, true},
		{"Windows", stdio(`C:\Program Files\capabilities\capabilities.exe`, serve...), nil, true},
		{"the hub's home", withEnv(stdio("/usr/bin/capabilities", serve...), map[string]string{"CAPABILITIES_HOME": "/tmp/demo"}), nil, true},
		{"other env", withEnv(stdio("/usr/bin/capabilities", serve...), map[string]string{"CAPABILITIES_HOME": "/x", "DEBUG": "1"}), nil, false},
		{"a working directory", func() harness.Server { s := stdio("/usr/bin/capabilities", serve...); s.Cwd = "/tmp"; return s }(), nil, false},
		{"http", harness.Server{Name: "capabilities", Kind: harness.KindHTTP, URL: "http://127.0.0.1:4790/mcp"}, nil, false},
		{"another binary", stdio("npx", "-y", "capabilities", "hub", "serve", "--stdio"), nil, false},
		{"a wrapper named like it", stdio("/usr/bin/capabilities-wrapper", serve...), nil, false},
		{"serve over http", stdio("/usr/bin/capabilities", "hub", "serve", "--http"), nil, false},
		{"more flags", stdio("/usr/bin/capabilities", "hub", "serve", "--stdio", "--profile", "default", "--verbose"), nil, false},
		{"an empty profile", stdio("/usr/bin/capabilities", "hub", "serve", "--stdio", "--profile", ""), nil, false},
		{"no args", stdio("/usr/bin/capabilities"), nil, false},
		{"a release download connect wrote", stdio("/home/me/Downloads/capabilities_linux_amd64", "hub", "serve", "--stdio", "--profile", "default"), []string{"/home/me/Downloads/capabilities_linux_amd64"}, true},
		{"a binary of another name connect did not write", stdio("/home/me/Downloads/capabilities_linux_amd64", "hub", "serve", "--stdio", "--profile", "default"), []string{"/usr/bin/capabilities_linux_amd64"}, false},
		{"connect's binary, other arguments", stdio("/home/me/Downloads/capabilities_linux_amd64", "hub", "serve", "--http"), []string{"/home/me/Downloads/capabilities_linux_amd64"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := isHubEntry(tt.s, tt.bins); got != tt.want {
				t.Errorf("isHubEntry(%+v) = %v, want %v", tt.s, got, tt.want)
			}
		})
	}
}

// TestHubEnv: the entry carries CAPABILITIES_HOME only when the hub is not
// at the default place.
func TestHubEnv(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	def := filepath.Join(home, ".capabilities")
	other := filepath.Join(home, "demo")
	link := filepath.Join(home, "link")
	if err := os.MkdirAll(def, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(def, link); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, value string
		want        map[string]string
	}{
		{"unset", "", nil},
		{"the default, spelled out", def + "/", nil},
		{"a symlink to the default", link, nil},
		{"another place", other, map[string]string{"CAPABILITIES_HOME": other}},
		{"a relative path, made absolute", "rel/hub", map[string]string{"CAPABILITIES_HOME": filepath.Join(mustGetwd(t), "rel", "hub")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("CAPABILITIES_HOME", tt.value)
			got, err := hubEnv()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("hubEnv() (-want +got):\n%s", diff)
			}
		})
	}
}

func mustGetwd(t *testing.T) string {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return wd
}

// connectFiles are the user configs of Claude Code (JSON), Codex (TOML)
// and Gemini CLI (JSONC) under home.
func connectFiles(t *testing.T, home string) map[string]harness.File {
	t.Helper()
	env := harness.Env{Home: home}
	out := map[string]harness.File{}
	for _, name := range []string{"claude-code", "codex", "gemini"} {
		h, ok := harness.Lookup(name)
		if !ok {
			t.Fatalf("no harness %s", name)
		}
		out[name] = h.Files(env)[0]
	}
	return out
}

// TestConnectEntryCarriesTheHome: with a hub elsewhere than the default
// place, the entry connect writes holds CAPABILITIES_HOME in each format's
// own env syntax, as each harness reads it back; with the default, no env
// at all. A second connect changes nothing.
func TestConnectEntryCarriesTheHome(t *testing.T) {
	const bin = "/usr/local/bin/capabilities"
	src := map[string]string{
		"claude-code": "{\n  \"mcpServers\": {}\n}\n",
		"codex":       "model = \"o3\"\n",
		"gemini":      "{\n  // mine\n  \"mcpServers\": {},\n}\n",
	}
	args := []string{"hub", "serve", "--stdio", "--profile", "default"}
	for _, env := range []map[string]string{nil, {"CAPABILITIES_HOME": "/tmp/demo hub"}} {
		for name, f := range connectFiles(t, "/home/me") {
			t.Run(name+"/"+env["CAPABILITIES_HOME"], func(t *testing.T) {
				c := connectChange(f, bin, nil, nil, "default", env)
				once, err := c.Edit([]byte(src[name]))
				if err != nil {
					t.Fatal(err)
				}
				servers, probs, err := harness.Parse(f, once)
				if err != nil || len(probs) > 0 {
					t.Fatalf("the written file does not read back: %v %v\n%s", err, probs, once)
				}
				want := []harness.Server{{Name: "capabilities", Kind: harness.KindStdio, Command: bin, Args: args, Env: env}}
				if diff := cmp.Diff(want, servers); diff != "" {
					t.Errorf("entry (-want +got):\n%s\nfile:\n%s", diff, once)
				}
				if !isHubEntry(servers[0], nil) {
					t.Errorf("connect's own entry is not isHubEntry: %+v", servers[0])
				}
				if (env == nil) == strings.Contains(string(once), "CAPABILITIES_HOME") {
					t.Errorf("env %v, file:\n%s", env, once)
				}
				twice, err := c.Edit(once)
				if err != nil || !bytes.Equal(twice, once) {
					t.Errorf("a second connect changed the file (%v):\n%s", err, twice)
				}
			})
		}
	}
}

// TestEntryTextCarriesTheHome: the entry printed for a harness connect
// does not write (Antigravity and pi: JSON, Hermes: YAML) carries it too.
func TestEntryTextCarriesTheHome(t *testing.T) {
	env := map[string]string{"CAPABILITIES_HOME": "/tmp/demo"}
	tests := []struct {
		format harness.Format
		env    map[string]string
		want   string
	}{
		{harness.YAML, nil, "capabilities:\n  command: \"/b/capabilities\"\n  args: [\"hub\", \"serve\", \"--stdio\", \"--profile\", \"default\"]\n"},
		{harness.YAML, env, "capabilities:\n  command: \"/b/capabilities\"\n  args: [\"hub\", \"serve\", \"--stdio\", \"--profile\", \"default\"]\n  env:\n    CAPABILITIES_HOME: \"/tmp/demo\"\n"},
		{harness.JSON, nil, "\"capabilities\": {\n  \"args\": [\n    \"hub\",\n    \"serve\",\n    \"--stdio\",\n    \"--profile\",\n    \"default\"\n  ],\n  \"command\": \"/b/capabilities\"\n}\n"},
		{harness.JSON, env, "\"capabilities\": {\n  \"args\": [\n    \"hub\",\n    \"serve\",\n    \"--stdio\",\n    \"--profile\",\n    \"default\"\n  ],\n  \"command\": \"/b/capabilities\",\n  \"env\": {\n    \"CAPABILITIES_HOME\": \"/tmp/demo\"\n  }\n}\n"},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, entryText(tt.format, "/b/capabilities", "default", tt.env)); diff != "" {
			t.Errorf("entryText(%s, env %v) (-want +got):\n%s", tt.format, tt.env, diff)
		}
	}
}

// TestOwnEntry: an entry of the hub's name that connect did not write is
// described with its credentials masked; connect's own is not one.
func TestOwnEntry(t *testing.T) {
	files := connectFiles(t, "/home/me")
	tests := []struct {
		name, harness, src string
		want               *ownJSON
	}{
		{"Claude Code's HTTP entry (the README's)", "claude-code",
			`{"mcpServers": {"capabilities": {"type": "http", "url": "http://127.0.0.1:4790/mcp", "headers": {"Authorization": "Bearer abc"}}}}`,
			&ownJSON{Name: "capabilities", Kind: "http", URL: "http://127.0.0.1:4790/mcp", Headers: map[string]string{"Authorization": "Bearer ****"}}},
		{"a token in the URL and a password", "codex",
			"[mcp_servers.capabilities]\nurl = \"https://me:pw@h.example/mcp?token=abc&v=1#x\"\nhttp_headers = { X-Key = \"abc\" }\n",
			&ownJSON{Name: "capabilities", Kind: "http", URL: "https://me:****@h.example/mcp?token=****&v=****#x", Headers: map[string]string{"X-Key": "****"}}},
		{"a variable the harness fills in stays", "gemini",
			"{\"mcpServers\": {\"capabilities\": {\"httpUrl\": \"http://127.0.0.1:4790/mcp\", \"headers\": {\"Authorization\": \"Bearer ${TOKEN}\"},},},}",
			&ownJSON{Name: "capabilities", Kind: "http", URL: "http://127.0.0.1:4790/mcp", Headers: map[string]string{"Authorization": "Bearer ${TOKEN}"}}},
		{"another stdio server", "codex",
			"[mcp_servers.capabilities]\ncommand = \"npx\"\nargs = [\"-y\", \"some-mcp\", \"--api-key\", \"abc\", \"--token=abc\", \"ghp_abcdefghijklmnopqrstuvwxyz\"]\n",
			&ownJSON{Name: "capabilities", Kind: "stdio", Command: "npx", Args: []string{"-y", "some-mcp", "--api-key", "****", "--token=****", "****"}}},
		{"not understood", "claude-code", `{"mcpServers": {"capabilities": {"command": 3}}}`,
			&ownJSON{Name: "capabilities", Problem: "command is a number, not a string"}},
		{"connect's, with the home", "claude-code",
			`{"mcpServers": {"capabilities": {"type": "stdio", "command": "/old/capabilities", "args": ["hub", "serve", "--stdio"], "env": {"CAPABILITIES_HOME": "/x"}}}}`, nil},
		{"none", "codex", "model = \"o3\"\n", nil},
		{"no file", "gemini", "", nil},
		{"a file that does not parse (the edit says so)", "gemini", "{", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ownEntry(files[tt.harness], []byte(tt.src), "capabilities", nil)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ownEntry (-want +got):\n%s", diff)
			}
			if got != nil && strings.Contains(got.String(), "abc") {
				t.Errorf("a credential shows: %s", got)
			}
		})
	}
}

// fakeSelf makes connect see a capabilities binary that answers
// --version (the test binary does not), and gives its path.
func fakeSelf(t *testing.T) string {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("a shell script stands for the binary")
	}
	bin := filepath.Join(t.TempDir(), "capabilities")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho 'capabilities 0.0.0-test'\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	old := os.Args[0]
	os.Args[0] = bin
	t.Cleanup(func() { os.Args[0] = old })
	return bin
}

// connectHome is a throwaway HOME with the configs in files (path under
// home → bytes), and a hub elsewhere (CAPABILITIES_HOME=home/caps).
func connectHome(t *testing.T, files map[string]string) string {
	t.Helper()
	home := t.TempDir()
	t.Setenv("HOME", home)
	for _, k := range []string{"XDG_CONFIG_HOME", "CODEX_HOME", "CLAUDE_CONFIG_DIR", "APPDATA"} {
		t.Setenv(k, "")
	}
	t.Setenv("CAPABILITIES_HOME", filepath.Join(home, "caps"))
	for p, b := range files {
		p = filepath.Join(home, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(b), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return home
}

func runMain(args ...string) (code int, stdout, stderr string) {
	var o, e bytes.Buffer
	code = Main(args, strings.NewReader(""), &o, &e)
	return code, o.String(), e.String()
}

// TestConnectLeavesTheirEntry: a person's own capabilities entry (an HTTP
// one, in Claude Code, Codex and Gemini CLI) survives connect and
// disconnect byte for byte; connect says so (credentials masked) and fails
// when it could write nothing, succeeds when it wrote another config.
func TestConnectLeavesTheirEntry(t *testing.T) {
	fakeSelf(t)
	theirs := map[string]string{
		".claude.json":          "{\n  \"mcpServers\": {\n    \"capabilities\": {\n      \"type\": \"http\",\n      \"url\": \"http://127.0.0.1:4790/mcp\",\n      \"headers\": {\n        \"Authorization\": \"Bearer s3cr3t\"\n      }\n    }\n  }\n}\n",
		".codex/config.toml":    "# mine\n[mcp_servers.capabilities]\nurl = \"http://127.0.0.1:4790/mcp\"\nhttp_headers = { Authorization = \"Bearer s3cr3t\" }\n",
		".gemini/settings.json": "{\n  \"mcpServers\": {\n    // mine\n    \"capabilities\": {\"httpUrl\": \"http://127.0.0.1:4790/mcp\", \"headers\": {\"Authorization\": \"Bearer s3cr3t\"}},\n  },\n}\n",
	}
	home := connectHome(t, theirs)
	unchanged := func(when string) {
		t.Helper()
		for p, want := range theirs {
			if got, _ := os.ReadFile(filepath.Join(home, p)); string(got) != want {
				t.Errorf("%s: %s changed:\n%s", when, p, got)
			}
		}
	}

	code, out, errOut := runMain("hub", "connect", "--client", "claude-code,codex,gemini")
	if code != exitError || !strings.Contains(errOut, `nothing written: each config found already has its own "capabilities" entry`) {
		t.Errorf("connect: exit %d, stderr %q: want 1 and nothing written", code, errOut)
	}
	for _, h := range []string{"claude-code", "codex", "gemini"} {
		if !strings.Contains(out, h+": ") || !strings.Contains(out, "kept as it is") {
			t.Errorf("connect does not name %s as kept:\n%s", h, out)
		}
	}
	if !strings.Contains(out, `it already has its own "capabilities" entry, not one connect writes: http http://127.0.0.1:4790/mcp, header Authorization: Bearer ****`) ||
		!strings.Contains(out, "remove that one") || strings.Contains(out, "s3cr3t") {
		t.Errorf("connect's note:\n%s", out)
	}
	unchanged("connect")

	code, out, _ = runMain("hub", "connect", "--client", "claude-code,codex,gemini", "--json")
	var doc struct{ Files []editJSON }
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("connect --json: %v\n%s", err, out)
	}
	own := []ownJSON{{Name: "capabilities", Kind: "http", URL: "http://127.0.0.1:4790/mcp", Headers: map[string]string{"Authorization": "Bearer ****"}}}
	var want []editJSON
	for _, f := range connectFiles(t, home) {
		want = append(want, editJSON{Harness: f.Harness, Path: f.Path, Status: "kept", Own: own})
	}
	if diff := cmp.Diff(want, doc.Files, cmpByHarness); code != exitError || diff != "" {
		t.Errorf("connect --json: exit %d (-want +got):\n%s", code, diff)
	}

	// Another config connect may write: written, and connect succeeds.
	cursor := filepath.Join(home, ".cursor", "mcp.json")
	if err := os.MkdirAll(filepath.Dir(cursor), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cursor, []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := runMain("hub", "connect"); code != 0 || !strings.Contains(out, "cursor: "+cursor+" changed") {
		t.Errorf("connect with a config to write: exit %d\n%s%s", code, out, errOut)
	}
	unchanged("connect with cursor")

	code, out, errOut = runMain("hub", "disconnect")
	if code != 0 || !strings.Contains(out, `left: its own "capabilities" entry, which connect did not write: http http://127.0.0.1:4790/mcp, header Authorization: Bearer ****`) || strings.Contains(out, "s3cr3t") {
		t.Errorf("disconnect: exit %d\n%s%s", code, out, errOut)
	}
	if got, _ := os.ReadFile(cursor); string(got) != "{}\n" {
		t.Errorf("disconnect left cursor's entry:\n%s", got)
	}
	unchanged("disconnect")
}

var cmpByHarness = cmp.Transformer("byHarness", func(fs []editJSON) map[string]editJSON {
	m := map[string]editJSON{}
	for _, f := range fs {
		m[f.Harness] = f
	}
	return m
})

// TestConnectWritesTheHome: through the command, a hub elsewhere than
// ~/.capabilities gives entries with its CAPABILITIES_HOME; disconnect
// knows them as connect's and gives back every byte.
func TestConnectWritesTheHome(t *testing.T) {
	bin := fakeSelf(t)
	orig := map[string]string{
		".claude.json":          "{\n  \"numStartups\": 3\n}\n",
		".codex/config.toml":    "model = \"o3\"\n",
		".gemini/settings.json": "{\n  // mine\n  \"mcpServers\": {},\n}\n",
	}
	home := connectHome(t, orig)
	if code, out, errOut := runMain("hub", "connect", "--client", "claude-code,codex,gemini"); code != 0 {
		t.Fatalf("connect: exit %d\n%s%s", code, out, errOut)
	}
	for name, f := range connectFiles(t, home) {
		servers, _, err := harness.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		want := []harness.Server{{Name: "capabilities", Kind: harness.KindStdio, Command: bin,
			Args: []string{"hub", "serve", "--stdio", "--profile", "default"},
			Env:  map[string]string{"CAPABILITIES_HOME": filepath.Join(home, "caps")}}}
		if diff := cmp.Diff(want, servers); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
	}
	if code, out, _ := runMain("hub", "connect", "--client", "claude-code,codex,gemini"); code != 0 || strings.Count(out, " unchanged\n") != 3 {
		t.Errorf("connect twice: exit %d\n%s", code, out)
	}
	if code, out, errOut := runMain("hub", "disconnect"); code != 0 || strings.Contains(out, "left:") {
		t.Errorf("disconnect: exit %d\n%s%s", code, out, errOut)
	}
	for p, want := range orig {
		if got, _ := os.ReadFile(filepath.Join(home, p)); string(got) != want {
			t.Errorf("after disconnect %s:\n%s", p, got)
		}
	}
}

// TestMaskSecrets: the lines a dry run shows hold no credential value of
// the file, before or after the edit: an environment variable's or a
// header's (its scheme kept), an argument's, a URL's password, one shaped
// like a token anywhere in the file; the other values are shown as they
// are.
func TestMaskSecrets(t *testing.T) {
	const (
		ghp    = "ghp_FAKEFAKEFAKEFAKEFAKEFAKEFAKEFAKE0001"
		bearer = "FAKE-bearer-0001"
		apiKey = "FAKE-api-key-0001"
		pass   = "FAKE-password-0001"
		sk     = "sk-FAKEFAKEFAKEFAKEFAKE0001"
	)
	claude := harness.File{Harness: "claude-code", Format: harness.JSON, ServersKey: []string{"mcpServers"}}
	before := `{
  "mcpServers": {
    "github": {"command": "npx", "args": ["-y", "server-github", "--api-key", "` + apiKey + `"], "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "` + ghp + `", "GITHUB_HOST": "github.com"}},
    "linear": {"type": "http", "url": "https://user:` + pass + `@mcp.linear.example/mcp", "headers": {"Authorization": "Bearer ` + bearer + `", "X-Region": "eu"}},
    "ref": {"command": "x", "env": {"API_KEY": "${API_KEY}", "MAX_TOKENS": "4096"}}
  },
  "notes": "` + sk + `"
}
`
	after := strings.Replace(before, `"mcpServers": {`, `"mcpServers": {
    "capabilities": {"command": "/bin/capabilities", "args": ["hub", "serve", "--stdio"]},`, 1)
	after = strings.Replace(after, `"notes"`, `"other"`, 1)
	got := maskSecrets(claude, lineDiff([]byte(before), []byte(after)), []byte(before), []byte(after))
	want := `@@ line 3 @@
-     "github": {"command": "npx", "args": ["-y", "server-github", "--api-key", "****"], "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "****", "GITHUB_HOST": "github.com"}},
-     "linear": {"type": "http", "url": "https://user:****@mcp.linear.example/mcp", "headers": {"Authorization": "Bearer ****", "X-Region": "eu"}},
-     "ref": {"command": "x", "env": {"API_KEY": "${API_KEY}", "MAX_TOKENS": "4096"}}
-   },
-   "notes": "****"
+     "capabilities": {"command": "/bin/capabilities", "args": ["hub", "serve", "--stdio"]},
+     "github": {"command": "npx", "args": ["-y", "server-github", "--api-key", "****"], "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "****", "GITHUB_HOST": "github.com"}},
+     "linear": {"type": "http", "url": "https://user:****@mcp.linear.example/mcp", "headers": {"Authorization": "Bearer ****", "X-Region": "eu"}},
+     "ref": {"command": "x", "env": {"API_KEY": "${API_KEY}", "MAX_TOKENS": "4096"}}
+   },
+   "other": "****"
`
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("masked diff (-want +got):\n%s", diff)
	}

	// Codex: TOML, a credential only in the bytes before (the entry moves
	// out), one written with an escape.
	codex := harness.File{Harness: "codex", Format: harness.TOML, ServersKey: []string{"mcp_servers"}}
	before = "[mcp_servers.github]\ncommand = \"npx\"\n\n[mcp_servers.github.env]\nGITHUB_TOKEN = \"" + ghp + "\"\nDB_PASSWORD = \"FAKE\\\"quoted\\\"0001\"\n"
	after = "[mcp_servers.capabilities]\ncommand = \"/bin/capabilities\"\n"
	got = maskSecrets(codex, lineDiff([]byte(before), []byte(after)), []byte(before), []byte(after))
	for _, v := range []string{ghp, "FAKE", "quoted"} {
		if strings.Contains(got, v) {
			t.Errorf("the masked diff holds %q:\n%s", v, got)
		}
	}
	if !strings.Contains(got, `- GITHUB_TOKEN = "****"`) || !strings.Contains(got, `- DB_PASSWORD = "****"`) {
		t.Errorf("the masked diff does not show the variables masked:\n%s", got)
	}
}
