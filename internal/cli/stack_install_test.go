package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capabilities-sh/capabilities/engine/catalog"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/google/go-cmp/cmp"
)

func TestPickIntegrity(t *testing.T) {
	const a, b = "sha512-AAAA", "sha512-BBBB"
	for _, tc := range []struct {
		name               string
		tree, npm, catalog string
		want, from, errHas string
	}{
		{name: "the tree says", tree: a, want: a, from: "npm-tree"},
		{name: "npm says, catalog silent", npm: a, want: a, from: "npm"},
		{name: "tree and catalog agree", tree: a, catalog: a, want: a, from: "npm-tree"},
		{name: "npm and catalog agree", npm: a, catalog: a, want: a, from: "npm"},
		{name: "npm and catalog differ", catalog: a, npm: b, errHas: "p@1.0.0 has the integrity sha512-BBBB by npm view and sha512-AAAA by the catalog: one of them is not the package it names"},
		{name: "tree and catalog differ", tree: b, catalog: a, errHas: "p@1.0.0 has the integrity sha512-BBBB by /x/package-lock.json and sha512-AAAA by the catalog"},
		{name: "only the catalog", catalog: a, want: a, from: "catalog"},
		{name: "none"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ent := &catalog.Entry{Slug: "p", Shape: catalog.ShapeNPM, Package: "p", Version: "1.0.0", Integrity: tc.catalog}
			said := []integritySaid{{value: tc.tree, from: "npm-tree", where: "/x/package-lock.json"}, {value: tc.npm, from: "npm"}, {value: tc.catalog, from: "catalog"}}
			got, from, err := pickIntegrity(ent, said)
			if tc.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errHas) {
					t.Fatalf("error %v, want …%s…", err, tc.errHas)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff([2]string{tc.want, tc.from}, [2]string{got, from}); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

// TestTreeIntegrity reads the test lockfile's tree (testdata/npm, what
// npm ci left) from a folder inside it, as npx would resolve the package.
func TestTreeIntegrity(t *testing.T) {
	dir := filepath.Join("..", "..", "testdata", "npm", "node_modules", "@modelcontextprotocol")
	if _, err := os.Stat(dir); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("testdata/npm is not installed: run scripts/setup.sh --tests (npm ci in testdata/npm): %v", err)
		}
		t.Skipf("testdata/npm is not installed (npm ci): %v", err)
	}
	got, at := treeIntegrity(dir, "@modelcontextprotocol/server-memory", "2026.8.31")
	if got != "sha512-ljj/3S4aGjxdNSQWw6gucKKGnTLdBPWxzapyY/MT2tOVyZwvxChvevXSLPwx59nKJAlVpUVW+cOlnVRXRwiqMQ==" || !strings.HasSuffix(at, filepath.Join("npm", "node_modules", ".package-lock.json")) {
		t.Errorf("treeIntegrity = %q from %q", got, at)
	}
	if got, _ := treeIntegrity(dir, "@modelcontextprotocol/server-memory", "1.0.0"); got != "" {
		t.Errorf("another version: %q", got)
	}
	if got, _ := treeIntegrity(t.TempDir(), "@modelcontextprotocol/server-memory", "2026.8.31"); got != "" {
		t.Errorf("a folder with no tree: %q", got)
	}
}

func TestDigests(t *testing.T) {
	tools := []model.Tool{{Name: "b", Contract: "c2"}, {Name: "a", Contract: "c1"}}
	rev := []model.Tool{tools[1], tools[0]}
	if toolsDigest(tools) != toolsDigest(rev) {
		t.Error("toolsDigest depends on the tools' order")
	}
	changed := []model.Tool{{Name: "b", Contract: "c3"}, {Name: "a", Contract: "c1"}}
	if toolsDigest(tools) == toolsDigest(changed) {
		t.Error("toolsDigest does not see a changed contract")
	}
	if !strings.HasPrefix(toolsDigest(nil), "sha256:") || len(toolsDigest(nil)) != len("sha256:")+64 {
		t.Errorf("toolsDigest(nil) = %q", toolsDigest(nil))
	}
	f1 := map[string]string{"SKILL.md": "aa", "x/y.md": "bb"}
	f2 := map[string]string{"SKILL.md": "aa", "x/y.md": "bc"}
	f3 := map[string]string{"SKILL.md": "aa", "x/z.md": "bb"}
	if filesDigest(f1) == filesDigest(f2) || filesDigest(f1) == filesDigest(f3) {
		t.Error("filesDigest does not see a changed file or name")
	}
}
