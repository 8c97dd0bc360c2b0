package index

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// TestSearchGolden keeps what a model reads for a few searches over the
// corpus, so changes to ranking or rendering show up in review.
func TestSearchGolden(t *testing.T) {
	ix := New(testenv.CorpusTools(t), Options{Connections: func(ns string) ([]string, string) {
		if ns == "github" {
			return []string{"personal", "work"}, "personal"
		}
		return nil, ""
	}})
	for _, q := range []Query{
		{Text: "open a ticket"},
		{Text: "take a screenshot of the page", Limit: 3},
		{Text: "delete", Namespace: "mongodb", Limit: 3},
		{Namespace: "memory", Limit: 4},
		// Issue 17's failure kinds, in queries of our own. The person's
		// words differ from the tool's:
		{Text: "altitude of the hut", Limit: 3},
		{Text: "duplicate the repo into my account", Limit: 3},
		{Text: "vehicle route to the stadium", Limit: 3},
		// A namespace-scoped search where no word matches:
		{Text: "tick a choice in a combo box", Namespace: "puppeteer", Limit: 5},
		{Text: "who is Ana", Namespace: "memory", Limit: 3},
		// Generic words:
		{Text: "list everything in the folder", Limit: 3},
		{Text: "get the list of teams", Limit: 3},
	} {
		name := strings.ReplaceAll(q.Text, " ", "-")
		if q.Text == "" {
			name = "list"
		}
		if q.Namespace != "" {
			name = q.Namespace + "_" + name
		}
		t.Run(name, func(t *testing.T) {
			res, err := ix.Search(q)
			if err != nil {
				t.Fatal(err)
			}
			got := res.Text()
			path := filepath.Join("testdata", "golden", name+".txt")
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if diff := cmp.Diff(string(want), got); diff != "" {
				t.Errorf("search %+v (-want +got):\n%s", q, diff)
			}
		})
	}
}
