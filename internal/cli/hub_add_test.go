package cli

import (
	"testing"

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
