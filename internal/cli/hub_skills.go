package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/skill"
	"github.com/spf13/cobra"
)

func newSkillsCmd(e *env) *cobra.Command {
	c := &cobra.Command{
		Use:   "skills",
		Short: "Add, list and remove the hub's skills (SKILL.md folders)",
		Long: `A skill is a folder holding a SKILL.md (YAML front matter with name and description, then
instructions) and any files beside it. The hub keeps its skills in $CAPABILITIES_HOME/hub/skills/;
search lists them beside tools, describe("skill:<name>") reads one, and hub connect installs a
copy into each agent that reads skills (Claude Code, Codex). A skill's files are data: the hub
runs nothing in them and they change no policy.`,
		Args: subcommands,
		RunE: func(c *cobra.Command, args []string) error { return c.Help() },
	}
	c.AddCommand(newSkillsAddCmd(e), newSkillsListCmd(e), newSkillsRemoveCmd(e))
	return c
}

func skillStore(h *hub.Hub) (skill.Store, error) {
	st, ok := h.Skills()
	if !ok {
		return skill.Store{}, fmt.Errorf("this hub keeps no skills")
	}
	return st, nil
}

func newSkillsAddCmd(e *env) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "add <folder | git-URL@commit[//folder]>",
		Short: "Add a skill from a folder, or from a git repository pinned to a commit",
		Example: `  capabilities hub skills add ./pdf-forms
  capabilities hub skills add https://example.org/skills.git@3f2a9c1e//pdf-forms`,
		Args: exactArgs(1, "one folder or git-URL@commit"),
		RunE: e.withHub(func(c *cobra.Command, args []string, h *hub.Hub, _ hubStore) error {
			st, err := skillStore(h)
			if err != nil {
				return err
			}
			arg := args[0]
			var dir string
			var origin skill.Origin
			if fi, serr := os.Stat(arg); serr == nil && fi.IsDir() {
				if dir, err = filepath.Abs(arg); err == nil {
					dir, err = filepath.EvalSymlinks(dir)
				}
				if err != nil {
					return fmt.Errorf("adding the skill %s: %w", arg, err)
				}
				origin.Path = dir
			} else if url, commit, sub, ok := skill.ParseGit(arg); ok {
				d, full, cleanup, err := skill.FromGit(c.Context(), st.Dir, url, commit, sub)
				if err != nil {
					return err
				}
				defer cleanup()
				dir = d
				origin = skill.Origin{Git: url, Commit: full, Subdir: sub}
			} else if serr == nil {
				return usagef("%s is a file: pass the skill's folder (the one holding SKILL.md)", arg)
			} else if strings.Contains(arg, "://") || strings.HasSuffix(arg, ".git") || strings.HasPrefix(arg, "git@") {
				return usagef("%s: pin a git-hosted skill to a commit, URL@<commit> (e.g. %s@<40 hex digits>)", arg, arg)
			} else {
				return usagef("%s: no such folder, and not a git-URL@commit", arg)
			}
			s, err := skill.Read(dir)
			if err != nil {
				return err
			}
			if err := st.Add(s, origin); err != nil {
				return err
			}
			if asJSON {
				return e.printJSON(map[string]any{"added": s.Name, "files": s.Files, "origin": origin})
			}
			fmt.Fprintf(e.stdout, "Added skill %s (%s). `capabilities hub connect` installs it into your agents.\n", s.Name, plural(len(s.Files), "file"))
			return nil
		}),
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return c
}

func newSkillsListCmd(e *env) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "list",
		Short: "List the hub's skills",
		Args:  cobra.NoArgs,
		RunE: e.withHub(func(c *cobra.Command, args []string, h *hub.Hub, _ hubStore) error {
			st, err := skillStore(h)
			if err != nil {
				return err
			}
			all, err := st.List()
			if err != nil {
				return err
			}
			if asJSON {
				type item struct {
					Name        string       `json:"name"`
					Description string       `json:"description"`
					Files       []string     `json:"files"`
					Origin      skill.Origin `json:"origin"`
				}
				out := []item{}
				for _, s := range all {
					out = append(out, item{s.Name, s.Description, s.Files, s.Origin})
				}
				return e.printJSON(map[string]any{"skills": out})
			}
			if len(all) == 0 {
				fmt.Fprintln(e.stdout, "No skills yet: add one with `capabilities hub skills add <folder>`.")
				return nil
			}
			for _, s := range all {
				from := s.Origin.Path
				if s.Origin.Git != "" {
					from = s.Origin.Git + "@" + s.Origin.Commit
					if s.Origin.Subdir != "" {
						from += "//" + s.Origin.Subdir
					}
				}
				fmt.Fprintf(e.stdout, "%s\t%s\t%s\n    %s\n", s.Name, plural(len(s.Files), "file"), from, s.Description)
			}
			return nil
		}),
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the skills as JSON")
	return c
}

func newSkillsRemoveCmd(e *env) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "remove <name>",
		Short: "Remove a skill from the hub (hub disconnect takes its copies out of the agents)",
		Args:  exactArgs(1, "one skill name"),
		RunE: e.withHub(func(c *cobra.Command, args []string, h *hub.Hub, _ hubStore) error {
			st, err := skillStore(h)
			if err != nil {
				return err
			}
			if err := st.Remove(args[0]); err != nil {
				return err
			}
			if asJSON {
				return e.printJSON(map[string]any{"removed": args[0]})
			}
			fmt.Fprintf(e.stdout, "Removed skill %s.\n", args[0])
			return nil
		}),
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return c
}
