package openapi

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/google/go-cmp/cmp"
)

func testdata(t testing.TB, name string) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "testdata", "openapi", name)
}

func load(t testing.TB, name, server string) *API {
	t.Helper()
	a, err := Load(context.Background(), nil, testdata(t, name), server)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

type toolView struct {
	Name   string
	Effect model.Effect
	Input  []string // property names, sorted
	Output bool
}

// TestPetstoreDocumentsLoad: the Petstore documents in OpenAPI 3.0, 3.1 and
// Swagger 2.0 load; each operation is a tool named by its operationId with
// the effect its method implies, inputs from its parameters and body, and
// the base URL from the document's servers (Swagger's host + basePath).
func TestPetstoreDocumentsLoad(t *testing.T) {
	for _, tc := range []struct {
		file, base string
		want       []toolView
		warnings   int
		auth       *Auth
	}{
		{"petstore-oai-3.0.yaml", "http://petstore.swagger.io/v1", []toolView{
			{"listPets", model.EffectRead, []string{"limit"}, false},
			{"createPets", model.EffectWrite, []string{"body"}, false},
			{"showPetById", model.EffectRead, []string{"petId"}, true},
		}, 0, nil},
		{"petstore-oai-3.1.yaml", "http://petstore.swagger.io/v1", []toolView{
			{"listPets", model.EffectRead, []string{"limit"}, false},
			{"createPets", model.EffectWrite, []string{"body"}, false},
			{"showPetById", model.EffectRead, []string{"petId"}, true},
		}, 0, nil},
		{"petstore-3.0.yaml", "", []toolView{
			{"addPet", model.EffectWrite, []string{"body", "num"}, false},
		}, 1, nil},
	} {
		t.Run(tc.file, func(t *testing.T) {
			server := ""
			if tc.base == "" {
				server = "https://example.test/api"
			}
			a := load(t, tc.file, server)
			var got []toolView
			warnings := 0
			for _, op := range a.Ops {
				tl := model.NewTools("ns", []model.UpstreamTool{op.Tool})[0]
				var in struct{ Properties map[string]any }
				if err := json.Unmarshal(op.Tool.InputSchema, &in); err != nil {
					t.Fatal(err)
				}
				var props []string
				for k := range in.Properties {
					props = append(props, k)
				}
				sortStrings(props)
				got = append(got, toolView{op.Name, tl.Effect(), props, len(op.Tool.OutputSchema) > 0})
				if op.Warning != "" {
					warnings++
				}
			}
			sortViews(got)
			sortViews(tc.want)
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("tools (-want +got):\n%s", d)
			}
			if warnings != tc.warnings {
				t.Errorf("%d warnings, want %d", warnings, tc.warnings)
			}
			if tc.base != "" && a.Base.String() != tc.base {
				t.Errorf("base %s, want %s", a.Base, tc.base)
			}
		})
	}
	t.Run("swagger 2.0", func(t *testing.T) {
		a := load(t, "petstore-swagger-2.0.json", "")
		if len(a.Ops) != 20 || len(a.Skipped) != 0 {
			t.Errorf("%d operations, skipped %q; want all 20", len(a.Ops), a.Skipped)
		}
		// The multipart upload: its file field takes a file object.
		upload := inputOf(t, a, "uploadFile")
		body := upload["properties"].(map[string]any)["body"].(map[string]any)
		file := body["properties"].(map[string]any)["file"].(map[string]any)
		if file["type"] != "object" || file["properties"].(map[string]any)["contentBase64"] == nil || !strings.Contains(body["description"].(string), "multipart/form-data") {
			t.Errorf("uploadFile's body: %v", body)
		}
		if a.Base.String() != "https://petstore.swagger.io/v2" {
			t.Errorf("base %s", a.Base)
		}
		if a.Auth == nil || a.Auth.Scheme != "apiKey" || a.Auth.In != "header" || a.Auth.Name != "api_key" {
			t.Errorf("auth %+v, want the document's api_key header", a.Auth)
		}
		wantOAuth := []OAuth2{{ID: "petstore_auth", Flow: "implicit", AuthorizationURL: "https://petstore.swagger.io/oauth/authorize", Scopes: []string{"read:pets", "write:pets"}}}
		if d := cmp.Diff(wantOAuth, a.OAuth2); d != "" {
			t.Errorf("the document's OAuth scheme, for a sign-in (-want +got):\n%s", d)
		}
		effects := map[string]model.Effect{}
		for _, op := range a.Ops {
			effects[op.Name] = model.NewTools("ns", []model.UpstreamTool{op.Tool})[0].Effect()
		}
		want := map[string]model.Effect{"getPetById": model.EffectRead, "deletePet": model.EffectDestructive, "updatePet": model.EffectWrite, "placeOrder": model.EffectWrite}
		for k, v := range want {
			if effects[k] != v {
				t.Errorf("%s: %s, want %s", k, effects[k], v)
			}
		}
	})
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

func sortViews(v []toolView) {
	for i := 1; i < len(v); i++ {
		for j := i; j > 0 && v[j].Name < v[j-1].Name; j-- {
			v[j], v[j-1] = v[j-1], v[j]
		}
	}
}

const minimal = `{"openapi":"3.0.3","info":{"title":"t","version":"1"},"servers":[{"url":"https://api.example.test"}],
"paths":{"/x":{"get":{"operationId":"x","responses":{"200":{"description":"ok","content":{"application/json":{"schema":%s}}}}}}},
"components":{"schemas":%s}}`

// TestBadDocuments: each kind of bad document is refused with a message
// that says what is wrong (and where, for a syntax error).
func TestBadDocuments(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		want      []string
	}{
		{"JSON syntax", "{\n  \"openapi\": \"3.0.3\",\n  \"info\": {\"title\": \"t\",,}\n}", []string{"line 3, column 26"}},
		{"JSON with more after it", "{\"openapi\": \"3.0.3\", \"paths\": {}}\n{}", []string{"line 2, column 1", "more after the document"}},
		{"JSON cut short", "{\n  \"openapi\": \"3.0.3\",\n  \"info\": {", []string{"ends early", "line 3"}},
		{"YAML syntax", "openapi: 3.0.3\ninfo:\n  title: [unclosed\npaths: {}\n", []string{"invalid YAML", "line"}},
		{"not OpenAPI", `{"hello": "world"}`, []string{"no openapi or swagger field"}},
		{"version", `{"openapi": "4.0.0", "paths": {}}`, []string{"openapi 4.0.0 is not a version"}},
		{"HTML", "<!DOCTYPE html><html><body>docs</body></html>", []string{"HTML page"}},
		{"unresolved $ref", strings.Replace(minimal, "%s", `{"$ref":"#/components/schemas/Missing"}`, 1), []string{"Missing"}},
		{"external $ref", strings.Replace(minimal, "%s", `{"$ref":"other.json#/Pet"}`, 1), []string{"other.json"}},
		{"cycle", strings.Replace(strings.Replace(minimal, "%s", `{"$ref":"#/components/schemas/Node"}`, 1), "%s",
			`{"Node":{"type":"object","properties":{"children":{"type":"array","items":{"$ref":"#/components/schemas/Node"}}}}}`, 1),
			[]string{"operation GET /x", "refers to itself", "#/components/schemas/Node → #/components/schemas/Node"}},
		{"no paths", `{"openapi":"3.0.3","info":{"title":"t","version":"1"},"paths":{}}`, []string{"no paths"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := strings.Replace(tc.doc, "%s", "{}", -1)
			_, err := New(context.Background(), []byte(doc), "test.json", "")
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

// TestYAMLErrorsSayWhere: a YAML document's syntax error names the line
// and column of the fault, not the line of the mapping that holds it (the
// issue's document: a key indented wrong on line 9, in a mapping from
// line 7, was reported at line 6), and what the parser was reading there.
func TestYAMLErrorsSayWhere(t *testing.T) {
	const head = "openapi: 3.0.3\ninfo:\n  title: t\n  version: '1'\npaths:\n"
	for _, tc := range []struct {
		name, doc, want string
	}{
		{"key indented wrong", head + "  /pets:\n    get:\n      summary: s\n     description: d\n",
			"invalid YAML at line 9, column 6: did not find expected key (while parsing a block mapping from line 7, column 5)"},
		{"flow sequence not closed", "openapi: 3.0.3\ninfo:\n  title: [unclosed\npaths: {}\n",
			"invalid YAML at line 4, column 6: did not find expected ',' or ']' (while parsing a flow sequence from line 3, column 10)"},
		{"quoted string not closed", "openapi: 3.0.3\ninfo:\n  title: \"t\npaths: {}\n",
			"invalid YAML at line 5, column 1: found unexpected end of stream (while scanning a quoted scalar from line 3, column 10)"},
		{"a value where none may be", head + "  /pets:\n    get:\n      summary: s\n      bad: a: b\n",
			"invalid YAML at line 9, column 13: mapping values are not allowed in this context"},
		{"tab as indentation", "openapi: 3.0.3\n\tinfo: x\n",
			"invalid YAML at line 2, column 1: found a tab character that violates indentation (while scanning a plain scalar from line 1, column 10)"},
		{"list item among keys", head + "  /pets:\n    - get\n    post: {}\n",
			"invalid YAML at line 8, column 5: did not find expected '-' indicator (while parsing a block collection from line 7, column 5)"},
		{"unknown anchor", head + "  /pets: *nope\n", "invalid YAML at line 6, column 10: unknown anchor 'nope' referenced"},
		{"key given twice", head + "  /pets: {}\n  /pets: {}\n", `invalid YAML at line 7, column 3: mapping key "/pets" already defined at line 6`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decode([]byte(tc.doc))
			if err == nil {
				t.Fatal("accepted")
			}
			if d := cmp.Diff(tc.want, err.Error()); d != "" {
				t.Errorf("error (-want +got):\n%s", d)
			}
			// And the same, named, through Parse.
			if _, err := Parse(context.Background(), []byte(tc.doc), "api.yaml"); err == nil || err.Error() != "parsing api.yaml: "+tc.want {
				t.Errorf("Parse: %v", err)
			}
		})
	}
}

// TestReadRefuses: a document larger than the cap is refused without
// reading it whole; a page of HTML, an error status, a redirect to another
// origin (refused before anything reaches it) and a server that never
// answers are each a clear error.
func TestReadRefuses(t *testing.T) {
	big := filepath.Join(t.TempDir(), "big.json")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(40 << 20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := Read(context.Background(), nil, big); err == nil || !strings.Contains(err.Error(), "larger than 32 MB") {
		t.Errorf("a 40 MB document: %v", err)
	}
	elsewhere := 0
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { elsewhere++ }))
	defer other.Close()
	hang := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/docs":
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, "<html><body>docs</body></html>")
		case "/moved.json":
			http.Redirect(w, r, other.URL+"/openapi.json", http.StatusFound)
		case "/hang.json":
			<-hang
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	defer close(hang) // before Close, which waits for the hung handler
	u, _ := url.Parse(srv.URL)
	client := GuardedClient(u)
	ctx := context.Background()
	for _, tc := range []struct{ path, want string }{
		{"/docs", "HTML page"},
		{"/missing.json", "404"},
		{"/moved.json", "outside"},
	} {
		if _, err := Read(ctx, client, srv.URL+tc.path); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.path, err, tc.want)
		}
	}
	if elsewhere != 0 {
		t.Errorf("the other origin got %d requests", elsewhere)
	}
	cctx, cancel := context.WithTimeout(ctx, 100e6)
	defer cancel()
	if _, err := Read(cctx, client, srv.URL+"/hang.json"); err == nil || !strings.Contains(err.Error(), "did not answer in time") {
		t.Errorf("a server that never answers: %v", err)
	}
}

// TestCredentialWithoutScheme: a document that declares no security scheme
// (GitHub's) gets a stored credential as a bearer token; with none stored,
// no Authorization header is sent.
func TestCredentialWithoutScheme(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Get("Authorization"))
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"ok":true}`)
	}))
	defer srv.Close()
	doc := strings.Replace(strings.Replace(minimal, "%s", `{"type":"object"}`, 1), "%s", "{}", 1)
	a, err := New(context.Background(), []byte(doc), "test.json", srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	for _, cred := range []string{"tok", ""} {
		res, err := a.Call(context.Background(), "x", nil, cred)
		if err != nil || res.IsError {
			t.Fatalf("call: %v %+v", err, res)
		}
	}
	if d := cmp.Diff([]string{"Bearer tok", ""}, got); d != "" {
		t.Errorf("Authorization (-want +got):\n%s", d)
	}
}
