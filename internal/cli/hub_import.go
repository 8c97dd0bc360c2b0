package cli

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/capabilities-sh/capabilities/engine/harness"
	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/skill"
	"github.com/capabilities-sh/capabilities/engine/visible"
	"github.com/capabilities-sh/capabilities/store"
	"github.com/spf13/cobra"
)

// importFlags are the flags of `hub import`, shared with `hub init --import`.
type importFlags struct {
	from   []string
	dryRun bool
	yes    bool
	asJSON bool
}

func (f *importFlags) register(c *cobra.Command, withDryRun bool) {
	c.Flags().StringSliceVar(&f.from, "from", nil, "read only the harnesses `NAMES`, comma-separated, e.g. claude-code,codex (default: all: "+strings.Join(harness.Names(), ", ")+")")
	if withDryRun {
		c.Flags().BoolVar(&f.dryRun, "dry-run", false, "show what would be imported and change nothing")
	}
	c.Flags().BoolVarP(&f.yes, "yes", "y", false, "add every enabled server and accept its review without asking")
	_ = c.RegisterFlagCompletionFunc("from", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return harness.Names(), cobra.ShellCompDirectiveNoFileComp
	})
}

func newImportCmd(e *env) *cobra.Command {
	var f importFlags
	c := &cobra.Command{
		Use:   "import",
		Short: "Import the MCP servers your agents already have",
		Long: `Read the MCP servers of every agent harness config that exists (Claude Code,
Codex, Cursor, Claude Desktop, VS Code, Gemini CLI, Windsurf, Zed, Antigravity,
Hermes, pi; and the project files of the current directory) and add each one
as a source, with the same review as hub add. The same server found in several
harnesses is one source. Disabled entries and servers that already are sources
are listed, not added. An entry is a source's server when they have the same
command, arguments, working directory and environment (a remote one: the same
URL and headers), credentials aside: a credential is compared by its variable's
or header's name, not its value. A credential written in plain text in a config
is stored in the keychain as the source's default connection, never printed; the
harness files are not changed. The skills in the harnesses' skills folders (Claude Code, Codex)
are copied into the hub's (capabilities hub skills).

In a terminal, each server is started to list its tools, then one screen
shows everything import would add — each server's command and credential,
every tool with what its review proposes (read-only: allow; writes and
destructive: ask), and the skills — and Enter accepts it all; e adjusts
each server, tool and skill; q adds nothing. --yes accepts without asking.`,
		Example: `  capabilities hub import --dry-run
  capabilities hub import --from claude-code,codex --yes
  capabilities hub init --import --yes`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, args []string) error { return runImport(c.Context(), e, f) },
	}
	f.register(c, true)
	c.Flags().BoolVar(&f.asJSON, "json", false, "print the result as JSON (needs --dry-run or --yes)")
	return c
}

func runImport(ctx context.Context, e *env, f importFlags) error {
	if f.asJSON && !f.dryRun && !f.yes {
		return usagef("--json needs --dry-run or --yes: the JSON form does not prompt")
	}
	hs, err := pickHarnesses(f.from)
	if err != nil {
		return err
	}
	henv, err := harness.FromOS()
	if err != nil {
		return fmt.Errorf("importing: %w", err)
	}
	sc := harness.ScanFiles(henv, hs)
	var sources []model.Source
	h, _, err := e.openHub(e.startOptions())
	switch {
	case err == nil:
		defer h.Close()
		recs, err := h.Sources(ctx)
		if err != nil {
			return err
		}
		for _, r := range recs {
			sources = append(sources, r.Source)
		}
	case f.dryRun && errors.Is(err, store.ErrNoHub): // a dry run needs no hub, and makes none
	default:
		return err
	}
	props := harness.Propose(sc, sources)
	report := harness.NewReport(props, sc)
	var skillStore skill.Store
	if dir, err := hubDir(); err == nil {
		skillStore = skill.Store{Dir: filepath.Join(dir, "skills")}
	}
	found := findSkills(henv, hs, skillStore)
	if f.dryRun {
		if f.asJSON {
			return e.printJSON(struct {
				harness.Report
				Found []foundSkill `json:"skillsFound"`
			}{report, append([]foundSkill{}, found...)})
		}
		printImport(e, report)
		printFoundSkills(e, found, true)
		fmt.Fprintln(e.stdout, "Dry run: nothing changed.")
		return nil
	}
	if !f.asJSON {
		printImport(e, report)
		printFoundSkills(e, found, false)
	}
	var res importResult
	if !f.yes && !f.asJSON {
		res, err = importOnOneScreen(ctx, e, h, props, found, skillStore)
		if err != nil {
			return err
		}
	} else {
		res, err = importEach(ctx, e, h, props, f)
		if err != nil {
			return err
		}
		if err := importSkills(e, found, skillStore, f.asJSON); err != nil {
			return err
		}
	}
	added, failed, skipped := res.added, append([]map[string]string{}, res.failed...), append([]map[string]string{}, res.skipped...)
	if f.asJSON {
		if err := e.printJSON(map[string]any{"servers": report.Servers, "skills": report.Skills, "skillsFound": append([]foundSkill{}, found...), "unreadable": report.Unreadable, "added": append([]string{}, added...), "failed": failed, "skipped": skipped}); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(e.stdout, "Imported %d server(s)", len(added))
		if len(added) > 0 {
			fmt.Fprintf(e.stdout, ": %s", strings.Join(added, ", "))
		}
		fmt.Fprintln(e.stdout, ". The harness files were not changed.")
	}
	if len(failed) > 0 {
		err := fmt.Errorf("importing: %d server(s) could not be added", len(failed))
		if f.asJSON {
			return errSilent{err}
		}
		return err
	}
	return nil
}

// importEach adds without asking (--yes, --json) every server found: all
// started at once to list their tools, then each shown (unless --json) and
// added with its review accepted as proposed.
func importEach(ctx context.Context, e *env, h *hub.Hub, props []harness.Proposal, f importFlags) (importResult, error) {
	todo, res, err := startFound(ctx, e, h, props, true, f.asJSON)
	if err != nil {
		return res, err
	}
	var show func(*importing)
	if !f.asJSON {
		show = func(it *importing) {
			fmt.Fprintln(e.stdout)
			printProposal(e, it.prop)
			for _, n := range it.notes {
				fmt.Fprintf(e.stdout, "  note:  %s\n", n)
			}
			printReview(e, it.review) // accepted as proposed: what --yes consents to
		}
	}
	return res, addAll(ctx, e, h, todo, &res, f.asJSON, show)
}

// repoFiles lists the files of the current directory p was found in.
func repoFiles(p harness.Proposal) string {
	var paths []string
	for _, o := range p.Origins {
		if !slices.Contains(paths, o.Path) {
			paths = append(paths, o.Path)
		}
	}
	return strings.Join(paths, ", ")
}

// movedCredential says where p's plain-text credential went once ns was
// added, and where the agent still finds it.
func movedCredential(p harness.Proposal, ns string) string {
	held := "the harness file still holds it"
	if v := p.Server.FromSecret[p.Secrets[0]]; v != "" {
		held = fmt.Sprintf("filled in from $%s, as the agent does; the harness file refers to it", v)
	}
	return fmt.Sprintf("%s into the keychain as %s/%s (%s)", p.Secrets[0], ns, hub.DefaultConnection, held)
}

// pickHarnesses resolves --from (every harness when empty).
func pickHarnesses(names []string) ([]harness.Harness, error) {
	if len(names) == 0 {
		return harness.All(), nil
	}
	var out []harness.Harness
	for _, n := range names {
		h, ok := harness.Lookup(strings.TrimSpace(n))
		if !ok {
			return nil, usagef("--from %q: unknown harness; known: %s", n, strings.Join(harness.Names(), ", "))
		}
		out = append(out, h)
	}
	return out, nil
}

// printImport shows what import found, with no secret value.
func printImport(e *env, r harness.Report) {
	if len(r.Servers) == 0 {
		fmt.Fprintln(e.stdout, "No MCP servers found in the harness configs.")
	} else {
		fmt.Fprintf(e.stdout, "Found %d MCP server(s):\n", len(r.Servers))
	}
	for _, s := range r.Servers {
		what := s.URL
		if s.Kind == harness.KindStdio {
			what = model.QuoteCommand(append([]string{s.Command}, s.Args...)) // masked by NewReport
		}
		fmt.Fprintf(e.stdout, "  %-16s %-5s %s\n", s.Namespace, s.Kind, visible.Line(what))
		if s.Cwd != "" {
			fmt.Fprintf(e.stdout, "    in:      %s\n", visible.Line(s.Cwd))
		}
		var from []string
		for _, o := range s.Harnesses {
			from = append(from, o.Harness+" "+o.Path)
		}
		fmt.Fprintf(e.stdout, "    from:    %s\n", strings.Join(from, "; "))
		switch {
		case s.Existing:
			fmt.Fprintf(e.stdout, "    already a source of the hub (%s): not added again\n", s.Namespace)
		case s.Disabled:
			fmt.Fprintln(e.stdout, "    disabled in the harness: not added (add it later with `capabilities hub add`)")
		}
		secrets := strings.Join(s.Secrets, ", ")
		switch {
		case len(s.Secrets) == 0:
		case s.Existing || s.Disabled:
			fmt.Fprintf(e.stdout, "    secrets: %s in plain text: not moved (the server is not added)\n", secrets)
		case len(s.Secrets) > 1:
			fmt.Fprintf(e.stdout, "    secrets: %s in plain text: the hub keeps one per source, so the server is not added (add it with `capabilities hub add` and `capabilities hub auth`)\n", secrets)
		default:
			fmt.Fprintf(e.stdout, "    secrets: %s in plain text: moves into the keychain as the default connection\n", secrets)
		}
		if len(s.Filled) > 0 {
			fmt.Fprintf(e.stdout, "    filled:  %s (from this environment, as the agent does)\n", strings.Join(s.Filled, "; "))
		}
		for _, n := range s.Notes {
			fmt.Fprintf(e.stdout, "    note:    %s\n", n)
		}
	}
	if len(r.Unreadable) > 0 {
		fmt.Fprintln(e.stdout, "Unreadable (skipped; the other files were read):")
		for _, u := range r.Unreadable {
			fmt.Fprintf(e.stdout, "  %s: %s\n", u.Path, u.Error)
		}
	}
}
