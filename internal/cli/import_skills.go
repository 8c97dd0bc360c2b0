package cli

import (
	"fmt"

	"github.com/capabilities-sh/capabilities/engine/harness"
	"github.com/capabilities-sh/capabilities/engine/skill"
)

// foundSkill is a skill in a harness's skills folder, and what import
// does with it (skill.Found's statuses: import on a dry run, imported,
// in-hub, clash, declined, unreadable).
type foundSkill = skill.Found

// findSkills reads the skills in the skills folders of hs and says what
// import would do with each, given the hub's skills in st.
func findSkills(env harness.Env, hs []harness.Harness, st skill.Store) []foundSkill {
	var folders []skill.Folder
	for _, h := range hs {
		folders = append(folders, skill.Folder{Harness: h.Name, Dir: h.SkillsDir(env)})
	}
	return skill.Find(folders, st)
}

// importSkills copies the skills found with status "import" into the
// hub (the person accepted them, or passed --yes), and sets each one's
// status.
func importSkills(e *env, found []foundSkill, st skill.Store, quiet bool) error {
	for i := range found {
		f := &found[i]
		if f.Status != "import" {
			continue
		}
		if err := st.Import(f); err != nil {
			if !quiet {
				fmt.Fprintf(e.stdout, "! skill %s not imported: %s\n", f.Name, f.Error)
			}
			continue
		}
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
