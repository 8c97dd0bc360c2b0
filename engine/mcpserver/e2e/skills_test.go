package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSDK1StdioSkill: a skill added with `hub skills add` reaches a real
// client (@modelcontextprotocol/sdk 1.x over stdio): search lists it beside
// the tools, marked as a skill, describe("skill:<name>") returns its
// SKILL.md as written and names the files beside it, and so does
// hub.describe from inside execute.
func TestSDK1StdioSkill(t *testing.T) {
	t.Parallel()
	h := newHub(t)
	h.addScripted("reader", false)
	src := filepath.Join(h.work, "pdf-forms")
	doc := "---\nname: pdf-forms\ndescription: Fill PDF forms. Use when the user hands you a PDF with form fields.\n---\n# PDF forms\n\nRead reference.md before filling.\n"
	for name, body := range map[string]string{"SKILL.md": doc, "reference.md": "Field names are case-sensitive.\n", "scripts/fill.py": "print(1)\n"} {
		p := filepath.Join(src, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	h.cli("hub", "skills", "add", src)

	var out struct {
		Search, Describe, Read toolResult
	}
	h.client(&out, nil, "sdk1_stdio.mjs", "skill", "pdf-forms", "fill in a pdf form")
	if out.Search.IsError || !strings.Contains(out.Search.Text, "skill:pdf-forms\n    Fill PDF forms.") || !strings.Contains(out.Search.Text, "read one with describe(\"skill:<name>\")") {
		t.Errorf("search does not list the skill:\n%s", out.Search.Text)
	}
	want := "// skill:pdf-forms: SKILL.md\n" + doc + "// files of skill:pdf-forms, beside SKILL.md (2):\n//   reference.md\n//   scripts/fill.py\n"
	if out.Describe.IsError || out.Describe.Text != want {
		t.Errorf("describe skill:pdf-forms:\n%s\nwant:\n%s", out.Describe.Text, want)
	}
	var got string
	if e := out.Read.Structured; e == nil || e.Status != "completed" || json.Unmarshal(e.Result, &got) != nil || got != want {
		t.Errorf("hub.describe in execute = %+v %q", out.Read.Structured, out.Read.Text)
	}
}
