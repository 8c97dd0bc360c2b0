package skill

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestFind: each skill in the harnesses' folders gets what importing it
// would do — import (with its description), in-hub (the hub has the same
// files), clash (the hub, or another folder, has a different skill of that
// name), unreadable — and the same skill in two folders is imported once.
// Import copies one in and marks it; a skill not to import is refused.
func TestFind(t *testing.T) {
	root := t.TempDir()
	st := Store{Dir: filepath.Join(root, "hub")}
	claude, codex := filepath.Join(root, "claude"), filepath.Join(root, "codex")
	other := "---\nname: pdf-forms\ndescription: Another way.\n---\n"
	notes := "---\nname: notes\ndescription: Take notes.\n---\n"
	write(t, claude, map[string]string{"pdf-forms/SKILL.md": pdfDoc, "notes/SKILL.md": notes, "kept/SKILL.md": "---\nname: kept\ndescription: Kept.\n---\n", "broken/SKILL.md": "no front matter"})
	write(t, codex, map[string]string{"pdf-forms/SKILL.md": pdfDoc, "notes/SKILL.md": "---\nname: notes\ndescription: Other notes.\n---\n", "kept/SKILL.md": other})
	kept, err := Read(filepath.Join(claude, "kept"))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Add(kept, Origin{Path: "x"}); err != nil {
		t.Fatal(err)
	}
	found := Find([]Folder{{"claude-code", claude}, {"none", ""}, {"codex", codex}}, st)
	type row struct{ Harness, Name, Description, Status string }
	var got []row
	for _, f := range found {
		got = append(got, row{f.Harness, f.Name, f.Description, f.Status})
	}
	want := []row{
		{"claude-code", "broken", "", FoundUnreadable},
		{"claude-code", "kept", "Kept.", FoundInHub},
		{"claude-code", "notes", "Take notes.", FoundImport},
		{"claude-code", "pdf-forms", "Fill PDF forms. Use when the user hands you a PDF with fields.", FoundImport},
		{"codex", "pdf-forms", "Another way.", FoundClash},
		{"codex", "notes", "Other notes.", FoundClash},
		{"codex", "pdf-forms", "Fill PDF forms. Use when the user hands you a PDF with fields.", FoundInHub},
	}
	// codex's kept/ names itself pdf-forms (a different skill): a clash.
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Find (-want +got):\n%s", diff)
	}
	for i := range found {
		if found[i].Status == FoundImport {
			if err := st.Import(&found[i]); err != nil || found[i].Status != FoundImported {
				t.Errorf("Import %s: %v, status %s", found[i].Name, err, found[i].Status)
			}
		}
	}
	if err := st.Import(&found[1]); err == nil {
		t.Error("importing a skill already in the hub succeeded")
	}
	all, err := st.List()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range all {
		names = append(names, s.Name)
	}
	if diff := cmp.Diff([]string{"kept", "notes", "pdf-forms"}, names); diff != "" {
		t.Errorf("the hub's skills after import (-want +got):\n%s", diff)
	}
}
