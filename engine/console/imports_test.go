package console_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capabilities-sh/capabilities/engine/console"
	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/skill"
	"github.com/google/go-cmp/cmp"
)

// writeSkills writes SKILL.md files under dir: folder → document.
func writeSkills(t *testing.T, dir string, docs map[string]string) {
	t.Helper()
	for folder, doc := range docs {
		p := filepath.Join(dir, folder, "SKILL.md")
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// TestImportSkillsFromTheConsole: GET /api/import lists the skills in the
// agents' folders with their names, descriptions and what importing does;
// POST imports the named ones into the hub (search then finds them) and
// answers the list read again. A name no folder holds is refused with
// nothing imported (even the good names beside it); a skill no longer to
// import (imported since) is a 409; a page about one run imports nothing.
func TestImportSkillsFromTheConsole(t *testing.T) {
	f := newFixture(t)
	root := t.TempDir()
	claude, codex := filepath.Join(root, "claude"), filepath.Join(root, "codex")
	writeSkills(t, claude, map[string]string{
		"pdf-forms": "---\nname: pdf-forms\ndescription: Fill PDF forms. Use when handed a PDF.\n---\n# PDF\n",
		"notes":     "---\nname: notes\ndescription: Take meeting notes.\n---\n# Notes\n",
	})
	writeSkills(t, codex, map[string]string{"notes": "---\nname: notes\ndescription: Other notes.\n---\n"})
	folders := func() []skill.Folder {
		return []skill.Folder{{Harness: "claude-code", Dir: claude}, {Harness: "codex", Dir: codex}}
	}
	p := newPage(t, console.New(f.h, console.Options{SkillFolders: folders}), console.GuardOptions{})
	_, cookie, csrf := p.login()
	origin := "http://" + guardAddr
	type row struct{ Name, Description, Harness, Status string }
	rows := func(skills []console.ImportSkill) []row {
		var out []row
		for _, s := range skills {
			out = append(out, row{s.Name, s.Description, s.Harness, s.Status})
		}
		return out
	}
	list := func() []row {
		t.Helper()
		w := p.send(request{method: http.MethodGet, target: "/api/import", cookie: cookie})
		var in console.Imports
		if w.Code != http.StatusOK || json.Unmarshal(w.Body.Bytes(), &in) != nil {
			t.Fatalf("GET /api/import: %d %s", w.Code, w.Body)
		}
		return rows(in.Skills)
	}
	want := []row{
		{"notes", "Take meeting notes.", "claude-code", "import"},
		{"pdf-forms", "Fill PDF forms. Use when handed a PDF.", "claude-code", "import"},
		{"notes", "Other notes.", "codex", "clash"},
	}
	if diff := cmp.Diff(want, list()); diff != "" {
		t.Fatalf("GET /api/import (-want +got):\n%s", diff)
	}
	post := func(body any) (int, string) {
		t.Helper()
		w := p.send(request{method: http.MethodPost, target: "/api/import", body: body, cookie: cookie, csrf: csrf, origin: origin})
		return w.Code, w.Body.String()
	}
	st, _ := f.h.Skills()
	count := func() int {
		all, err := st.List()
		if err != nil {
			t.Fatal(err)
		}
		return len(all)
	}
	for _, bad := range []struct {
		body any
		code int
		want string
	}{
		{map[string][]string{"skills": {"pdf-forms", "ghost"}}, 400, "no agent's skills folder holds a skill ghost"},
		{map[string][]string{"skills": {}}, 400, "name the skills to import"},
		{map[string]any{"servers": []string{"x"}}, 400, "bad_request"},
	} {
		if code, body := post(bad.body); code != bad.code || !strings.Contains(body, bad.want) {
			t.Errorf("POST /api/import %v: %d %s; want %d saying %q", bad.body, code, body, bad.code, bad.want)
		}
	}
	if n := count(); n != 0 {
		t.Fatalf("refused imports left %d skills in the hub", n)
	}

	code, body := post(map[string][]string{"skills": {"pdf-forms"}})
	var got console.Imported
	if code != http.StatusOK || json.Unmarshal([]byte(body), &got) != nil {
		t.Fatalf("POST /api/import pdf-forms: %d %s", code, body)
	}
	want[1].Status = "in-hub"
	if diff := cmp.Diff([]string{"pdf-forms"}, got.Imported); diff != "" {
		t.Errorf("imported (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, rows(got.Skills)); diff != "" {
		t.Errorf("the list after the import (-want +got):\n%s", diff)
	}
	if n := count(); n != 1 {
		t.Errorf("the hub holds %d skills, want 1", n)
	}
	res, err := f.h.Search(context.Background(), hub.SearchQuery{Text: "fill a pdf form"})
	if err != nil || len(res.Skills) != 1 || res.Skills[0].Name != "pdf-forms" {
		t.Errorf("search after the import: %+v, %v", res.Skills, err)
	}
	if code, body := post(map[string][]string{"skills": {"pdf-forms"}}); code != http.StatusConflict || !strings.Contains(body, "not one to import any more") {
		t.Errorf("importing pdf-forms again: %d %s", code, body)
	}

	scoped := newPage(t, console.New(f.h, console.Options{Run: "r0000000000000000000a", SkillFolders: folders}), console.GuardOptions{})
	_, sc, scsrf := scoped.login()
	w := scoped.send(request{method: http.MethodPost, target: "/api/import", body: map[string][]string{"skills": {"notes"}}, cookie: sc, csrf: scsrf, origin: origin})
	if w.Code != http.StatusForbidden || count() != 1 {
		t.Errorf("an import on a page about one run: %d %s, %d skills", w.Code, w.Body, count())
	}
}
