package cli

import (
	"fmt"
	"text/tabwriter"

	"github.com/capabilities-sh/capabilities/engine/hub"

	"github.com/capabilities-sh/capabilities/engine/policy"
	"github.com/spf13/cobra"
)

func newPolicyCmd(e *env) *cobra.Command {
	c := &cobra.Command{
		Use:   "policy",
		Short: "List and change the rules that decide each call (allow, ask, deny)",
		Long: `Rules attach to a source (namespace) or a tool (address), optionally narrowed to one
connection. Any matching deny wins; a new or changed tool asks; otherwise the most
specific rule decides (tool+connection, tool, source+connection, source); with no rule a
read-only tool runs and anything else asks. A rule on a tool is pinned to the tool's
current contract and stops applying when the tool changes upstream.`,
		Args: subcommands,
		RunE: func(c *cobra.Command, args []string) error { return c.Help() },
	}
	c.AddCommand(newPolicyListCmd(e), newPolicySetCmd(e), newPolicyRemoveCmd(e))
	return c
}

func newPolicyListCmd(e *env) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "list",
		Short: "List the rules",
		Args:  exactArgs(0, "no arguments"),
		RunE: e.withHub(func(c *cobra.Command, args []string, h *hub.Hub, _ hubStore) error {
			p, err := h.Policy(c.Context())
			if err != nil {
				return err
			}
			if asJSON {
				rules := p.Rules
				if rules == nil {
					rules = []policy.Rule{}
				}
				return e.printJSON(map[string]any{"rules": rules, "reviewed": len(p.Reviewed)})
			}
			if len(p.Rules) == 0 {
				fmt.Fprintf(e.stdout, "No rules: read-only tools run, everything else asks. %d tools reviewed.\n", len(p.Reviewed))
				return nil
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "TARGET\tCONNECTION\tACTION\tPINNED\tBY\tSINCE")
			for _, r := range p.Rules {
				conn, pinned := "any", "-"
				if r.Connection != "" {
					conn = r.Connection
				}
				if r.Contract != "" {
					pinned = r.Contract[:12]
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Target, conn, r.Action, pinned, r.Channel, r.CreatedAt.Local().Format("2006-01-02 15:04"))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "%d tools reviewed.\n", len(p.Reviewed))
			return nil
		}),
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the rules as JSON")
	return c
}

func newPolicySetCmd(e *env) *cobra.Command {
	var (
		conn   string
		asJSON bool
	)
	c := &cobra.Command{
		Use:   "set <address|namespace> allow|ask|deny",
		Short: "Add or replace a rule",
		Example: `  capabilities hub policy set memory.deleteEntities deny
  capabilities hub policy set github allow --connection work`,
		Args:              exactArgs(2, "a target (address or namespace) and an action (allow, ask or deny)"),
		ValidArgsFunction: complete(byPosition(targets, fixed("allow", "ask", "deny"))),
		RunE: func(c *cobra.Command, args []string) error {
			action, err := policy.ParseAction(args[1])
			if err != nil {
				return usageError{err}
			}
			h, _, err := e.openHub()
			if err != nil {
				return err
			}
			defer h.Close()
			r, err := h.SetRule(c.Context(), args[0], action, conn, "cli")
			if err != nil {
				return err
			}
			// A typo in --connection would make a deny block nothing.
			if note, err := h.UnknownConnection(c.Context(), args[0], conn); err == nil && note != "" {
				fmt.Fprintf(e.stderr, "capabilities: note: %s\n", note)
			}
			if asJSON {
				return e.printJSON(r)
			}
			fmt.Fprintf(e.stdout, "%s: %s", r.Target, r.Action)
			if r.Connection != "" {
				fmt.Fprintf(e.stdout, " (connection %s)", r.Connection)
			}
			if r.Contract != "" {
				fmt.Fprintf(e.stdout, ", pinned to contract %s", r.Contract[:12])
			}
			fmt.Fprintln(e.stdout)
			return nil
		},
	}
	c.Flags().StringVar(&conn, "connection", "", "narrow the rule to the connection `NAME`")
	_ = c.RegisterFlagCompletionFunc("connection", complete(connectionsOf))
	c.Flags().BoolVar(&asJSON, "json", false, "print the rule as JSON")
	return c
}

func newPolicyRemoveCmd(e *env) *cobra.Command {
	var conn string
	c := &cobra.Command{
		Use:               "remove <address|namespace>",
		Short:             "Remove a rule",
		Args:              exactArgs(1, "a target (address or namespace)"),
		ValidArgsFunction: complete(byPosition(ruleTargets)),
		RunE: e.withHub(func(c *cobra.Command, args []string, h *hub.Hub, _ hubStore) error {
			if err := h.RemoveRule(c.Context(), args[0], conn); err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "Removed the rule for %s.\n", args[0])
			return nil
		}),
	}
	c.Flags().StringVar(&conn, "connection", "", "the connection `NAME` the rule is narrowed to")
	_ = c.RegisterFlagCompletionFunc("connection", complete(connectionsOf))
	return c
}
