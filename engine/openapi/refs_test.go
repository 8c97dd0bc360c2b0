package openapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// splitDoc is a document that refers to a schema in a file beside it
// (./schemas/pet.json, which refers on to ./tag.json beside itself) and to
// one in another document of its origin by absolute URL (ORIGIN/other.yaml).
const splitDoc = `{"openapi":"3.0.3","info":{"title":"Split","version":"1"},"servers":[{"url":"/v1"}],
"paths":{
 "/pets":{"post":{"operationId":"createPet","requestBody":{"required":true,"content":{"application/json":{"schema":{"$ref":"./schemas/pet.json"}}}},
   "responses":{"200":{"description":"ok","content":{"application/json":{"schema":{"$ref":"ORIGIN/other.yaml#/components/schemas/Owner"}}}}}}},
 "/pets/{id}":{"get":{"operationId":"getPet","parameters":[{"$ref":"params.yaml#/id"}],
   "responses":{"200":{"description":"ok","content":{"application/json":{"schema":{"$ref":"./schemas/pet.json"}}}}}}}}}`

const petJSON = `{"type":"object","required":["name"],"properties":{"name":{"type":"string"},"tag":{"$ref":"tag.json"}}}`
const tagJSON = `{"type":"string","enum":["dog","cat"]}`
const otherYAML = `openapi: 3.0.3
info: {title: Other, version: "1"}
paths: {}
components:
  schemas:
    Owner:
      type: object
      properties:
        owner: {type: string}
        pet: {$ref: "schemas/pet.json"}
`
const paramsYAML = `id:
  name: id
  in: path
  required: true
  schema: {type: integer}
`

// splitServer serves splitDoc and the documents it refers to; extra adds
// or replaces paths.
func splitServer(t *testing.T, extra map[string]string) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var hits atomic.Int32
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		files := map[string]string{
			"/api/openapi.json":     strings.ReplaceAll(splitDoc, "ORIGIN", srv.URL+"/api"),
			"/api/schemas/pet.json": petJSON,
			"/api/schemas/tag.json": tagJSON,
			"/api/other.yaml":       otherYAML,
			"/api/params.yaml":      paramsYAML,
		}
		for k, v := range extra {
			files[k] = strings.ReplaceAll(v, "ORIGIN", srv.URL)
		}
		body, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		if strings.HasPrefix(body, "redirect:") {
			http.Redirect(w, r, strings.TrimPrefix(body, "redirect:"), http.StatusFound)
			return
		}
		w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

func inputOf(t *testing.T, a *API, name string) map[string]any {
	t.Helper()
	for _, op := range a.Ops {
		if op.Name == name {
			var m map[string]any
			if err := json.Unmarshal(op.Tool.InputSchema, &m); err != nil {
				t.Fatal(err)
			}
			if len(op.Tool.OutputSchema) > 0 {
				var out map[string]any
				if err := json.Unmarshal(op.Tool.OutputSchema, &out); err != nil {
					t.Fatal(err)
				}
				m["output"] = out
			}
			return m
		}
	}
	t.Fatalf("no operation %s", name)
	return nil
}

var wantPet = map[string]any{"type": "object", "required": []any{"name"}, "properties": map[string]any{
	"name": map[string]any{"type": "string"},
	"tag":  map[string]any{"type": "string", "enum": []any{"dog", "cat"}},
}}

// TestRefsToTheSameOrigin: a document read from a URL may refer to other
// documents of its origin, relatively (./schemas/pet.json, which refers on
// to tag.json beside itself; a parameter in params.yaml) or by absolute URL
// (ORIGIN/other.yaml#/…); each schema reaches the tool inlined.
func TestRefsToTheSameOrigin(t *testing.T) {
	srv, _ := splitServer(t, nil)
	a, err := Load(context.Background(), GuardedClient(mustURL(t, srv.URL)), srv.URL+"/api/openapi.json", "")
	if err != nil {
		t.Fatal(err)
	}
	create := inputOf(t, a, "createPet")
	body := create["properties"].(map[string]any)["body"].(map[string]any)
	delete(body, "description")
	if d := cmp.Diff(wantPet, body); d != "" {
		t.Errorf("createPet's body (-want +got):\n%s", d)
	}
	wantOwner := map[string]any{"type": "object", "properties": map[string]any{"owner": map[string]any{"type": "string"}, "pet": wantPet}}
	if d := cmp.Diff(wantOwner, create["output"]); d != "" {
		t.Errorf("createPet's output, from other.yaml (-want +got):\n%s", d)
	}
	get := inputOf(t, a, "getPet")
	if id := get["properties"].(map[string]any)["id"].(map[string]any); id["type"] != "integer" {
		t.Errorf("getPet's id, from params.yaml: %v", id)
	}
}

// TestRefsElsewhereAreRefused: a reference to another origin, directly or
// by a redirect, is refused with an error naming both origins, and the
// other origin gets no request; so is a file reference from a URL
// document.
func TestRefsElsewhereAreRefused(t *testing.T) {
	var stolen atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		stolen.Add(1)
		w.Write([]byte(petJSON))
	}))
	defer other.Close()
	for _, tc := range []struct {
		name, ref, want string
		extra           map[string]string
	}{
		{"another origin", other.URL + "/pet.json", "the hub reads only from", nil},
		{"a redirect to another origin", "./moved.json", "outside", map[string]string{"/api/schemas/moved.json": "redirect:" + other.URL + "/pet.json"}},
		{"a file", "file:///etc/passwd", "refers only to URLs of that origin", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			extra := map[string]string{"/api/schemas/pet.json": `{"$ref":"` + tc.ref + `"}`}
			for k, v := range tc.extra {
				extra[k] = v
			}
			srv, _ := splitServer(t, extra)
			_, err := Load(context.Background(), GuardedClient(mustURL(t, srv.URL)), srv.URL+"/api/openapi.json", "")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
			t.Log(err)
			if stolen.Load() != 0 {
				t.Errorf("the other origin got %d requests", stolen.Load())
			}
		})
	}
}

// TestFileRefs: a file document may refer to files in its folder and
// below; a reference out of it (../, an absolute path, a symbolic link that
// leads out, a URL) is refused.
func TestFileRefs(t *testing.T) {
	dir := t.TempDir()
	api := filepath.Join(dir, "api")
	write := func(rel, body string) {
		t.Helper()
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("api/openapi.json", strings.ReplaceAll(splitDoc, "ORIGIN/", ""))
	write("api/schemas/tag.json", tagJSON)
	write("api/other.yaml", otherYAML)
	write("api/params.yaml", paramsYAML)
	write("secret.json", `{"type":"string","description":"a file outside the document's folder"}`)
	if err := os.Symlink(filepath.Join(dir, "secret.json"), filepath.Join(api, "schemas", "link.json")); err != nil {
		t.Fatal(err)
	}
	doc := filepath.Join(api, "openapi.json")

	write("api/schemas/pet.json", petJSON)
	a, err := Load(context.Background(), nil, doc, "https://api.example.test")
	if err != nil {
		t.Fatal(err)
	}
	body := inputOf(t, a, "createPet")["properties"].(map[string]any)["body"].(map[string]any)
	delete(body, "description")
	if d := cmp.Diff(wantPet, body); d != "" {
		t.Errorf("createPet's body (-want +got):\n%s", d)
	}

	for _, tc := range []struct{ name, ref, want string }{
		{"up", "../../secret.json", "refers only to files in its folder"},
		{"absolute", filepath.Join(dir, "secret.json"), "refers only to files in its folder"},
		{"symlink out", "link.json", "leads out of the document's folder"},
		{"a URL", "https://api.example.test/pet.json", "refers only to files in its folder"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			write("api/schemas/pet.json", `{"$ref":"`+tc.ref+`"}`)
			_, err := Load(context.Background(), nil, doc, "https://api.example.test")
			if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrRefRefused) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
			t.Log(err)
		})
	}
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// TestRefsAreBounded: a chain of references longer than
// MaxReferencedDocuments is refused, saying so, after reading that many.
func TestRefsAreBounded(t *testing.T) {
	var reads atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var n int
		if _, err := fmt.Sscanf(r.URL.Path, "/s/%d.json", &n); err != nil {
			http.NotFound(w, r)
			return
		}
		reads.Add(1)
		fmt.Fprintf(w, `{"type":"object","properties":{"next":{"$ref":"%d.json"}}}`, n+1)
	}))
	defer srv.Close()
	doc := strings.Replace(splitDoc, "./schemas/pet.json", "s/0.json", -1)
	doc = strings.Replace(doc, `{"$ref":"ORIGIN/other.yaml#/components/schemas/Owner"}`, `{"type":"object"}`, 1)
	doc = strings.Replace(doc, `{"$ref":"params.yaml#/id"}`, `{"name":"id","in":"path","required":true,"schema":{"type":"string"}}`, 1)
	_, err := New(context.Background(), []byte(doc), "x.json", "https://api.example.test")
	if err == nil {
		t.Fatal("New followed references")
	}
	a, err := newAPI(context.Background(), []byte(doc), srv.URL+"/api.json", "", mustRefs(t, srv.URL+"/api.json"))
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("refers to more than %d other documents", MaxReferencedDocuments)) {
		t.Fatalf("a chain of %d references: %v %v", reads.Load(), a, err)
	}
	if n := reads.Load(); n != MaxReferencedDocuments {
		t.Errorf("%d documents read, want %d", n, MaxReferencedDocuments)
	}
}

func mustRefs(t *testing.T, location string) *RefReader {
	t.Helper()
	r, err := NewRefReader(context.Background(), location)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
