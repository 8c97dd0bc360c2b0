package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/google/go-cmp/cmp"
)

// TestLockSlugs reads capabilities.lock loosely, in the shapes a lock may
// take: each object with a slug is a capability, and the namespace, source,
// skill or name it holds (not those of its connections or secrets) map to
// that slug.
func TestLockSlugs(t *testing.T) {
	tests := []struct {
		name    string
		lock    string // "" for no lock at all
		want    map[string]string
		wantErr string
	}{
		{name: "no lock", want: map[string]string{}},
		{name: "a list under a key", lock: `{"version": 1, "capabilities": [
			{"slug": "gh", "shape": "npm", "installed": {"source": {"namespace": "github"}, "connections": [{"name": "work"}]}},
			{"slug": "pdf", "shape": "git", "skill": "pdf-forms", "secrets": [{"name": "X"}]}]}`,
			want: map[string]string{"gh": "gh", "github": "gh", "pdf": "pdf", "pdf-forms": "pdf"}},
		{name: "a top-level list", lock: `[{"slug": "mem", "namespace": "memory"}]`,
			want: map[string]string{"mem": "mem", "memory": "mem"}},
		{name: "a map by slug", lock: `{"entries": {"remote": {"slug": "remote", "source": "acme", "env": {"name": "no"}}}}`,
			want: map[string]string{"remote": "remote", "acme": "remote"}},
		{name: "the slug alone", lock: `{"capabilities": [{"slug": "everything"}]}`,
			want: map[string]string{"everything": "everything"}},
		{name: "as stack install writes it (docs/catalog.md)", lock: `{"version": 1, "capabilities": [
			{"slug": "mem-server", "shape": "npm", "registry": "/home/me/catalog", "package": "@modelcontextprotocol/server-memory",
			 "command": ["npx", "-y", "@modelcontextprotocol/server-memory@2026.8.31"], "secrets": ["NOT_A_NAME"],
			 "wrote": [{"kind": "hub-source", "name": "memory", "before": "absent"}]},
			{"slug": "pdf", "shape": "skill", "repo": "https://example.org/skills.git", "commit": "56d0c3a381be26d150c3a7144d401d3bbd521481", "path": "pdf-forms",
			 "wrote": [{"kind": "hub-skill", "name": "pdf-forms", "path": "hub/skills/pdf-forms", "before": "absent", "files": {"SKILL.md": "ab12"}}]}]}`,
			want: map[string]string{"mem-server": "mem-server", "memory": "mem-server", "pdf": "pdf", "pdf-forms": "pdf"}},
		{name: "not JSON", lock: `{"capabilities": [`, wantErr: "reading the stack's lock "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			home := t.TempDir()
			t.Setenv("CAPABILITIES_HOME", home)
			if tt.lock != "" {
				if err := os.MkdirAll(filepath.Join(home, "stack"), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(home, "stack", "capabilities.lock"), []byte(tt.lock), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			got, path, err := lockSlugs()
			if path != filepath.Join(home, "stack", "capabilities.lock") {
				t.Errorf("path = %q", path)
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("lockSlugs (-want +got):\n%s", diff)
			}
		})
	}
}

// TestMissingSecretFix: the fix names the secret and the exact hub auth
// command (its flags as hub auth has them), and says when the secret is
// already set in the environment or ~/.capabilities/.env (never its value).
func TestMissingSecretFix(t *testing.T) {
	home := t.TempDir()
	t.Setenv("CAPABILITIES_HOME", home)
	if err := os.WriteFile(filepath.Join(home, ".env"), []byte("IN_DOTENV=v4lue-not-shown\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("IN_ENV", "v4lue-not-shown")
	stdio := &model.Source{Namespace: "gh", Kind: model.KindStdio, SecretEnv: "GITHUB_TOKEN"}
	remote := &model.Source{Namespace: "linear", Kind: model.KindHTTP}
	tests := []struct {
		name           string
		src            *model.Source
		conn, secret   string
		envVar, header string
		oauth          bool
		want           string
	}{
		{"stdio", stdio, "default", "GITHUB_TOKEN", "GITHUB_TOKEN", "", false,
			"`capabilities hub auth gh --connection default --env GITHUB_TOKEN` stores it (asked at a masked prompt, or read from standard input); or set GITHUB_TOKEN in the environment or in ~/.capabilities/.env (GITHUB_TOKEN=…) and `capabilities stack pull` stores it"},
		{"http with a header", remote, "work", "LINEAR_KEY", "", "X-API-Key", false,
			"`capabilities hub auth linear --connection work --header X-API-Key` stores it (asked at a masked prompt, or read from standard input); or set LINEAR_KEY in the environment or in ~/.capabilities/.env (LINEAR_KEY=…) and `capabilities stack pull` stores it"},
		{"no name known", remote, "default", "", "", "", false,
			"`capabilities hub auth linear --connection default` stores it (asked at a masked prompt, or read from standard input)"},
		{"oauth", remote, "default", "", "", "", true, "sign in: `capabilities hub auth linear`"},
		{"oauth, another connection", remote, "work", "", "", "", true, "sign in: `capabilities hub auth linear --connection work`"},
		{"set in the environment", stdio, "default", "IN_ENV", "GITHUB_TOKEN", "", false,
			"IN_ENV is set in the environment: `printf %s \"$IN_ENV\" | capabilities hub auth gh --connection default --env GITHUB_TOKEN` stores it"},
		{"set in .env", stdio, "default", "IN_DOTENV", "GITHUB_TOKEN", "", false,
			"IN_DOTENV is set in ~/.capabilities/.env: `capabilities stack pull` stores it, or `capabilities hub auth gh --connection default --env GITHUB_TOKEN` (asked at a masked prompt)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := missingSecret(tt.src, tt.conn, tt.secret, tt.envVar, tt.header, tt.oauth, "what")
			if p.Fix != tt.want {
				t.Errorf("fix:\n got %s\nwant %s", p.Fix, tt.want)
			}
			if p.Kind != probMissingSecret || p.Secret != tt.secret || p.Namespace != tt.src.Namespace || p.Connection != tt.conn {
				t.Errorf("problem %+v", p)
			}
			if strings.Contains(p.Fix+p.Message, "v4lue-not-shown") {
				t.Errorf("a secret's value is shown: %+v", p)
			}
		})
	}
}
