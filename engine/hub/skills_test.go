package hub_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/skill"
	"github.com/capabilities-sh/capabilities/engine/typegen"
)

func addSkill(t *testing.T, h *hub.Hub, name, desc string, files map[string]string) {
	t.Helper()
	src := t.TempDir()
	files["SKILL.md"] = "---\nname: " + name + "\ndescription: " + desc + "\n---\n# " + name + "\n\nSteps for " + name + ".\n"
	for f, body := range files {
		p := filepath.Join(src, filepath.FromSlash(f))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s, err := skill.Read(src)
	if err != nil {
		t.Fatal(err)
	}
	st, ok := h.Skills()
	if !ok {
		t.Fatal("the hub has no skills folder")
	}
	if err := st.Add(s, skill.Origin{Path: src}); err != nil {
		t.Fatal(err)
	}
}

// TestSearchFindsSkillsBesideTools: search lists the skills that share a
// word with the query after the tools, marked as skills with how to read
// them, in text and JSON; a skill that shares no word is not listed, nor
// any skill in a namespace-scoped search.
func TestSearchFindsSkillsBesideTools(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	addSkill(t, f.h, "release-notes", "Write release notes from merged pull requests. Use before tagging a release.", map[string]string{})
	addSkill(t, f.h, "pdf-forms", "Fill PDF forms.", map[string]string{})
	res, err := f.h.Search(ctx, hub.SearchQuery{Text: "write the release notes"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Skills) != 1 || res.Skills[0].Name != "release-notes" || res.Skills[0].Description != "Write release notes from merged pull requests." {
		t.Fatalf("skills %+v, want release-notes alone", res.Skills)
	}
	text := res.Text()
	if !strings.Contains(text, "skills (instructions, not tools: read one with describe(\"skill:<name>\"))\n  skill:release-notes\n    Write release notes") {
		t.Errorf("text does not list the skill:\n%s", text)
	}
	if b, _ := res.MarshalJSON(); !strings.Contains(string(b), `"skills":[{"name":"release-notes"`) {
		t.Errorf("JSON lacks the skill: %s", b)
	}
	res, err = f.h.Search(ctx, hub.SearchQuery{Text: "release notes", Namespace: "leaky"})
	if err != nil || len(res.Skills) != 0 {
		t.Errorf("a namespace-scoped search lists skills: %v %+v", err, res.Skills)
	}
	// No tool shares a word with the query and a skill does: the skill
	// comes first, before the tools found by related words.
	res, err = f.h.Search(ctx, hub.SearchQuery{Text: "fill pdf forms"})
	if err != nil {
		t.Fatal(err)
	}
	if text := res.Text(); res.Fallback == "" || !strings.HasPrefix(text, "skills (instructions") || strings.Count(text, "skill:pdf-forms") != 1 {
		t.Errorf("a skill that shares the query's words is not first (fallback %q):\n%s", res.Fallback, text)
	}
	res, err = f.h.Search(ctx, hub.SearchQuery{Text: "leak the token"})
	if err != nil || len(res.Skills) != 0 {
		t.Errorf("skills that share no word are listed: %v %+v", err, res.Skills)
	}
}

// TestDescribeSkill: describe("skill:<name>") gives SKILL.md as it is and
// lists the files beside it, also mixed with tool targets; an unknown skill
// names the ones there are. A hub with skills and no tools finds them.
func TestDescribeSkill(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	addSkill(t, f.h, "pdf-forms", "Fill PDF forms.", map[string]string{"reference.md": "x", "scripts/fill.py": "y"})
	out, err := f.h.Describe(ctx, []string{"skill:pdf-forms"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := "// skill:pdf-forms: SKILL.md\n---\nname: pdf-forms\ndescription: Fill PDF forms.\n---\n# pdf-forms\n\nSteps for pdf-forms.\n// files of skill:pdf-forms, beside SKILL.md (2):\n//   reference.md\n//   scripts/fill.py\n"
	if out != want {
		t.Errorf("describe:\n%s\nwant:\n%s", out, want)
	}
	res, err := f.h.Search(ctx, hub.SearchQuery{Text: "leak"})
	if err != nil || len(res.Hits) == 0 {
		t.Fatal(err)
	}
	out, err = f.h.Describe(ctx, []string{"skill:pdf-forms", res.Hits[0].Address}, 0)
	if err != nil || !strings.HasPrefix(out, want+"\n") || !strings.Contains(out, "leaky") {
		t.Errorf("mixed targets: %v\n%s", err, out)
	}
	_, err = f.h.Describe(ctx, []string{"skill:nope"}, 0)
	if !errors.Is(err, typegen.ErrUnknownTarget) || !strings.Contains(err.Error(), "the skills are skill:pdf-forms") {
		t.Errorf("unknown skill: %v", err)
	}
	_, err = f.h.Describe(ctx, []string{"skill:../../etc"}, 0)
	if !errors.Is(err, typegen.ErrUnknownTarget) {
		t.Errorf("a path as a skill name: %v", err)
	}
}
