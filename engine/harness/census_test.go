package harness

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestMissingCommand(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the census does not judge commands on Windows")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name string, mode os.FileMode) string {
		p := filepath.Join(bin, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tool := write("tool", 0o755)
	plain := write("plain.txt", 0o644)
	env := Env{Home: dir, Cwd: dir, GOOS: runtime.GOOS, Getenv: func(k string) string {
		if k == "PATH" {
			return "relative:" + bin
		}
		return ""
	}}
	stdio := func(cmd string) Server { return Server{Name: "s", Kind: KindStdio, Command: cmd} }
	tests := []struct {
		name string
		s    Server
		want string
	}{
		{"on the PATH", stdio("tool"), ""},
		{"absolute", stdio(tool), ""},
		{"relative to cwd", stdio("./bin/tool"), ""},
		{"relative to the entry's cwd", Server{Kind: KindStdio, Command: "./tool", Cwd: bin}, ""},
		{"not on the PATH", stdio("nope"), "nope is not on the PATH (relative:" + bin + ")"},
		{"the entry's own PATH", Server{Kind: KindStdio, Command: "tool", Env: map[string]string{"PATH": "/nowhere"}}, "tool is not on the PATH (/nowhere)"},
		{"a file that is gone", stdio(filepath.Join(dir, "gone", "capabilities")), filepath.Join(dir, "gone", "capabilities") + " does not exist"},
		{"a folder", stdio(bin), bin + " is a folder, not a program"},
		{"not executable", stdio(plain), plain + " is not executable"},
		{"a variable left as written", stdio("${input:cmd}"), ""},
		{"http", Server{Kind: KindHTTP, URL: "http://127.0.0.1:1/mcp"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := MissingCommand(env, tt.s); got != tt.want {
				t.Errorf("MissingCommand = %q, want %q", got, tt.want)
			}
		})
	}
	if got := MissingCommand(Env{GOOS: "windows"}, stdio(`C:\gone.exe`)); got != "" {
		t.Errorf("another system's entry judged: %q", got)
	}
}

func TestEntryProfile(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"hub", "serve", "--stdio"}, "default"},
		{[]string{"hub", "serve", "--stdio", "--profile", "narrow"}, "narrow"},
		{[]string{"hub", "serve", "--stdio", "--profile=wide"}, "wide"},
	} {
		if got := EntryProfile(tt.args); got != tt.want {
			t.Errorf("EntryProfile(%q) = %q, want %q", tt.args, got, tt.want)
		}
	}
}

// TestConfigs reads a home with a good Claude Code config, a Cursor config
// that does not parse and a Codex config whose servers key is not a table:
// each file once, the syntax error with its line and column, missing files
// left out.
func TestConfigs(t *testing.T) {
	home := t.TempDir()
	files := map[string]string{
		".claude.json":       `{"mcpServers": {"a": {"command": "x"}, "b": {"args": ["y"]}}}`,
		".cursor/mcp.json":   "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\"}\n  \n",
		".codex/config.toml": "mcp_servers = 3\n",
	}
	for p, data := range files {
		p = filepath.Join(home, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	hs := []Harness{}
	for _, n := range []string{"claude-code", "codex", "cursor", "vscode"} {
		h, _ := Lookup(n)
		hs = append(hs, h)
	}
	got := Configs(Env{Home: home, GOOS: runtime.GOOS}, hs)
	type row struct {
		Harness, Path string
		Servers       []string
		Problems      []string
		Err           string
		Line, Col     int
		KeyErr        bool
	}
	var rows []row
	for _, c := range got {
		r := row{Harness: c.File.Harness, Path: c.File.Path, KeyErr: c.KeyErr != nil}
		for _, s := range c.Servers {
			r.Servers = append(r.Servers, s.Name)
		}
		for _, p := range c.Problems {
			r.Problems = append(r.Problems, p.Server)
		}
		if c.Err != nil {
			r.Err = "error"
			var se *SyntaxError
			if errors.As(c.Err, &se) {
				r.Line, r.Col = se.Line, se.Col
			}
		}
		rows = append(rows, r)
	}
	want := []row{
		{Harness: "claude-code", Path: filepath.Join(home, ".claude.json"), Servers: []string{"a"}, Problems: []string{"b"}},
		{Harness: "codex", Path: filepath.Join(home, ".codex/config.toml"), KeyErr: true},
		{Harness: "cursor", Path: filepath.Join(home, ".cursor/mcp.json"), Err: "error", Line: 5, Col: 1},
	}
	if diff := cmp.Diff(want, rows); diff != "" {
		t.Errorf("Configs (-want +got):\n%s", diff)
	}
}
