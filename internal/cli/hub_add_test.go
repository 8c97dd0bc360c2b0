package cli

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/google/go-cmp/cmp"
)

func TestTakeCredential(t *testing.T) {
	local := []string{"node", "server.js"}
	tests := []struct {
		name      string
		req, want hub.AddRequest
		moved     string
		plain     []string
	}{
		{
			name:  "one env credential moves",
			req:   hub.AddRequest{Command: local, Env: map[string]string{"GITHUB_TOKEN": " ghp_x1 ", "MAX_TOKENS": "4096"}},
			want:  hub.AddRequest{Command: local, Env: map[string]string{"MAX_TOKENS": "4096"}, SecretEnv: "GITHUB_TOKEN", Secret: "ghp_x1"},
			moved: "--env GITHUB_TOKEN",
		},
		{
			name:  "named by --secret-env",
			req:   hub.AddRequest{Command: local, Env: map[string]string{"API_KEY": "k"}, SecretEnv: "API_KEY"},
			want:  hub.AddRequest{Command: local, Env: map[string]string{}, SecretEnv: "API_KEY", Secret: "k"},
			moved: "--env API_KEY",
		},
		{
			name:  "--secret-env names another variable",
			req:   hub.AddRequest{Command: local, Env: map[string]string{"API_KEY": "k"}, SecretEnv: "TOKEN"},
			want:  hub.AddRequest{Command: local, Env: map[string]string{"API_KEY": "k"}, SecretEnv: "TOKEN"},
			plain: []string{"--env API_KEY"},
		},
		{
			name:  "a credential was given already",
			req:   hub.AddRequest{Command: local, Env: map[string]string{"API_KEY": "k"}, Secret: "s"},
			want:  hub.AddRequest{Command: local, Env: map[string]string{"API_KEY": "k"}, Secret: "s"},
			plain: []string{"--env API_KEY"},
		},
		{
			name:  "two stay",
			req:   hub.AddRequest{Command: local, Env: map[string]string{"B_TOKEN": "b", "A_KEY": "a"}},
			want:  hub.AddRequest{Command: local, Env: map[string]string{"B_TOKEN": "b", "A_KEY": "a"}},
			plain: []string{"--env A_KEY", "--env B_TOKEN"},
		},
		{
			name:  "a URL with a password moves whole: the server reads the same variable",
			req:   hub.AddRequest{Command: local, Env: map[string]string{"DATABASE_URL": "postgres://app:Hunter2SuperSecretPw@db/prod", "PGSSLMODE": "require"}},
			want:  hub.AddRequest{Command: local, Env: map[string]string{"PGSSLMODE": "require"}, SecretEnv: "DATABASE_URL", Secret: "postgres://app:Hunter2SuperSecretPw@db/prod"},
			moved: "--env DATABASE_URL",
		},
		{
			name:  "a URL with a password and a *_PAT stay",
			req:   hub.AddRequest{Command: local, Env: map[string]string{"DATABASE_URL": "postgres://app:Hunter2SuperSecretPw@db/prod", "GITHUB_PAT": "abcdEFGHijklMNOPqrst1234"}},
			want:  hub.AddRequest{Command: local, Env: map[string]string{"DATABASE_URL": "postgres://app:Hunter2SuperSecretPw@db/prod", "GITHUB_PAT": "abcdEFGHijklMNOPqrst1234"}},
			plain: []string{"--env DATABASE_URL", "--env GITHUB_PAT"},
		},
		{
			name: "references and settings are not credentials",
			req:  hub.AddRequest{Command: local, Env: map[string]string{"GITHUB_TOKEN": "${GITHUB_TOKEN}", "USE_KEY": "true", "KEY_FILE": "~/k.pem"}},
			want: hub.AddRequest{Command: local, Env: map[string]string{"GITHUB_TOKEN": "${GITHUB_TOKEN}", "USE_KEY": "true", "KEY_FILE": "~/k.pem"}},
		},
		{
			name:  "a bearer Authorization header moves, Bearer left to the hub",
			req:   hub.AddRequest{URL: "https://x/mcp", Headers: map[string]string{"Authorization": "bearer  tok3n", "X-Region": "eu"}},
			want:  hub.AddRequest{URL: "https://x/mcp", Headers: map[string]string{"X-Region": "eu"}, Secret: "tok3n"},
			moved: "--header Authorization",
		},
		{
			name:  "a Basic Authorization header cannot be sent as Bearer: it stays",
			req:   hub.AddRequest{URL: "https://x/mcp", Headers: map[string]string{"Authorization": "Basic dXNlcjpwYXNz"}},
			want:  hub.AddRequest{URL: "https://x/mcp", Headers: map[string]string{"Authorization": "Basic dXNlcjpwYXNz"}},
			plain: []string{"--header Authorization"},
		},
		{
			name:  "another header moves as the secret header",
			req:   hub.AddRequest{URL: "https://x/mcp", Headers: map[string]string{"X-Api-Key": "k3y"}},
			want:  hub.AddRequest{URL: "https://x/mcp", Headers: map[string]string{}, SecretHeader: "X-Api-Key", Secret: "k3y"},
			moved: "--header X-Api-Key",
		},
		{
			name: "an OpenAPI document's headers are not read (add refuses them)",
			req:  hub.AddRequest{Document: "api.json", Headers: map[string]string{"Authorization": "Bearer t0k"}},
			want: hub.AddRequest{Document: "api.json", Headers: map[string]string{"Authorization": "Bearer t0k"}},
		},
		{
			name: "a local command's headers are not read (add refuses them)",
			req:  hub.AddRequest{Command: local, Headers: map[string]string{"X-Api-Key": "k3y"}},
			want: hub.AddRequest{Command: local, Headers: map[string]string{"X-Api-Key": "k3y"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := tt.req
			moved, plain := takeCredential(&req)
			if moved != tt.moved {
				t.Errorf("moved = %q, want %q", moved, tt.moved)
			}
			if diff := cmp.Diff(tt.plain, plain); diff != "" {
				t.Errorf("plain (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.want, req); diff != "" {
				t.Errorf("request (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCheckTimeout(t *testing.T) {
	tests := []struct {
		flag string
		d    time.Duration
		want string // the usage error, "" for none
	}{
		{"timeout", 30 * time.Second, ""},
		{"timeout", time.Millisecond, ""},
		{"timeout", -5 * time.Second, "--timeout -5s is negative: give how long to wait for the server to start and answer, a duration such as 30s"},
		{"timeout", 0, "--timeout 0s is zero: give how long to wait for the server to start and answer, a duration such as 30s"},
		{"timeout", 500 * time.Microsecond, "--timeout 500µs is shorter than 1ms: give how long to wait for the server to start and answer, a duration such as 30s"},
		{"call-timeout", 90 * time.Second, ""},
		{"call-timeout", 0, "--call-timeout 0s is zero: give how long each call to the server's tools may wait for its answer, a duration such as 90s"},
		{"call-timeout", -time.Minute, "--call-timeout -1m0s is negative: give how long each call to the server's tools may wait for its answer, a duration such as 90s"},
	}
	for _, tt := range tests {
		what, example := timeoutWhat, "30s"
		if tt.flag == "call-timeout" {
			what, example = callTimeoutWhat, "90s"
		}
		err := checkTimeout(tt.flag, tt.d, what, example)
		got := ""
		if err != nil {
			got = err.Error()
			if _, ok := err.(usageError); !ok {
				t.Errorf("--%s %v: %T, want a usage error (exit 2)", tt.flag, tt.d, err)
			}
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("--%s %v (-want +got):\n%s", tt.flag, tt.d, diff)
		}
	}
}

func TestLocalPaths(t *testing.T) {
	wd := t.TempDir()
	for _, f := range []string{"srv/scripted.mjs", "conf.json", "bin/srv"} {
		if err := os.MkdirAll(filepath.Join(wd, filepath.Dir(f)), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(wd, f), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	parent := filepath.Dir(wd)
	tests := []struct {
		name     string
		argv     []string
		cwd      string
		want     []string
		dir, rel string
	}{
		{name: "a relative command path becomes absolute", argv: []string{"./srv.sh"}, want: []string{filepath.Join(wd, "srv.sh")}},
		{name: "one in a folder, with a word that is no file", argv: []string{"bin/srv", "stdio"}, want: []string{filepath.Join(wd, "bin/srv"), "stdio"}},
		{name: "one above", argv: []string{"../srv.sh"}, want: []string{filepath.Join(parent, "srv.sh")}},
		{name: "a command on PATH stays", argv: []string{"node", "/abs/server.js"}, want: []string{"node", "/abs/server.js"}},
		{name: "an absolute command stays", argv: []string{"/usr/bin/srv"}, want: []string{"/usr/bin/srv"}},
		{name: "a relative file argument: the server runs here", argv: []string{"node", "srv/scripted.mjs"}, want: []string{"node", "srv/scripted.mjs"}, dir: wd, rel: "srv/scripted.mjs"},
		{name: "the directory itself", argv: []string{"mcp-server-filesystem", "."}, want: []string{"mcp-server-filesystem", "."}, dir: wd, rel: "."},
		{name: "a directory", argv: []string{"srv-fs", "--root", "srv"}, want: []string{"srv-fs", "--root", "srv"}, dir: wd, rel: "srv"},
		{name: "the value of --flag=", argv: []string{"srv", "--config=./conf.json"}, want: []string{"srv", "--config=./conf.json"}, dir: wd, rel: "./conf.json"},
		{name: "a flag is no path", argv: []string{"srv", "-conf.json", "--stdio", "--x="}, want: []string{"srv", "-conf.json", "--stdio", "--x="}},
		{name: "npx and a package", argv: []string{"npx", "-y", "@modelcontextprotocol/server-everything", "stdio"}, want: []string{"npx", "-y", "@modelcontextprotocol/server-everything", "stdio"}},
		{name: "uvx and a package", argv: []string{"uvx", "mcp-server-fetch"}, want: []string{"uvx", "mcp-server-fetch"}},
		{name: "a relative path that does not exist", argv: []string{"node", "missing.js", "--out=./new.db"}, want: []string{"node", "missing.js", "--out=./new.db"}},
		{name: "--cwd given: it stays, the command is still made absolute", argv: []string{"./srv.sh", "conf.json"}, cwd: "elsewhere", want: []string{filepath.Join(wd, "srv.sh"), "conf.json"}, dir: "elsewhere"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			argv := slices.Clone(tt.argv)
			got, dir, rel := localPaths(argv, tt.cwd, wd)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("command (-want +got):\n%s", diff)
			}
			if dir != tt.dir || rel != tt.rel {
				t.Errorf("dir, rel = %q, %q, want %q, %q", dir, rel, tt.dir, tt.rel)
			}
			if !slices.Equal(argv, tt.argv) {
				t.Errorf("localPaths changed its argument: %q", argv)
			}
		})
	}
}

func TestKeptCredentials(t *testing.T) {
	tests := []struct {
		name       string
		req        hub.AddRequest
		args, weak []string
	}{
		{
			name: "arguments, by flag or place, and weak passwords",
			req: hub.AddRequest{
				Command: []string{"node", "server.js", "--url", "postgres://app:Hunter2SuperSecretPw@db/prod", "--dsn=postgres://u:pw@h/db", "ghp_TESTONLYaaaaaaaaaaaaaaaaaaaaaaaaaaaa1", "--max-tokens", "4096"},
				Env:     map[string]string{"REDIS_URL": "redis://:pw@cache", "DATABASE_URL": "postgres://app:Hunter2SuperSecretPw@db/prod", "API_KEY": "k"},
			},
			args: []string{"--url", "--dsn", "argument 5"},
			weak: []string{"--env REDIS_URL", "--dsn"},
		},
		{
			name: "a remote server's headers",
			req:  hub.AddRequest{URL: "https://x/mcp", Headers: map[string]string{"X-Db": "postgres://app:password@db/prod"}},
			weak: []string{"--header X-Db"},
		},
		{
			name: "nothing",
			req:  hub.AddRequest{Command: []string{"node", "server.js", "--pattern", "*.md"}, Env: map[string]string{"PATH": "/usr/bin", "KEYBOARD_LAYOUT": "us"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args, weak := keptCredentials(&tt.req)
			if diff := cmp.Diff(tt.args, args); diff != "" {
				t.Errorf("args (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.weak, weak); diff != "" {
				t.Errorf("weak (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCheckCwd(t *testing.T) {
	wd := t.TempDir()
	if err := os.Mkdir(filepath.Join(wd, "proj"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(wd, "file"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		cwd  string
		want string // the usage error, "" for none
	}{
		{"proj", ""},
		{wd, ""},
		{".", ""},
		{"/nonexistent", "the working directory /nonexistent does not exist (--cwd)"},
		{"missing", "the working directory " + filepath.Join(wd, "missing") + " does not exist (--cwd)"},
		{"file", "the working directory " + filepath.Join(wd, "file") + " is not a directory (--cwd)"},
	}
	for _, tt := range tests {
		err := checkCwd(tt.cwd, wd)
		got := ""
		if err != nil {
			got = err.Error()
			if _, ok := err.(usageError); !ok {
				t.Errorf("--cwd %s: %T, want a usage error (exit 2)", tt.cwd, err)
			}
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("--cwd %s (-want +got):\n%s", tt.cwd, diff)
		}
	}
}
