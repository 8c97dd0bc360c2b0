package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// index wraps entries (JSON objects) in an index.json of version 1.
func index(entries ...string) string {
	return `{"version": 1, "capabilities": [` + strings.Join(entries, ",") + `]}`
}

const (
	okNPM    = `{"slug":"memory","shape":"npm","package":"@modelcontextprotocol/server-memory","version":"2026.8.31"}`
	okRemote = `{"slug":"everything","shape":"remote","url":"http://127.0.0.1:3001/mcp","secrets":["TOKEN"]}`
	okSkill  = `{"slug":"pdf-forms","shape":"skill","repo":"https://example.org/s.git","commit":"56d0c3a381be26d150c3a7144d401d3bbd521481","path":"pdf-forms"}`
)

func TestParseValid(t *testing.T) {
	ix, err := Parse([]byte(index(okNPM, okRemote, okSkill)))
	if err != nil {
		t.Fatal(err)
	}
	want := &Index{Version: 1, Capabilities: []Entry{
		{Slug: "memory", Shape: ShapeNPM, Package: "@modelcontextprotocol/server-memory", Version: "2026.8.31"},
		{Slug: "everything", Shape: ShapeRemote, URL: "http://127.0.0.1:3001/mcp", Secrets: []string{"TOKEN"}},
		{Slug: "pdf-forms", Shape: ShapeSkill, Repo: "https://example.org/s.git", Commit: "56d0c3a381be26d150c3a7144d401d3bbd521481", Path: "pdf-forms"},
	}}
	if d := cmp.Diff(want, ix); d != "" {
		t.Fatalf("Parse (-want +got):\n%s", d)
	}
	if got := ix.Capabilities[0].Command(); !cmp.Equal(got, []string{"npx", "-y", "@modelcontextprotocol/server-memory@2026.8.31"}) {
		t.Errorf("Command = %q", got)
	}
}

func TestParseInvalid(t *testing.T) {
	for _, tc := range []struct {
		name, doc, want string
	}{
		{"empty", ``, "index.json: empty: write a JSON object"},
		{"syntax", "{\n  \"version\": 1,\n  \"capabilities\": [}\n", "index.json: line 3, column 20: invalid character '}' looking for beginning of value"},
		{"truncated", `{"version": 1, "capabilities": [`, "index.json: ends in the middle of a JSON value"},
		{"trailing", index(okNPM) + ` {}`, fmt.Sprintf("index.json: line 1, column %d: more after the JSON object", len(index(okNPM))+2)},
		{"wrong type", `{"version": "1"}`, `index.json: line 1, column 15: "version" should be int, not a JSON string`},
		{"unknown field", `{"version": 1, "capabilities": [], "extra": true}`, `index.json: json: unknown field "extra"`},
		{"unknown entry field", index(`{"slug":"a","shape":"npm","pakage":"x"}`), `index.json: json: unknown field "pakage"`},
		{"no version", `{"capabilities": []}`, `index.json: "version" is 0; this capabilities reads version 1 (write "version": 1)`},
		{"no list", `{"version": 1}`, `index.json: no "capabilities" list (write "capabilities": [ … ])`},
		{"bad slug", index(`{"slug":"Memory","shape":"npm","package":"p","version":"1.0.0"}`), `index.json: capabilities[0] ("Memory"): slug "Memory": use 1 to 64 lowercase letters, digits and hyphens, starting with a letter or digit`},
		{"no slug", index(`{"shape":"npm"}`), `index.json: capabilities[0]: slug "": use 1 to 64 lowercase letters`},
		{"duplicate", index(okNPM, okNPM), `index.json: capabilities[1] ("memory"): the slug "memory" is also capabilities[0]'s; each slug names one capability`},
		{"no shape", index(`{"slug":"a"}`), `index.json: capabilities[0] ("a"): no "shape": write "npm" (a local MCP server from npm), "remote" (a remote MCP server) or "skill" (a git skill)`},
		{"bad shape", index(`{"slug":"a","shape":"stdio"}`), `index.json: capabilities[0] ("a"): shape "stdio": write "npm"`},
		{"npm no package", index(`{"slug":"a","shape":"npm","version":"1.0.0"}`), `an npm capability needs "package"`},
		{"npm bad package", index(`{"slug":"a","shape":"npm","package":"Bad Name","version":"1.0.0"}`), `"package" "Bad Name" is not an npm package name`},
		{"npm no version", index(`{"slug":"a","shape":"npm","package":"p"}`), `an npm capability needs "version", the exact version to run`},
		{"npm range", index(`{"slug":"a","shape":"npm","package":"p","version":"^1.0.0"}`), `"version" "^1.0.0" is not an exact version (MAJOR.MINOR.PATCH): a range or a tag would install whatever is newest`},
		{"npm tag", index(`{"slug":"a","shape":"npm","package":"p","version":"latest"}`), `"version" "latest" is not an exact version`},
		{"npm bad integrity", index(`{"slug":"a","shape":"npm","package":"p","version":"1.0.0","integrity":"md5-x"}`), `"integrity" "md5-x" is not a subresource integrity string`},
		{"npm with url", index(`{"slug":"a","shape":"npm","package":"p","version":"1.0.0","url":"http://x"}`), `"url" is not for a npm capability (shape "npm"); remove it`},
		{"remote no url", index(`{"slug":"a","shape":"remote"}`), `a remote capability needs "url"`},
		{"remote bad url", index(`{"slug":"a","shape":"remote","url":"ftp://x/y"}`), `"url" "ftp://x/y" is not an http(s) URL`},
		{"remote password", index(`{"slug":"a","shape":"remote","url":"https://me:pw@x/mcp"}`), `"url" holds a user or password (me@): a catalog holds no credential; list the secret's name in "secrets"`},
		{"remote args", index(`{"slug":"a","shape":"remote","url":"https://x/mcp","args":["-v"]}`), `"args" is not for a remote capability`},
		{"remote header without secret", index(`{"slug":"a","shape":"remote","url":"https://x/mcp","secretHeader":"X-Key"}`), `"secretHeader" says where a secret goes, but "secrets" names none`},
		{"remote bad header", index(`{"slug":"a","shape":"remote","url":"https://x/mcp","secrets":["K"],"secretHeader":"X Key"}`), `"secretHeader" "X Key" is not an HTTP header name`},
		{"two secrets", index(`{"slug":"a","shape":"remote","url":"https://x/mcp","secrets":["A","B"]}`), `"secrets" lists 2 names (A, B): the hub gives a server one credential per connection; list one`},
		{"bad secret name", index(`{"slug":"a","shape":"remote","url":"https://x/mcp","secrets":["MY-TOKEN"]}`), `secret name "MY-TOKEN": use letters, digits and _`},
		{"bad namespace", index(`{"slug":"a","shape":"remote","url":"https://x/mcp","namespace":"Foo"}`), `"namespace": namespace "Foo" must start with a lower-case letter a-z`},
		{"skill no repo", index(`{"slug":"a","shape":"skill","commit":"56d0c3a381be26d150c3a7144d401d3bbd521481"}`), `a skill capability needs "repo"`},
		{"skill repo option", index(`{"slug":"a","shape":"skill","repo":"--upload-pack=x","commit":"56d0c3a381be26d150c3a7144d401d3bbd521481"}`), `"repo" "--upload-pack=x" is not a git repository URL or path`},
		{"skill no commit", index(`{"slug":"a","shape":"skill","repo":"r"}`), `a skill capability needs "commit", the full commit (40 hex digits) it is pinned to`},
		{"skill short commit", index(`{"slug":"a","shape":"skill","repo":"r","commit":"56d0c3a"}`), `"commit" "56d0c3a" is not a full commit: write all 40 (or 64) lowercase hex digits, never a branch or a tag`},
		{"skill branch", index(`{"slug":"a","shape":"skill","repo":"r","commit":"main"}`), `"commit" "main" is not a full commit`},
		{"skill path up", index(`{"slug":"a","shape":"skill","repo":"r","commit":"56d0c3a381be26d150c3a7144d401d3bbd521481","path":"../x"}`), `"path" "../x": write the skill's folder relative to the repository's top`},
		{"skill path abs", index(`{"slug":"a","shape":"skill","repo":"r","commit":"56d0c3a381be26d150c3a7144d401d3bbd521481","path":"/etc"}`), `"path" "/etc": write the skill's folder`},
		{"skill secret", index(`{"slug":"a","shape":"skill","repo":"r","commit":"56d0c3a381be26d150c3a7144d401d3bbd521481","secrets":["T"]}`), `a skill runs nothing and takes no secret; remove "secrets"`},
		{"skill package", index(`{"slug":"a","shape":"skill","repo":"r","commit":"56d0c3a381be26d150c3a7144d401d3bbd521481","package":"p"}`), `"package" is not for a skill capability (shape "skill"); remove it`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.doc))
			if err == nil {
				t.Fatalf("Parse accepted %s", tc.doc)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Parse error\n got: %v\nwant: …%s…", err, tc.want)
			}
		})
	}
}

func TestParseTooLarge(t *testing.T) {
	_, err := Parse(make([]byte, MaxIndexBytes+1))
	if err == nil || !strings.Contains(err.Error(), "the most read is") {
		t.Fatalf("Parse of a huge index: %v", err)
	}
}

func TestHubNamespace(t *testing.T) {
	for slug, want := range map[string]string{
		"memory":                       "memory",
		"everything-remote":            "everything_remote",
		"9lives":                       "c_9lives",
		strings.Repeat("a-", 20) + "b": strings.TrimRight(strings.Repeat("a_", 16), "_"),
	} {
		e := Entry{Slug: slug}
		if got := e.HubNamespace(); got != want {
			t.Errorf("HubNamespace(%q) = %q, want %q", slug, got, want)
		}
	}
	e := Entry{Slug: "x", Namespace: "gh"}
	if got := e.HubNamespace(); got != "gh" {
		t.Errorf("HubNamespace with a namespace = %q", got)
	}
}

func TestLookupClosest(t *testing.T) {
	ix, err := Parse([]byte(index(okNPM, okRemote, okSkill)))
	if err != nil {
		t.Fatal(err)
	}
	c := &Catalog{Index: *ix, Location: "testdata/catalog"}
	if e, err := c.Lookup("pdf-forms"); err != nil || e.Shape != ShapeSkill {
		t.Fatalf("Lookup(pdf-forms) = %v, %v", e, err)
	}
	for _, tc := range []struct {
		slug string
		want []string
	}{
		{"memroy", []string{"memory"}},
		{"pdf", []string{"pdf-forms"}},
		{"every", []string{"everything"}},
		{"zzzzzzzzzzzz", nil},
	} {
		_, err := c.Lookup(tc.slug)
		var u *UnknownSlugError
		if !errors.As(err, &u) {
			t.Fatalf("Lookup(%q) = %v, want an UnknownSlugError", tc.slug, err)
		}
		if d := cmp.Diff(tc.want, u.Closest); d != "" {
			t.Errorf("Lookup(%q) closest (-want +got):\n%s", tc.slug, d)
		}
	}
	_, err = c.Lookup("memroy")
	if want := `the catalog testdata/catalog has no capability "memroy"; did you mean memory?`; err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
}

// TestExampleCatalog reads the example catalog shipped in testdata.
func TestExampleCatalog(t *testing.T) {
	c, err := Read(context.Background(), filepath.Join("..", "..", "testdata", "catalog"))
	if err != nil {
		t.Fatal(err)
	}
	shapes := map[Shape]int{}
	for _, e := range c.Capabilities {
		shapes[e.Shape]++
	}
	if shapes[ShapeNPM] == 0 || shapes[ShapeRemote] == 0 || shapes[ShapeSkill] == 0 {
		t.Fatalf("the example catalog should show every shape: %v", shapes)
	}
}

func TestReadLocal(t *testing.T) {
	dir := t.TempDir()
	if _, err := Read(context.Background(), ""); err == nil || !strings.Contains(err.Error(), "pass --registry") {
		t.Fatalf("Read of no location: %v", err)
	}
	if _, err := Read(context.Background(), filepath.Join(dir, "nope")); err == nil || !strings.Contains(err.Error(), "no such folder or file") {
		t.Fatalf("Read of a missing folder: %v", err)
	}
	if _, err := Read(context.Background(), dir); err == nil || !strings.Contains(err.Error(), "the folder holds no index.json") {
		t.Fatalf("Read of an empty folder: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, IndexFile), []byte(index(okNPM)), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, loc := range []string{dir, filepath.Join(dir, IndexFile), "file://" + dir} {
		c, err := Read(context.Background(), loc)
		if err != nil {
			t.Fatalf("Read(%s): %v", loc, err)
		}
		if c.Location != loc || len(c.Capabilities) != 1 {
			t.Fatalf("Read(%s) = %+v", loc, c)
		}
	}
}

func TestReadHTTP(t *testing.T) {
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		paths = append(paths, r.URL.Path)
		switch r.URL.Path {
		case "/cat/index.json", "/other.json":
			_, _ = w.Write([]byte(index(okRemote)))
		case "/bad/index.json":
			_, _ = w.Write([]byte(`{"version": 2, "capabilities": []}`))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	for _, loc := range []string{srv.URL + "/cat", srv.URL + "/cat/", srv.URL + "/other.json"} {
		c, err := Read(context.Background(), loc)
		if err != nil {
			t.Fatalf("Read(%s): %v", loc, err)
		}
		if len(c.Capabilities) != 1 || c.Capabilities[0].Slug != "everything" {
			t.Fatalf("Read(%s) = %+v", loc, c)
		}
	}
	if d := cmp.Diff([]string{"/cat/index.json", "/cat/index.json", "/other.json"}, paths); d != "" {
		t.Errorf("paths asked (-want +got):\n%s", d)
	}
	_, err := Read(context.Background(), srv.URL+"/missing")
	if err == nil || !strings.Contains(err.Error(), "404 Not Found") {
		t.Fatalf("Read of a missing URL: %v", err)
	}
	_, err = Read(context.Background(), srv.URL+"/bad")
	if err == nil || !strings.Contains(err.Error(), `"version" is 2`) {
		t.Fatalf("Read of a bad index: %v", err)
	}
	_, err = Read(context.Background(), "http://me:pw@127.0.0.1:1/cat")
	if err == nil || !strings.Contains(err.Error(), "holds a user or password") {
		t.Fatalf("Read of a URL with a password: %v", err)
	}
}

// FuzzParse: Parse never panics, and what it accepts is valid entry by
// entry and reads the same again after a round trip through JSON.
func FuzzParse(f *testing.F) {
	f.Add([]byte(index(okNPM, okRemote, okSkill)))
	f.Add([]byte(index(`{"slug":"a","shape":"npm","package":"@s/p","version":"1.2.3-rc.1+b","integrity":"sha512-AA==","args":["x"]}`)))
	f.Add([]byte(`{"version":1,"capabilities":[{"slug":"x","shape":"remote","url":"https://h/mcp","secrets":["T"],"secretHeader":"X-Key"}]}`))
	f.Add([]byte(`{"version": 1`))
	if b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "catalog", IndexFile)); err == nil {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ix, err := Parse(data)
		if err != nil {
			return
		}
		for i := range ix.Capabilities {
			if err := ix.Capabilities[i].Check(); err != nil {
				t.Fatalf("accepted an invalid entry: %v", err)
			}
		}
		b, err := json.Marshal(ix)
		if err != nil {
			t.Fatal(err)
		}
		again, err := Parse(b)
		if err != nil {
			t.Fatalf("a parsed index does not parse again: %v\n%s", err, b)
		}
		if d := cmp.Diff(ix, again); d != "" {
			t.Fatalf("round trip (-first +again):\n%s", d)
		}
	})
}
