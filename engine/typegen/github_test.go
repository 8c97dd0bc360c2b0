package typegen

import (
	"context"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/openapi"
	"github.com/capabilities-sh/capabilities/internal/testenv"
)

// TestGitHubDescriptionCompiles: GitHub's REST description (npm
// @octokit/openapi, about 1,200 operations) made into tools: each tool's
// whole declaration (no budget) type-checks with tsc --strict, with calls of
// the tool.
func TestGitHubDescriptionCompiles(t *testing.T) {
	doc := testenv.LargeNPMPath(t, "@octokit/openapi/generated/api.github.com.json")
	start := time.Now()
	api, err := openapi.Load(context.Background(), nil, doc, "")
	if err != nil {
		t.Fatal(err)
	}
	up := make([]model.UpstreamTool, len(api.Ops))
	for i := range api.Ops {
		up[i] = api.Ops[i].Tool
	}
	tools := model.NewTools("github", up)
	t.Logf("%d tools from the document in %v (%d operations left out: %q)", len(tools), time.Since(start), len(api.Skipped), api.Skipped)
	if len(tools) < 1000 {
		t.Fatalf("only %d tools", len(tools))
	}
	d := NewDescriber(tools)
	sp := d.spaces["github"].load()
	files := map[string]string{}
	start = time.Now()
	for _, td := range sp.tools {
		decl, err := d.Describe([]string{td.address}, Options{Budget: -1})
		if err != nil {
			t.Fatal(err)
		}
		files["tool_"+td.address+".ts"] = decl + calls(sp, []*toolDecl{td})
	}
	t.Logf("described %d tools in %v", len(files), time.Since(start))
	start = time.Now()
	tsc(t, files)
	t.Logf("tsc --strict over %d files in %v", len(files), time.Since(start))
}
