package cli

import (
	"fmt"
	"slices"
	"strings"

	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/spf13/cobra"
)

func newProfilesCmd(e *env) *cobra.Command {
	c := &cobra.Command{
		Use:   "profiles",
		Short: "Add, list, show, edit and remove profiles (curated views served to agents)",
		Long: `A profile is a curated view of the hub: which namespaces, tools and skills an agent
served through it sees, and how: code mode (search, describe and execute see only the
profile's tools; a namespace outside it is not in execute's code) or direct mode (each
visible tool is its own MCP tool, named namespace__tool). A profile grants nothing and carries no
policy: every call through it is decided by the hub's one policy, asks the person the same
way, and is journaled as a run.

serve --stdio --profile <name> serves one; serve --http serves each at /mcp/<name> (/mcp is
default); hub connect --profile <name> writes that profile's entry into the agents' configs.`,
		Args: subcommands,
		RunE: func(c *cobra.Command, args []string) error { return c.Help() },
	}
	c.AddCommand(newProfilesAddCmd(e), newProfilesListCmd(e), newProfilesShowCmd(e), newProfilesEditCmd(e), newProfilesRemoveCmd(e))
	return c
}

// profileFlags are add's and edit's flags.
type profileFlags struct {
	mode            string
	namespaces      []string
	tools           []string
	addNS, removeNS []string
	addTool, rmTool []string
	skills          []string
	addSkill, rmSkl []string
	all             bool
	asJSON          bool
}

func newProfilesAddCmd(e *env) *cobra.Command {
	var f profileFlags
	c := &cobra.Command{
		Use:   "add <name> [--mode code|direct] [--namespace NS]... [--tool ADDRESS]... [--skill NAME]...",
		Short: "Add a profile",
		Long: `Add a profile. Its visible tools are every tool of each --namespace plus each --tool;
with neither, every tool of the hub. Its skills are each --skill; with none, every skill of the
hub. --mode direct serves each visible tool as its own MCP tool; code mode (the default) serves
search, describe and execute over the visible tools and skills.`,
		Example: `  capabilities hub profiles add issues --mode direct --namespace github --tool linear.createIssue
  capabilities hub profiles add docs --namespace github --skill release-notes`,
		Args: exactArgs(1, "one profile name"),
		RunE: e.withHub(func(c *cobra.Command, args []string, h *hub.Hub, _ hubStore) error {
			if err := hub.ValidProfileName(args[0]); err != nil {
				return usageError{fmt.Errorf("adding profile: %w", err)}
			}
			p := hub.Profile{Name: args[0], Mode: f.mode, Namespaces: f.namespaces, Tools: f.tools, Skills: f.skills}
			if err := h.PutProfile(c.Context(), p, true); err != nil {
				return err
			}
			return e.printProfile(c, h, args[0], f.asJSON, "Added")
		}),
	}
	c.Flags().StringVar(&f.mode, "mode", hub.ModeCode, "the `MODE`: code (search, describe, execute) or direct (one MCP tool per visible tool)")
	c.Flags().StringSliceVar(&f.namespaces, "namespace", nil, "show every tool of the `NAMESPACE` (repeatable)")
	c.Flags().StringSliceVar(&f.tools, "tool", nil, "show the tool at `ADDRESS` (namespace.tool; repeatable)")
	c.Flags().StringSliceVar(&f.skills, "skill", nil, "show the skill `NAME` (repeatable; none: every skill)")
	c.Flags().BoolVar(&f.asJSON, "json", false, "print the profile as JSON")
	_ = c.RegisterFlagCompletionFunc("tool", complete(addresses))
	return c
}

func newProfilesEditCmd(e *env) *cobra.Command {
	var f profileFlags
	c := &cobra.Command{
		Use:   "edit <name> [--mode code|direct] [--add-namespace NS] [--remove-namespace NS] [--add-tool A] [--remove-tool A] [--skill NAME]... [--add-skill NAME] [--remove-skill NAME] [--all]",
		Short: "Change a profile's mode, visible tools or skills",
		Example: `  capabilities hub profiles edit issues --add-tool github.listIssues --remove-namespace linear
  capabilities hub profiles edit default --mode direct
  capabilities hub profiles edit docs --add-skill pdf-forms --remove-skill release-notes`,
		Args: exactArgs(1, "one profile name"),
		RunE: e.withHub(func(c *cobra.Command, args []string, h *hub.Hub, _ hubStore) error {
			p, err := h.Profile(c.Context(), args[0])
			if err != nil {
				return fmt.Errorf("editing profile: %w", err)
			}
			if c.Flags().Changed("mode") {
				p.Mode = f.mode
			}
			if f.all {
				if len(f.addNS)+len(f.addTool) > 0 {
					return usagef("--all shows every tool; it does not go with --add-namespace or --add-tool")
				}
				p.Namespaces, p.Tools = nil, nil
			}
			for _, ns := range f.removeNS {
				if !slices.Contains(p.Namespaces, ns) {
					return usagef("--remove-namespace %s: profile %s does not list it (it lists %s)", ns, p.Name, listOrNone(p.Namespaces))
				}
			}
			for _, a := range f.rmTool {
				if !slices.Contains(p.Tools, a) {
					return usagef("--remove-tool %s: profile %s does not list it (it lists %s)", a, p.Name, listOrNone(p.Tools))
				}
			}
			p.Namespaces = slices.DeleteFunc(append(p.Namespaces, f.addNS...), func(s string) bool { return slices.Contains(f.removeNS, s) })
			p.Tools = slices.DeleteFunc(append(p.Tools, f.addTool...), func(s string) bool { return slices.Contains(f.rmTool, s) })
			if c.Flags().Changed("skill") {
				if len(f.addSkill)+len(f.rmSkl) > 0 {
					return usagef("--skill sets the profile's skills; it does not go with --add-skill or --remove-skill")
				}
				p.Skills = f.skills
			}
			for _, n := range f.rmSkl {
				if !slices.Contains(p.Skills, n) {
					return usagef("--remove-skill %s: profile %s does not list it (it lists %s)", n, p.Name, listOrNone(p.Skills))
				}
			}
			p.Skills = slices.DeleteFunc(append(p.Skills, f.addSkill...), func(s string) bool { return slices.Contains(f.rmSkl, s) })
			if err := h.PutProfile(c.Context(), *p, false); err != nil {
				return err
			}
			return e.printProfile(c, h, p.Name, f.asJSON, "Changed")
		}),
	}
	c.Flags().StringVar(&f.mode, "mode", hub.ModeCode, "the `MODE`: code or direct")
	c.Flags().StringSliceVar(&f.addNS, "add-namespace", nil, "show every tool of the `NAMESPACE` too")
	c.Flags().StringSliceVar(&f.removeNS, "remove-namespace", nil, "stop listing the `NAMESPACE`")
	c.Flags().StringSliceVar(&f.addTool, "add-tool", nil, "show the tool at `ADDRESS` too")
	c.Flags().StringSliceVar(&f.rmTool, "remove-tool", nil, "stop listing the tool at `ADDRESS`")
	c.Flags().StringSliceVar(&f.skills, "skill", nil, "show only the skill `NAME` (repeatable; replaces the profile's skills)")
	c.Flags().StringSliceVar(&f.addSkill, "add-skill", nil, "show the skill `NAME` too")
	c.Flags().StringSliceVar(&f.rmSkl, "remove-skill", nil, "stop listing the skill `NAME` (a profile that lists none shows every skill)")
	c.Flags().BoolVar(&f.all, "all", false, "show every tool of the hub (drop the namespace and tool lists)")
	c.Flags().BoolVar(&f.asJSON, "json", false, "print the profile as JSON")
	return c
}

func listOrNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

func newProfilesListCmd(e *env) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "list",
		Short: "List the profiles",
		Args:  cobra.NoArgs,
		RunE: e.withHub(func(c *cobra.Command, args []string, h *hub.Hub, _ hubStore) error {
			ps, err := h.Profiles(c.Context())
			if err != nil {
				return err
			}
			if asJSON {
				return e.printJSON(map[string]any{"profiles": ps})
			}
			for _, p := range ps {
				fmt.Fprintf(e.stdout, "%s\t%s\t%s\n", p.Name, p.Mode, viewText(p))
			}
			return nil
		}),
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the profiles as JSON")
	return c
}

func viewText(p hub.Profile) string {
	var parts []string
	if p.All() {
		parts = append(parts, "every tool")
	}
	if len(p.Namespaces) > 0 {
		parts = append(parts, "namespaces "+strings.Join(p.Namespaces, ", "))
	}
	if len(p.Tools) > 0 {
		parts = append(parts, "tools "+strings.Join(p.Tools, ", "))
	}
	if !p.AllSkills() { // none listed: every skill, said only when narrowed
		parts = append(parts, "skills "+strings.Join(p.Skills, ", "))
	}
	return strings.Join(parts, "; ")
}

func newProfilesShowCmd(e *env) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "show <name>",
		Short: "Show a profile and the tools it makes visible",
		Args:  exactArgs(1, "one profile name"),
		RunE: e.withHub(func(c *cobra.Command, args []string, h *hub.Hub, _ hubStore) error {
			return e.printProfile(c, h, args[0], asJSON, "")
		}),
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the profile and its visible tools as JSON")
	return c
}

// printProfile prints a profile and its visible tools, after a verb
// ("Added") or alone (show).
func (e *env) printProfile(c *cobra.Command, h *hub.Hub, name string, asJSON bool, verb string) error {
	p, err := h.Profile(c.Context(), name)
	if err != nil {
		return err
	}
	tools, err := h.VisibleTools(c.Context(), p)
	if err != nil {
		return err
	}
	addrs := []string{}
	for _, t := range tools {
		addrs = append(addrs, t.Address)
	}
	if asJSON {
		return e.printJSON(map[string]any{"profile": p, "visible": addrs})
	}
	if verb != "" {
		fmt.Fprintf(e.stdout, "%s profile %s.\n", verb, p.Name)
	}
	fmt.Fprintf(e.stdout, "profile %s: %s mode, %s (%d tools visible)\n", p.Name, p.Mode, viewText(*p), len(addrs))
	if p.Mode == hub.ModeDirect {
		for _, a := range addrs {
			fmt.Fprintf(e.stdout, "  %s\n", a)
		}
	}
	path := "/mcp/" + p.Name
	if p.Name == hub.DefaultProfile {
		path = "/mcp"
	}
	fmt.Fprintf(e.stdout, "Served by `capabilities hub serve --stdio --profile %s` and at %s of serve --http.\n", p.Name, path)
	return nil
}

func newProfilesRemoveCmd(e *env) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "remove <name>",
		Short: "Remove a profile (agents connected to it lose their entry's tools)",
		Args:  exactArgs(1, "one profile name"),
		RunE: e.withHub(func(c *cobra.Command, args []string, h *hub.Hub, _ hubStore) error {
			if err := h.RemoveProfile(c.Context(), args[0]); err != nil {
				return err
			}
			if asJSON {
				return e.printJSON(map[string]any{"removed": args[0]})
			}
			fmt.Fprintf(e.stdout, "Removed profile %s.\n", args[0])
			return nil
		}),
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return c
}
