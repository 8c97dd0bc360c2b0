package harness

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestExpandServer: each harness fills in its own syntax and no other's,
// as it would when it starts the server; what it cannot fill in stays as
// written and is said.
func TestExpandServer(t *testing.T) {
	vars := map[string]string{"BIN_DIR": "/opt/bin", "GH_TOKEN": "ghp_TESTONLYeeeeeeeeeeeeeeeeeeeeeeeeeeee5", "REGION": "eu", "EMPTY": ""}
	env := Env{Home: "/home/u", Cwd: "/work/app", GOOS: "linux",
		Getenv:    func(k string) string { return vars[k] },
		LookupEnv: func(k string) (string, bool) { v, ok := vars[k]; return v, ok },
	}
	file := func(harness string, project bool) File {
		h, _ := Lookup(harness)
		for _, f := range h.Files(env) {
			if f.Project == project && !f.InUserFile {
				return f
			}
		}
		t.Fatalf("%s has no such file", harness)
		return File{}
	}
	unset := func(field, ref, v, why string) Filled {
		return Filled{Field: field, Unset: []UnsetRef{{Ref: ref, Var: v, Why: why}}}
	}
	notSet := func(v string) string {
		return v + " is not set in the environment import runs in, and the entry gives no default"
	}
	tests := []struct {
		name string
		file File
		in   Server
		want Server
	}{
		{"Claude Code: ${VAR} and ${VAR:-default} in command, args and env; a credential's variable is noted",
			file("claude-code", false),
			Server{Kind: KindStdio, Command: "${BIN_DIR}/mcp", Args: []string{"--region=${REGION:-us}", "--zone", "${ZONE:-a}", "${EMPTY:-x}", "$BIN_DIR", "${env:REGION}"}, Env: map[string]string{"GITHUB_TOKEN": "${GH_TOKEN}", "MODE": "fast"}},
			Server{Kind: KindStdio, Command: "/opt/bin/mcp", Args: []string{"--region=eu", "--zone", "a", "", "$BIN_DIR", "${env:REGION}"},
				Env: map[string]string{"GITHUB_TOKEN": "ghp_TESTONLYeeeeeeeeeeeeeeeeeeeeeeeeeeee5", "MODE": "fast"},
				Filled: []Filled{
					{Field: "command", Vars: []string{"BIN_DIR"}},
					{Field: "args[0]", Vars: []string{"REGION"}},
					{Field: "args[3]", Vars: []string{"EMPTY"}},
					{Field: "env.GITHUB_TOKEN", Vars: []string{"GH_TOKEN"}},
				},
				FromSecret: map[string]string{"GITHUB_TOKEN": "GH_TOKEN"}}},
		{"Claude Code: a variable not set with no default stays, said",
			file("claude-code", true),
			Server{Kind: KindHTTP, URL: "https://${API_HOST}/mcp", Headers: map[string]string{"Authorization": "Bearer ${API_TOKEN}"}},
			Server{Kind: KindHTTP, URL: "https://${API_HOST}/mcp", Headers: map[string]string{"Authorization": "Bearer ${API_TOKEN}"},
				Filled: []Filled{unset("url", "${API_HOST}", "API_HOST", notSet("API_HOST")), unset("headers.Authorization", "${API_TOKEN}", "API_TOKEN", notSet("API_TOKEN"))}}},
		{"Gemini CLI: $VAR too",
			file("gemini", false),
			Server{Kind: KindStdio, Command: "$BIN_DIR/mcp", Args: []string{"${REGION}", "${NOPE:-d}"}},
			Server{Kind: KindStdio, Command: "/opt/bin/mcp", Args: []string{"eu", "d"},
				Filled: []Filled{{Field: "command", Vars: []string{"BIN_DIR"}}, {Field: "args[0]", Vars: []string{"REGION"}}}}},
		{"Cursor, a project's file: ${workspaceFolder} is the project, ${env:NAME} the environment; ${NAME} is not Cursor's",
			file("cursor", true),
			Server{Kind: KindStdio, Command: "node", Args: []string{"${workspaceFolder}${/}server.js", "${workspaceFolderBasename}", "${userHome}/.cfg", "${REGION}"}, Env: map[string]string{"API": "${env:GH_TOKEN}"}},
			Server{Kind: KindStdio, Command: "node", Args: []string{"/work/app/server.js", "app", "/home/u/.cfg", "${REGION}"}, Env: map[string]string{"API": "ghp_TESTONLYeeeeeeeeeeeeeeeeeeeeeeeeeeee5"},
				Filled:     []Filled{{Field: "env.API", Vars: []string{"GH_TOKEN"}}},
				FromSecret: map[string]string{"API": "GH_TOKEN"}}},
		{"Cursor, the user's file: ${workspaceFolder} has no one value",
			file("cursor", false),
			Server{Kind: KindStdio, Command: "node", Args: []string{"${workspaceFolder}/server.js"}},
			Server{Kind: KindStdio, Command: "node", Args: []string{"${workspaceFolder}/server.js"},
				Filled: []Filled{unset("args[0]", "${workspaceFolder}", "", "Cursor fills it in with the folder it has open, and a server of the user's file runs in no one folder: write the path in its place, or import from the project whose own file has the server")}}},
		{"VS Code: ${input:id} is asked for at start: left as it is",
			file("vscode", true),
			Server{Kind: KindStdio, Command: "npx", Env: map[string]string{"GITHUB_TOKEN": "${input:gh}", "ROOT": "${workspaceFolder}"}},
			Server{Kind: KindStdio, Command: "npx", Env: map[string]string{"GITHUB_TOKEN": "${input:gh}", "ROOT": "/work/app"}}},
		{"Codex: only the headers its *_env_var keys name",
			file("codex", false),
			Server{Kind: KindHTTP, URL: "https://h/${REGION}", Headers: map[string]string{"Authorization": "Bearer ${GH_TOKEN}"}},
			Server{Kind: KindHTTP, URL: "https://h/${REGION}", Headers: map[string]string{"Authorization": "Bearer ghp_TESTONLYeeeeeeeeeeeeeeeeeeeeeeeeeeee5"},
				Filled:     []Filled{{Field: "headers.Authorization", Vars: []string{"GH_TOKEN"}}},
				FromSecret: map[string]string{"Authorization": "GH_TOKEN"}}},
		{"Zed fills in nothing",
			file("zed", false),
			Server{Kind: KindStdio, Command: "${BIN_DIR}/mcp"},
			Server{Kind: KindStdio, Command: "${BIN_DIR}/mcp"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ExpandServer(env, tt.file, tt.in)
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("ExpandServer (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRequestUnset: a server whose entry refers to what import cannot fill
// in is refused, naming the server, its file, each field and variable, and
// the fix; a credential that is only a reference is not refused: the
// source waits for `hub auth`, and the note says why.
func TestRequestUnset(t *testing.T) {
	origin := []Origin{{Harness: "claude-code", Path: "/work/app/.mcp.json"}}
	broken := Proposal{Namespace: "db", Origins: origin, Server: Server{Name: "db", Kind: KindStdio, Command: "mcp-db", Args: []string{"--url", "${DB_HOST}"},
		Filled: []Filled{{Field: "args[1]", Unset: []UnsetRef{{Ref: "${DB_HOST}", Var: "DB_HOST", Why: "DB_HOST is not set in the environment import runs in, and the entry gives no default"}}}}}}
	_, _, err := broken.Request()
	if !errors.Is(err, ErrUnset) {
		t.Fatalf("Request() = %v, want ErrUnset", err)
	}
	want := `server "db" in /work/app/.mcp.json is not added: its entry refers to a value import cannot fill in: args[1] refers to ${DB_HOST}: DB_HOST is not set in the environment import runs in, and the entry gives no default; set DB_HOST where you run import (export DB_HOST=…), or write the value in the agent's config; then run import again`
	if diff := cmp.Diff(want, err.Error()); diff != "" {
		t.Errorf("error (-want +got):\n%s", diff)
	}

	folder := Proposal{Namespace: "local", Origins: []Origin{{Harness: "cursor", Path: "/home/u/.cursor/mcp.json"}}, Server: Server{Name: "local", Kind: KindStdio, Command: "node", Args: []string{"${workspaceFolder}/s.js"},
		Filled: []Filled{{Field: "args[0]", Unset: []UnsetRef{{Ref: "${workspaceFolder}", Why: "Cursor fills it in with the folder it has open, and a server of the user's file runs in no one folder: write the path in its place, or import from the project whose own file has the server"}}}}}}
	_, _, err = folder.Request()
	want = `server "local" in /home/u/.cursor/mcp.json is not added: its entry refers to a value import cannot fill in: args[0] refers to ${workspaceFolder}: Cursor fills it in with the folder it has open, and a server of the user's file runs in no one folder: write the path in its place, or import from the project whose own file has the server; then run import again`
	if err == nil || err.Error() != want {
		t.Errorf("an editor variable with no value:\n got %v\nwant %s", err, want)
	}

	cred := Proposal{Namespace: "gh", Origins: origin, Server: Server{Name: "gh", Kind: KindStdio, Command: "mcp-gh", Env: map[string]string{"GITHUB_TOKEN": "${GH_TOKEN}"},
		Filled: []Filled{{Field: "env.GITHUB_TOKEN", Unset: []UnsetRef{{Ref: "${GH_TOKEN}", Var: "GH_TOKEN", Why: "GH_TOKEN is not set"}}}}}}
	req, notes, err := cred.Request()
	if err != nil {
		t.Fatalf("a credential's reference: %v", err)
	}
	if req.SecretEnv != "GITHUB_TOKEN" || len(notes) != 1 || !strings.Contains(notes[0], "fills in from GH_TOKEN, which is not set where import runs: store it with `capabilities hub auth gh`") {
		t.Errorf("a credential's reference: %+v %q", req, notes)
	}
}

// TestImportFilledHeader: a remote server's URL and credential header
// filled in from the environment, as Claude Code does, through the scan
// and the proposal to the request: the URL is the filled-in one, the
// credential is the request's Secret (the keychain's), in no header.
func TestImportFilledHeader(t *testing.T) {
	home := t.TempDir()
	cfg := `{"mcpServers": {"remote": {"type": "http", "url": "https://${API_HOST:-mcp.example.test}/mcp",
		"headers": {"Authorization": "Bearer ${API_TOKEN}", "X-Region": "${REGION:-eu}"}}}}`
	if err := os.WriteFile(filepath.Join(home, ".claude.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"API_TOKEN": "Zq81xTyLw02pKdRandomValue"}
	env := Env{Home: home, GOOS: "linux", Getenv: func(k string) string { return vars[k] }}
	h, _ := Lookup("claude-code")
	sc := ScanFiles(env, []Harness{h})
	props := Propose(sc, nil)
	if len(props) != 1 {
		t.Fatalf("proposals = %+v, unreadable %+v", props, sc.Unreadable)
	}
	req, notes, err := props[0].Request()
	if err != nil {
		t.Fatal(err)
	}
	type got struct {
		URL, Secret, SecretHeader string
		Headers                   map[string]string
		Notes                     []string
	}
	want := got{URL: "https://mcp.example.test/mcp", Secret: "Zq81xTyLw02pKdRandomValue", Headers: map[string]string{"X-Region": "eu"}}
	if diff := cmp.Diff(want, got{req.URL, req.Secret, req.SecretHeader, req.Headers, notes}, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("request (-want +got):\n%s", diff)
	}
}

// TestFilledSecretIsExisting: a server whose env variable was filled in
// from a variable named like a credential, imported (the value moved into
// the keychain, the variable the source's SecretEnv), is the hub's source
// when import reads it again: not proposed a second time.
func TestFilledSecretIsExisting(t *testing.T) {
	s := Server{Name: "api", Kind: KindStdio, Command: "mcp-api", Env: map[string]string{"API": "Zq81xTyLw02pKdRandomValue", "MODE": "fast"}, FromSecret: map[string]string{"API": "MY_SECRET"}}
	p := Proposal{Namespace: "api", Server: s, Secrets: Secrets(s)}
	req, _, err := p.Request()
	if err != nil {
		t.Fatal(err)
	}
	if req.SecretEnv != "API" || req.Secret != "Zq81xTyLw02pKdRandomValue" || req.Env["API"] != "" {
		t.Fatalf("request = %+v", req)
	}
	src := model.Source{Namespace: "api", Kind: model.KindStdio, Command: "mcp-api", Env: req.Env, SecretEnv: req.SecretEnv}
	if got := existing(s, []model.Source{src}); got != "api" {
		t.Errorf("existing = %q, want api", got)
	}
}
