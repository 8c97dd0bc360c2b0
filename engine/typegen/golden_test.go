package typegen

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// goldenTargets are representative: no input, nested arrays of objects,
// $defs with oneOf, outputs, index signatures, long descriptions, a whole
// namespace, and a namespace over the budget.
var goldenTargets = []string{
	"github.getMe",
	"github.issueWrite",
	"github.pushFiles",
	"notion.apiPostPage",
	"notion.apiPatchBlockChildren",
	"linear.linearGetWorkflowStates",
	"memory.createEntities",
	"mongodb.insertMany",
	"circleci.getBuildFailureLogs",
	"sentry.searchEvents",
	"thinking.sequentialthinking",
	"slack.slackPostMessage",
	"googlemaps.mapsDirections",
	"memory",
	"linear",
}

func TestGolden(t *testing.T) {
	tools := testenv.CorpusTools(t)
	d := NewDescriber(tools)
	sigs := map[string]string{}
	for i := range tools {
		sigs[tools[i].Address] = Signature(&tools[i])
	}
	for _, target := range goldenTargets {
		t.Run(target, func(t *testing.T) {
			out, err := d.Describe([]string{target}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if sig, ok := sigs[target]; ok {
				out = "// search: " + sig + "\n" + out
			}
			path := filepath.Join("testdata", "golden", target+".ts")
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if diff := cmp.Diff(string(want), out); diff != "" {
				t.Errorf("describe %s (-want +got):\n%s", target, diff)
			}
		})
	}
}
