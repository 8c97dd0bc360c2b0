package openapi

import (
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/google/go-cmp/cmp"
)

// TestPlainIsTheJSONForm: for every schema of the test documents and of
// GitHub's REST description, plain gives what reading back kin-openapi's
// JSON of the schema gives.
func TestPlainIsTheJSONForm(t *testing.T) {
	docs := map[string]*openapi3.T{}
	for _, name := range []string{"petstore-oai-3.0.yaml", "petstore-oai-3.1.yaml", "petstore-3.0.yaml", "petstore-swagger-2.0.json", "petstore-prism.yaml"} {
		a, err := Load(context.Background(), nil, testdata(t, name), "https://api.example.test")
		if err != nil {
			t.Fatal(err)
		}
		docs[name] = a.Doc
	}
	edge, err := New(context.Background(), []byte(edgeDoc), "edge.json", "")
	if err != nil {
		t.Fatal(err)
	}
	docs["edge"] = edge.Doc
	if _, err := os.Stat(testenv.Root(t) + "/testdata/harnesses/node_modules/@octokit/openapi"); err == nil || os.Getenv("CI") == "true" {
		a, err := Load(context.Background(), nil, testenv.LargeNPMPath(t, "@octokit/openapi/generated/api.github.com.json"), "")
		if err != nil {
			t.Fatal(err)
		}
		docs["github"] = a.Doc
	}
	for name, doc := range docs {
		t.Run(name, func(t *testing.T) {
			n := 0
			for sname, sr := range doc.Components.Schemas {
				b, err := json.Marshal(sr.Value)
				if err != nil {
					t.Fatal(err)
				}
				var want any
				if err := json.Unmarshal(b, &want); err != nil {
					t.Fatal(err)
				}
				got, err := plain(sr.Value)
				if err != nil {
					t.Fatal(err)
				}
				if d := cmp.Diff(want, got); d != "" {
					t.Fatalf("schema %s (-JSON +plain):\n%s", sname, d)
				}
				n++
			}
			if n == 0 && name != "petstore-3.0.yaml" {
				t.Errorf("no schemas compared")
			}
		})
	}
}
