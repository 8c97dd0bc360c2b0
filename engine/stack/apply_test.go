package stack

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/secret"
	"github.com/capabilities-sh/capabilities/store"
	"github.com/google/go-cmp/cmp"
)

func newHub(t *testing.T) *hub.Hub {
	t.Helper()
	st, _, err := store.Init(filepath.Join(t.TempDir(), "hub"))
	if err != nil {
		t.Fatal(err)
	}
	h := hub.New(st, hub.Options{Secrets: secret.NewMemory(nil)})
	t.Cleanup(h.Close)
	return h
}

// gitSkillRepo makes a bare repository holding skills/notes/SKILL.md and
// returns it and the commit.
func gitSkillRepo(t *testing.T, ctx context.Context) (repo, commit string) {
	t.Helper()
	work := filepath.Join(t.TempDir(), "work")
	if err := os.MkdirAll(filepath.Join(work, "skills", "notes"), 0o700); err != nil {
		t.Fatal(err)
	}
	doc := "---\nname: notes\ndescription: Take notes.\n---\n# Notes\n"
	if err := os.WriteFile(filepath.Join(work, "skills", "notes", "SKILL.md"), []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	g := &Git{Dir: work}
	for _, args := range [][]string{{"init", "--quiet"}, {"add", "-A"}} {
		if _, err := g.run(ctx, args...); err != nil {
			t.Fatal(err)
		}
	}
	g.ensureIdentity(ctx)
	if _, err := g.run(ctx, "commit", "--quiet", "-m", "notes"); err != nil {
		t.Fatal(err)
	}
	out, err := g.run(ctx, "rev-parse", "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	repo = filepath.Join(t.TempDir(), "skills.git")
	if b, err := exec.Command("git", "clone", "--quiet", "--bare", work, repo).CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	return repo, strings.TrimSpace(out)
}

// TestApplySkills: a git skill pinned to a commit and a skill of files
// are added through the hub's skill store, and the hub exports them back
// as the stack held them; a removal takes each out.
func TestApplySkills(t *testing.T) {
	needGit(t)
	t.Setenv("HOME", t.TempDir())
	ctx := ctxFor(t)
	h := newHub(t)
	repo, commit := gitSkillRepo(t, ctx)
	gitSkill := Skill{Name: "notes", Git: &GitSkill{Repo: repo, Commit: commit, Path: "skills/notes"}}
	fileSkill := Skill{Name: "pdf-forms", Files: map[string][]byte{"SKILL.md": []byte(skillDoc), "ref/a.txt": []byte("a")}}
	for _, sk := range []Skill{gitSkill, fileSkill} {
		if err := ApplySkill(ctx, h, Change{Kind: KindSkill, Name: sk.Name, Op: OpAdd, Theirs: sk}); err != nil {
			t.Fatalf("adding %s: %v", sk.Name, err)
		}
	}
	got, err := FromHub(ctx, h)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Skill{"notes": gitSkill, "pdf-forms": fileSkill}
	if diff := cmp.Diff(want, got.Skills); diff != "" {
		t.Fatalf("skills exported after the pull (-want +got):\n%s", diff)
	}
	// A changed skill replaces the old one.
	changed := Skill{Name: "pdf-forms", Files: map[string][]byte{"SKILL.md": []byte(skillDoc)}}
	if err := ApplySkill(ctx, h, Change{Kind: KindSkill, Name: "pdf-forms", Op: OpChange, Mine: fileSkill, Theirs: changed}); err != nil {
		t.Fatal(err)
	}
	// A skill whose SKILL.md names another is refused, the old one kept.
	other := Skill{Name: "pdf-forms", Files: map[string][]byte{"SKILL.md": []byte(strings.Replace(skillDoc, "name: pdf-forms", "name: other", 1))}}
	if err := ApplySkill(ctx, h, Change{Kind: KindSkill, Name: "pdf-forms", Op: OpChange, Mine: changed, Theirs: other}); err == nil || !strings.Contains(err.Error(), `its SKILL.md names it "other"`) {
		t.Fatalf("a misnamed skill: %v", err)
	}
	for _, name := range []string{"notes", "pdf-forms"} {
		if err := ApplySkill(ctx, h, Change{Kind: KindSkill, Name: name, Op: OpRemove}); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := FromHub(ctx, h); err != nil || len(got.Skills) != 0 {
		t.Fatalf("skills after removing them: %v, %v", got.Skills, err)
	}
}
