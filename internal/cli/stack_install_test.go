package cli

import (
	"errors"
	"strings"
	"testing"

	"github.com/capabilities-sh/capabilities/engine/catalog"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/google/go-cmp/cmp"
)

func TestPickIntegrity(t *testing.T) {
	const a, b = "sha512-AAAA", "sha512-BBBB"
	offline := errors.New("npm view: ENOTCACHED")
	for _, tc := range []struct {
		name, catalog, npm string
		npmErr             error
		want, from, errHas string
	}{
		{name: "npm says, catalog silent", npm: a, want: a, from: "npm"},
		{name: "both agree", catalog: a, npm: a, want: a, from: "npm"},
		{name: "both differ", catalog: a, npm: b, errHas: "npm gives p@1.0.0 the integrity sha512-BBBB, the catalog sha512-AAAA: one of them is not the package it names"},
		{name: "npm offline, catalog says", catalog: a, npmErr: offline, want: a, from: "catalog"},
		{name: "neither", npmErr: offline},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ent := &catalog.Entry{Slug: "p", Shape: catalog.ShapeNPM, Package: "p", Version: "1.0.0", Integrity: tc.catalog}
			got, from, err := pickIntegrity(ent, tc.npm, tc.npmErr)
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
