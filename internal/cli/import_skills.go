package cli

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/capabilities-sh/capabilities/engine/harness"
	"github.com/capabilities-sh/capabilities/engine/skill"
)

// foundSkill is a skill in a harness's skills folder, and what import
// does with it.
type foundSkill struct {
	Harness string `json:"harness"`
	Name    string `json:"name"`
	Path    string `json:"path"`
	// Status: import (dry run), imported, in-hub (the hub has the same
	// files), clash (the hub has another skill of that name), declined,
	// unreadable.
	Status string `json:"status"`
	Error  string `json:"error,omitempty"`
	skill  *skill.Skill
}

// findSkills reads the skills in the skills folders of hs and says what
// import would do with each, given the hub's skills in st.
func findSkills(env harness.Env, hs []harness.Harness, st skill.Store) []foundSkill {
	var out []foundSkill
	seen := map[string]*skill.Skill{}
	for _, h := range hs {
		dir := h.SkillsDir(env)
		if dir == "" {
			continue
		}
		docs, _ := filepath.Glob(filepath.Join(dir, "*", "SKILL.md"))
		sort.Strings(docs)
		for _, doc := range docs {
			f := foundSkill{Harness: h.Name, Path: filepath.Dir(doc), Name: filepath.Base(filepath.Dir(doc))}
			s, err := skill.Read(f.Path)
			if err != nil {
				f.Status, f.Error = "unreadable", err.Error()
				out = append(out, f)
				continue
			}
			f.Name, f.skill = s.Name, s
			have, err := st.Get(s.Name)
			switch {
			case err == nil && sameFiles(have.Skill, s):
				f.Status = "in-hub"
			case err == nil:
				f.Status, f.Error = "clash", fmt.Sprintf("the hub has another skill named %s (from %s): not imported", s.Name, origin(have.Origin))
			case !errors.Is(err, skill.ErrNotFound):
				f.Status, f.Error = "unreadable", err.Error()
			case seen[s.Name] != nil && sameFiles(seen[s.Name], s):
				f.Status = "in-hub" // the same skill in a second harness
			case seen[s.Name] != nil:
				f.Status, f.Error = "clash", fmt.Sprintf("another skill named %s is imported from %s", s.Name, seen[s.Name].Dir)
			default:
				f.Status = "import"
				seen[s.Name] = s
			}
			out = append(out, f)
		}
	}
	return out
}

func origin(o skill.Origin) string {
	if o.Git != "" {
		return o.Git + "@" + o.Commit
	}
	return o.Path
}

// sameFiles is true when a and b hold the same files with the same bytes.
func sameFiles(a, b *skill.Skill) bool {
	if len(a.Files) != len(b.Files) {
		return false
	}
	for i, f := range a.Files {
		if b.Files[i] != f {
			return false
		}
		x, err1 := os.ReadFile(filepath.Join(a.Dir, filepath.FromSlash(f)))
		y, err2 := os.ReadFile(filepath.Join(b.Dir, filepath.FromSlash(f)))
		if err1 != nil || err2 != nil || !bytes.Equal(x, y) {
			return false
		}
	}
	return true
}

// importSkills copies the skills found with status "import" into the
// hub (asking first unless yes), and sets each one's status.
func importSkills(e *env, found []foundSkill, st skill.Store, yes, quiet bool) error {
	for i := range found {
		f := &found[i]
		if f.Status != "import" {
			continue
		}
		if !yes {
			ok, err := confirm(e, fmt.Sprintf("Import the skill %s from %s? [y/N] ", f.Name, f.Path))
			if err != nil {
				return err
			}
			if !ok {
				f.Status = "declined"
				continue
			}
		}
		if err := st.Add(f.skill, skill.Origin{Path: f.Path}); err != nil {
			f.Status, f.Error = "unreadable", err.Error()
			if !quiet {
				fmt.Fprintf(e.stdout, "! skill %s not imported: %s\n", f.Name, err)
			}
			continue
		}
		f.Status = "imported"
		if !quiet {
			fmt.Fprintf(e.stdout, "Imported the skill %s from %s.\n", f.Name, f.Path)
		}
	}
	return nil
}

// printFoundSkills lists the skills found and what import does with them.
func printFoundSkills(e *env, found []foundSkill, dryRun bool) {
	if len(found) == 0 {
		return
	}
	fmt.Fprintln(e.stdout, "Skills:")
	for _, f := range found {
		what := map[string]string{
			"import":     "imported into the hub (hub connect installs it in the other agents)",
			"in-hub":     "already in the hub",
			"clash":      f.Error,
			"unreadable": "not a skill the hub can import: " + f.Error,
		}[f.Status]
		if f.Status == "import" && dryRun {
			what = "would be imported into the hub"
		}
		fmt.Fprintf(e.stdout, "  %s (%s %s): %s\n", f.Name, f.Harness, f.Path, what)
	}
}
