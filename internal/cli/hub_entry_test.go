package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/capabilities-sh/capabilities/engine/harness"
	"github.com/google/go-cmp/cmp"
)

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
				c := connectChange(f, bin, nil, "default", env)
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
	if code, out, errOut := runMain("hub", "disconnect"); code != 0 {
		t.Errorf("disconnect: exit %d\n%s%s", code, out, errOut)
	}
	for p, want := range orig {
		if got, _ := os.ReadFile(filepath.Join(home, p)); string(got) != want {
			t.Errorf("after disconnect %s:\n%s", p, got)
		}
	}
}
