package openapi

import (
	"bytes"
	"encoding/json"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/google/go-cmp/cmp"
)

// edgeDoc has what a decoder may read differently: numbers of every shape,
// strings that YAML would read as something else, nulls, booleans as
// schemas (3.1), extensions at every level, an empty paths entry, unicode
// escapes, exclusive bounds of both versions.
const edgeDoc = `{"openapi":"3.1.0","info":{"title":"Edge \u00e9\u2028","version":"1.0","x-n":1e3,"x-big":12345678901234567890},
"servers":[{"url":"https://{host}/v1","variables":{"host":{"default":"api.example.test","enum":["api.example.test"]}}}],
"x-top":{"a":[1,2.5,-0,true,null,"yes","2020-06-11T16:32:50Z","0x1F","~",""]},
"paths":{"x-paths":{"k":"v"},"/a/{id}":{"parameters":[{"name":"id","in":"path","required":true,"schema":{"type":"integer","minimum":0,"exclusiveMaximum":100}}],
 "get":{"operationId":"a","x-op":null,"parameters":[{"name":"q","in":"query","style":"form","explode":false,"schema":{"type":["string","null"],"default":"on","enum":["on","off","no",null]}}],
  "responses":{"200":{"description":"ok","content":{"application/json":{"schema":{"type":"object","additionalProperties":false,"properties":{"n":{"type":"number","multipleOf":0.01,"maximum":1.5e2,"example":3},"t":true,"f":false},"required":["n"]},"examples":{"one":{"$ref":"#/components/examples/E"}}}}},"default":{"description":"error"}}}},
 "/b":{}},
"components":{"examples":{"E":{"summary":"s","value":{"a":[1,{"b":null}]}},"x-e":{"value":1}},"schemas":{"S":{"type":"object","properties":{"s":{"$ref":"#/components/schemas/T"}},"x-s":{"deep":[{"x":1}]}},"T":{"type":"string","format":"date-time","const":"2020-01-01","nullable":true}},
 "securitySchemes":{"k":{"type":"apiKey","in":"header","name":"X-Key"}},"x-c":1},
"security":[{"k":[]}],"tags":[{"name":"t","description":"d"}]}`

func kinJSON(t testing.TB, js []byte) ([]byte, error) {
	t.Helper()
	doc := &openapi3.T{}
	if err := json.Unmarshal(js, doc); err != nil {
		return nil, err
	}
	return json.Marshal(doc)
}

func fastJSON(t testing.TB, js []byte) ([]byte, error) {
	t.Helper()
	root, err := jsonToNode(js)
	if err != nil {
		return nil, err
	}
	doc, err := decodeV3Nodes(root)
	if err != nil {
		return nil, err
	}
	return json.Marshal(doc)
}

func asJSON(t testing.TB, name string) []byte {
	t.Helper()
	path := testdata(t, name)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	v, err := decode(data)
	if err != nil {
		t.Fatal(err)
	}
	js, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// TestDecodeV3MatchesKinOpenAPI: the fast decoding gives the document that
// kin-openapi's JSON decoding gives (compared as kin-openapi writes it back
// out), for the test documents, a document of edge cases and GitHub's REST
// description; and a document with a duplicate key, which the fast path
// refuses, still loads (through kin-openapi's JSON decoding, last key wins).
func TestDecodeV3MatchesKinOpenAPI(t *testing.T) {
	docs := map[string][]byte{
		"edge":                  []byte(edgeDoc),
		"petstore-oai-3.0.yaml": asJSON(t, "petstore-oai-3.0.yaml"),
		"petstore-oai-3.1.yaml": asJSON(t, "petstore-oai-3.1.yaml"),
		"petstore-3.0.yaml":     asJSON(t, "petstore-3.0.yaml"),
	}
	if _, err := os.Stat(testenv.Root(t) + "/testdata/harnesses/node_modules/@octokit/openapi"); err == nil || os.Getenv("CI") == "true" {
		gh, err := os.ReadFile(testenv.LargeNPMPath(t, "@octokit/openapi/generated/api.github.com.json"))
		if err != nil {
			t.Fatal(err)
		}
		docs["github"] = gh
	} else {
		t.Log("GitHub's description is not installed (scripts/setup.sh --tests installs it): compared the small documents only")
	}
	for name, js := range docs {
		t.Run(name, func(t *testing.T) {
			want, err := kinJSON(t, js)
			if err != nil {
				t.Fatal(err)
			}
			got, err := fastJSON(t, js)
			if err != nil {
				t.Fatal(err)
			}
			var w, g any
			_ = json.Unmarshal(want, &w)
			_ = json.Unmarshal(got, &g)
			if d := cmp.Diff(w, g); d != "" {
				t.Errorf("the fast decoding differs (-kin-openapi's JSON +fast):\n%s", d)
			}
		})
	}
	t.Run("duplicate key", func(t *testing.T) {
		js := []byte(`{"openapi":"3.0.3","info":{"title":"first","title":"second","version":"1"},"paths":{"/x":{"get":{"responses":{"200":{"description":"ok"}}}}}}`)
		if _, err := fastJSON(t, js); err == nil {
			t.Log("the fast path read a duplicate key") // not what it promises either way
		}
		root, err := jsonToNode(js)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := decodeV3(root, js)
		if err != nil || doc.Info.Title != "second" {
			t.Fatalf("%v %+v", err, doc)
		}
	})
}

// maxFuzzDoc is the largest document FuzzDecodeV3 reads. The minimizer
// tries inputs in a number that grows with the square of the length:
// inputs grown from the 2 KiB petstore kept both workers minimizing past
// the end of a 60 s run, and one of 480 bytes took 34 s on a loaded
// machine.
const maxFuzzDoc = 256

// FuzzDecodeV3: for any JSON kin-openapi's JSON decoding reads as a
// document, the fast decoding refuses it (and decodeV3 falls back) or
// gives the same document. Its seeds are the edge-case document cut to
// size (TestDecodeV3MatchesKinOpenAPI reads it whole, and the petstore).
func FuzzDecodeV3(f *testing.F) {
	for _, js := range cutDoc(f, []byte(edgeDoc), maxFuzzDoc) {
		f.Add(js)
	}
	f.Add([]byte(`{"openapi":"3.0.3","paths":{"/x":{"get":{"parameters":[{"name":"a","in":"query","schema":{"type":"integer","maximum":1e400}}]}}}}`))
	f.Add([]byte(`{"openapi":"3.0.3","components":{"schemas":{"A":{"type":"array","items":{"$ref":"#/components/schemas/A"},"maxItems":18446744073709551615}}}}`))
	f.Add([]byte("{\"openapi\":\"3.0.3\",\"info\":{\"title\":\"bad \xff utf-8\",\"title\":\"twice\",\"version\":\"1\"},\"paths\":{}}"))
	f.Add([]byte("{\"openapi\":\"3.0.3\",\"info\":{\"title\":\"bad \xff\xfe utf-8 \\ud800\",\"version\":\"1\"},\"paths\":{}}"))
	// Past the cap from the start: the early return is no new coverage,
	// so a longer input is never kept (nor minimized).
	f.Add(bytes.Repeat([]byte(" "), maxFuzzDoc+1))
	f.Fuzz(func(t *testing.T, js []byte) {
		if len(js) > maxFuzzDoc {
			return
		}
		want, err := kinJSON(t, js)
		if err != nil {
			return
		}
		got, err := fastJSON(t, js)
		if err != nil || bytes.Equal(got, want) {
			return
		}
		var in, w, g any
		_ = json.Unmarshal(js, &in)
		_ = json.Unmarshal(want, &w)
		_ = json.Unmarshal(got, &g)
		if caseFolded(in, w) {
			return // encoding/json matched a key to a field whatever its case
		}
		if d := cmp.Diff(w, g); d != "" {
			t.Errorf("the fast decoding differs (-kin-openapi's JSON +fast):\n%s", d)
		}
	})
}

// cutDoc cuts a document into documents of at most max bytes, each with
// the original's openapi and one other member; a member too
// large is cut the same way, one of its own members at a time, within the
// members that hold it. The values keep their text (numbers, escapes).
func cutDoc(t testing.TB, js []byte, max int) [][]byte {
	t.Helper()
	var top map[string]json.RawMessage
	if err := json.Unmarshal(js, &top); err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	var cut func(path []string, v json.RawMessage)
	cut = func(path []string, v json.RawMessage) {
		w := v
		for i := len(path) - 1; i > 0; i-- {
			w, _ = json.Marshal(map[string]json.RawMessage{path[i]: w})
		}
		doc := map[string]json.RawMessage{"openapi": top["openapi"], path[0]: w}
		b, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) <= max {
			out = append(out, b)
			return
		}
		var members map[string]json.RawMessage
		if json.Unmarshal(v, &members) != nil {
			t.Fatalf("%s has %d bytes and no members to cut it by", strings.Join(path, "."), len(b))
		}
		for _, k := range slices.Sorted(maps.Keys(members)) {
			cut(append(path[:len(path):len(path)], k), members[k])
		}
	}
	for _, k := range slices.Sorted(maps.Keys(top)) {
		if k != "openapi" {
			cut([]string{k}, top[k])
		}
	}
	return out
}

// caseFolded reports whether the input has a key that the output writes
// in another case (encoding/json matches struct fields case-insensitively;
// OpenAPI's keys, YAML and the fast path are case-sensitive).
func caseFolded(in, out any) bool {
	outKeys := map[string]bool{}
	var collect func(v any, into map[string]bool)
	collect = func(v any, into map[string]bool) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				into[k] = true
				collect(e, into)
			}
		case []any:
			for _, e := range x {
				collect(e, into)
			}
		}
	}
	collect(out, outKeys)
	inKeys := map[string]bool{}
	collect(in, inKeys)
	for k := range inKeys {
		for o := range outKeys {
			if k != o && strings.EqualFold(k, o) {
				return true
			}
		}
	}
	return false
}
