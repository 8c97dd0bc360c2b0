package stack

import (
	"errors"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/policy"
	"github.com/google/go-cmp/cmp"
)

const skillDoc = "---\nname: pdf-forms\ndescription: Fill PDF forms.\n---\n# PDF forms\n"

func goodFiles() fstest.MapFS {
	return fstest.MapFS{
		"sources/github.json": {Data: []byte(`{"source": {"namespace": "github", "kind": "stdio", "command": "gh-mcp", "args": ["--read-only"], "secretEnv": "GITHUB_TOKEN"},
 "connections": [{"name": "default", "secret": "GITHUB_TOKEN", "env": "GITHUB_TOKEN"}]}`)},
		"sources/linear.json":       {Data: []byte(`{"source": {"namespace": "linear", "kind": "http", "url": "https://mcp.linear.app/mcp"}, "connections": [{"name": "default", "secret": "LINEAR_TOKEN", "header": "Authorization"}]}`)},
		"policy.json":               {Data: []byte(`{"rules": [{"target": "github.delete_repo", "action": "deny"}, {"target": "linear", "connection": "work", "action": "ask"}]}`)},
		"profiles/docs.json":        {Data: []byte(`{"name": "docs", "mode": "code", "namespaces": ["github"]}`)},
		"skills/pdf-forms/SKILL.md": {Data: []byte(skillDoc)},
		"skills/pdf-forms/ref.txt":  {Data: []byte("x")},
		"skills/notes.json":         {Data: []byte(`{"repo": "https://example.org/s.git", "commit": "0123456789abcdef0123456789abcdef01234567", "path": "notes"}`)},
		"capabilities.lock":         {Data: []byte("not read here")},
		"README.md":                 {Data: []byte("# my stack")},
	}
}

func TestReadRender(t *testing.T) {
	s, err := Read(goodFiles())
	if err != nil {
		t.Fatal(err)
	}
	want := &State{
		Sources: map[string]SourceFile{
			"github": {Source: Source{Namespace: "github", Kind: "stdio", Command: "gh-mcp", Args: []string{"--read-only"}, SecretEnv: "GITHUB_TOKEN"},
				Connections: []Connection{{Name: "default", Secret: "GITHUB_TOKEN", Env: "GITHUB_TOKEN"}}},
			"linear": {Source: Source{Namespace: "linear", Kind: "http", URL: "https://mcp.linear.app/mcp"},
				Connections: []Connection{{Name: "default", Secret: "LINEAR_TOKEN", Header: "Authorization"}}},
		},
		Rules: map[string]Rule{
			"github.delete_repo":       {Target: "github.delete_repo", Action: policy.Deny},
			"linear (connection work)": {Target: "linear", Connection: "work", Action: policy.Ask},
		},
		Profiles: map[string]hub.Profile{"docs": {Name: "docs", Mode: "code", Namespaces: []string{"github"}}},
		Skills: map[string]Skill{
			"pdf-forms": {Name: "pdf-forms", Files: map[string][]byte{"SKILL.md": []byte(skillDoc), "ref.txt": []byte("x")}},
			"notes":     {Name: "notes", Git: &GitSkill{Repo: "https://example.org/s.git", Commit: "0123456789abcdef0123456789abcdef01234567", Path: "notes"}},
		},
	}
	if diff := cmp.Diff(want, s); diff != "" {
		t.Fatalf("Read (-want +got):\n%s", diff)
	}
	// What Render writes, Read reads back the same.
	files, err := s.Render()
	if err != nil {
		t.Fatal(err)
	}
	again, err := Read(mapFS(files))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(s, again); diff != "" {
		t.Fatalf("Read(Render) (-want +got):\n%s", diff)
	}
	if _, ok := files["capabilities.lock"]; ok {
		t.Error("Render wrote capabilities.lock, which is not its")
	}
}

func mapFS(files map[string][]byte) fstest.MapFS {
	m := fstest.MapFS{}
	for p, b := range files {
		m[p] = &fstest.MapFile{Data: b}
	}
	return m
}

func TestReadErrorsNameTheFile(t *testing.T) {
	for _, tc := range []struct {
		name, path, data, want string
	}{
		{"bad json", "sources/github.json", `{"source": `, "sources/github.json in the stack: not valid JSON"},
		{"unknown field", "sources/github.json", `{"source": {"namespace": "github", "kind": "stdio", "command": "x", "addedAt": "2020-01-01T00:00:00Z"}, "connections": []}`, `unknown field "addedAt"`},
		{"namespace differs", "sources/github.json", `{"source": {"namespace": "gh", "kind": "stdio", "command": "x"}, "connections": []}`, `its namespace is "gh", not "github"`},
		{"bad kind", "sources/github.json", `{"source": {"namespace": "github", "kind": "ftp"}, "connections": []}`, `kind "ftp"`},
		{"a secret value", "sources/github.json", `{"source": {"namespace": "github", "kind": "stdio", "command": "x"}, "connections": [{"name": "default", "secret": "ghp_abc def"}]}`, "must be a secret's name"},
		{"two values", "policy.json", `{"rules": []} {"rules": []}`, "policy.json in the stack: not valid JSON for this file: more than one value"},
		{"bad action", "policy.json", `{"rules": [{"target": "github", "action": "maybe"}]}`, `policy.json in the stack: rule 1: action "maybe"`},
		{"duplicate rule", "policy.json", `{"rules": [{"target": "github", "action": "deny"}, {"target": "github", "action": "allow"}]}`, "rule 2: a second rule for github"},
		{"profile name", "profiles/docs.json", `{"name": "other", "mode": "code"}`, `profiles/docs.json in the stack: its name is "other"`},
		{"profile mode", "profiles/docs.json", `{"name": "docs", "mode": "fast"}`, `mode "fast"`},
		{"git skill commit", "skills/notes.json", `{"repo": "https://x/y.git", "commit": "main"}`, `skills/notes.json in the stack: "commit" "main" must be a full commit`},
		{"git skill path", "skills/notes.json", `{"repo": "https://x/y.git", "commit": "0123456789abcdef0123456789abcdef01234567", "path": "../up"}`, "must be a folder inside the repository"},
		{"skill without SKILL.md", "skills/empty/readme.txt", "x", "skills/empty in the stack: the skill's folder has no SKILL.md"},
		{"skill bad name", "skills/Bad_Name/SKILL.md", skillDoc, "skills/Bad_Name/SKILL.md in the stack: skill name"},
		{"stray file", "sources/notes.txt", "x", "sources/notes.txt in the stack: not a source file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fsys := fstest.MapFS{tc.path: {Data: []byte(tc.data)}}
			s, err := Read(fsys)
			if err == nil {
				t.Fatalf("Read accepted %s: %+v", tc.path, s)
			}
			var fe *FileError
			if !errors.As(err, &fe) {
				t.Errorf("error %v is not a *FileError", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
			if s != nil {
				t.Error("a state came back with the error")
			}
		})
	}
}

// FuzzRead: whatever a stack file holds, Read returns a state or an error
// naming a file, never panics, and a state it returns renders to files
// it reads back the same.
func FuzzRead(f *testing.F) {
	for p, file := range goodFiles() {
		f.Add(p, file.Data)
	}
	f.Add("policy.json", []byte(`{"rules": [{"target": "a.b", "connection": "x", "action": "allow"}]}`))
	f.Add("skills/x/SKILL.md", []byte("---\nname: x\n---\n"))
	f.Fuzz(func(t *testing.T, path string, data []byte) {
		if !fs.ValidPath(path) {
			t.Skip() // no file system holds it (git's trees never do)
		}
		fsys := goodFiles()
		fsys[path] = &fstest.MapFile{Data: data}
		s, err := Read(fsys)
		if err != nil {
			var fe *FileError
			if !errors.As(err, &fe) {
				t.Fatalf("error %v is not a *FileError", err)
			}
			return
		}
		files, err := s.Render()
		if err != nil {
			t.Fatal(err)
		}
		again, err := Read(mapFS(files))
		if err != nil {
			t.Fatalf("reading what Render wrote: %v", err)
		}
		if diff := cmp.Diff(Plan(s, s, again), []Change(nil)); diff != "" {
			t.Fatalf("Read(Render(s)) differs from s:\n%s", diff)
		}
	})
}
