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
		{"VS Code: ${input:id} is asked for at start: left as it is, said",
			file("vscode", true),
			Server{Kind: KindStdio, Command: "npx", Env: map[string]string{"GITHUB_TOKEN": "${input:gh}", "ROOT": "${workspaceFolder}"}},
			Server{Kind: KindStdio, Command: "npx", Env: map[string]string{"GITHUB_TOKEN": "${input:gh}", "ROOT": "/work/app"},
				Filled: []Filled{{Field: "env.GITHUB_TOKEN", Passed: []UnsetRef{{Ref: "${input:gh}", Why: `VS Code asks for it when it starts the server (the input "gh" of its "inputs")`}}}}}},
		{"VS Code: ${input:…}, ${config:…} and ${command:…} in command and args are left as written, said",
			file("vscode", false),
			Server{Kind: KindStdio, Command: "${config:mcp.node}", Args: []string{"--token", "${input:tok}", "--pick=${command:pickFolder}", "${file:/x}"}},
			Server{Kind: KindStdio, Command: "${config:mcp.node}", Args: []string{"--token", "${input:tok}", "--pick=${command:pickFolder}", "${file:/x}"},
				Filled: []Filled{
					{Field: "command", Passed: []UnsetRef{{Ref: "${config:mcp.node}", Why: "VS Code fills it in with its setting mcp.node"}}},
					{Field: "args[1]", Passed: []UnsetRef{{Ref: "${input:tok}", Why: `VS Code asks for it when it starts the server (the input "tok" of its "inputs")`}}},
					{Field: "args[2]", Passed: []UnsetRef{{Ref: "${command:pickFolder}", Why: "VS Code fills it in with what its command pickFolder returns"}}},
				}}},
		{"Windsurf: ${file:path} is left as written, said; ${input:…} is not Windsurf's",
			file("windsurf", false),
			Server{Kind: KindStdio, Command: "mcp", Args: []string{"--key-file=${file:/home/u/key}", "${input:x}"}},
			Server{Kind: KindStdio, Command: "mcp", Args: []string{"--key-file=${file:/home/u/key}", "${input:x}"},
				Filled: []Filled{{Field: "args[0]", Passed: []UnsetRef{{Ref: "${file:/home/u/key}", Why: "Windsurf fills it in with the contents of the file /home/u/key"}}}}}},
		{"Cursor: ${input:…} is not Cursor's",
			file("cursor", false),
			Server{Kind: KindStdio, Command: "mcp", Args: []string{"${input:x}"}},
			Server{Kind: KindStdio, Command: "mcp", Args: []string{"${input:x}"}}},
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

// TestRequestPassed: a VS Code or Windsurf variable import cannot fill in,
// in an argument, the command, the cwd or the URL, is noted (the server is
// still added): the field, the variable, how the harness fills it in, the
// server, the file, and what to do; one naming a credential says how the
// hub takes a credential. One in an env variable keeps its own note.
func TestRequestPassed(t *testing.T) {
	env := Env{Home: "/home/u", Cwd: "/work/app", GOOS: "linux", Getenv: func(string) string { return "" }}
	h, _ := Lookup("vscode")
	vscode := h.Files(env)[1] // the project's .vscode/mcp.json
	w, _ := Lookup("windsurf")
	windsurf := w.Files(env)[0]
	tests := []struct {
		name string
		file File
		s    Server
		want []string
	}{
		{"an argument's ${input:…} naming a credential", vscode,
			Server{Name: "gh", Kind: KindStdio, Command: "mcp-gh", Args: []string{"--token", "${input:gh}"}},
			[]string{`args[1] refers to ${input:gh}: VS Code asks for it when it starts the server (the input "gh" of its "inputs"); the hub cannot, and passes it to "gh" as written: write the value in its place in ` + vscode.Path + " and import again (a credential: if the server reads it from an environment variable, set that to ${input:gh} in the entry instead; the source then waits for `capabilities hub auth gh`)"}},
		{"${config:…} in the command and ${command:…} in the cwd", vscode,
			Server{Name: "py", Kind: KindStdio, Command: "${config:python.defaultInterpreterPath}", Args: []string{"-m", "srv"}, Cwd: "${command:pick}"},
			[]string{
				`command refers to ${config:python.defaultInterpreterPath}: VS Code fills it in with its setting python.defaultInterpreterPath; the hub cannot, and passes it to "py" as written: write the value in its place in ` + vscode.Path + " and import again",
				`cwd refers to ${command:pick}: VS Code fills it in with what its command pick returns; the hub cannot, and passes it to "py" as written: write the value in its place in ` + vscode.Path + " and import again",
			}},
		{"Windsurf's ${file:…} in a flag's value", windsurf,
			Server{Name: "k", Kind: KindStdio, Command: "mcp-k", Args: []string{"--api-key=${file:/home/u/k}"}},
			[]string{`args[0] refers to ${file:/home/u/k}: Windsurf fills it in with the contents of the file /home/u/k; the hub cannot, and passes it to "k" as written: write the value in its place in ` + windsurf.Path + " and import again (a credential: if the server reads it from an environment variable, set that to ${file:/home/u/k} in the entry instead; the source then waits for `capabilities hub auth k`)"}},
		{"${input:…} in the URL", vscode,
			Server{Name: "r", Kind: KindHTTP, URL: "https://${input:host}/mcp"},
			[]string{`url refers to ${input:host}: VS Code asks for it when it starts the server (the input "host" of its "inputs"); the hub cannot, and passes it to "r" as written: write the value in its place in ` + vscode.Path + " and import again"}},
		{"an env variable's keeps its own note", vscode,
			Server{Name: "e", Kind: KindStdio, Command: "mcp-e", Env: map[string]string{"MODE": "${input:mode}"}},
			[]string{"env MODE=${input:mode} is a reference the harness fills in; the hub passes it as written (store a credential with `capabilities hub auth e --env MODE`)"}},
	}
	for _, tt := range tests {
		s := ExpandServer(env, tt.file, tt.s)
		p := Proposal{Namespace: s.Name, Server: s, Origins: []Origin{{Harness: tt.file.Harness, Path: tt.file.Path}}, Secrets: Secrets(s)}
		_, notes, err := p.Request()
		if err != nil {
			t.Errorf("%s: Request: %v (it was added before)", tt.name, err)
		}
		if diff := cmp.Diff(tt.want, notes, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s: notes (-want +got):\n%s", tt.name, diff)
		}
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
