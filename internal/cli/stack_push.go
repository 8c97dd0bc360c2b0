package cli

import (
	"fmt"
	"os"
	"strings"

	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/stack"
	"github.com/spf13/cobra"
)

func newStackPushCmd(e *env) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "push",
		Short: "Commit this machine's hub to the stack and push it",
		Long: `Write the hub's sources (with the names of the secrets their connections need,
never a value), policy rules, profiles and skills into the stack, commit and push.
Every file is checked for every secret the hub holds, in any encoding: one
found refuses the push and nothing is committed. When the repository has
changes this machine has not pulled, run stack pull first.`,
		Args: exactArgs(0, "no arguments"),
		RunE: e.withHub(func(c *cobra.Command, args []string, h *hub.Hub, _ hubStore) error {
			ctx := c.Context()
			dir, err := stack.Dir()
			if err != nil {
				return err
			}
			r, err := stack.Open(dir)
			if err != nil {
				return err
			}
			st, err := stack.FromHub(ctx, h)
			if err != nil {
				return err
			}
			declined, err := r.Declined()
			if err != nil {
				return err
			}
			var kept []string
			if len(declined) > 0 {
				base, err := r.Base()
				if err != nil {
					return err
				}
				synced := stack.NewState()
				if base != "" {
					bf, err := r.Tree(ctx, base)
					if err != nil {
						return err
					}
					if synced, err = stack.Read(bf); err != nil {
						return fmt.Errorf("pushing the stack: the commit this machine last synced with: %w", err)
					}
				}
				kept, declined = stack.KeepDeclined(st, synced, declined)
			}
			secrets, err := stack.Secrets(ctx, h)
			if err != nil {
				return err
			}
			host, err := os.Hostname()
			if err != nil || host == "" {
				host = "this machine"
			}
			res, err := r.Push(ctx, st, secrets, "capabilities stack push from "+host)
			if err != nil {
				return err
			}
			if err := r.SetDeclined(declined); err != nil {
				return err
			}
			if !asJSON && len(kept) > 0 {
				fmt.Fprintf(e.stdout, "Kept in the stack as it is, declined here at a pull: %s.\n", strings.Join(kept, ", "))
			}
			if asJSON {
				return e.printJSON(map[string]any{"commit": res.Commit, "changed": res.Changed, "nothing": res.Nothing, "keptDeclined": kept})
			}
			if res.Nothing {
				fmt.Fprintln(e.stdout, "Nothing to push: the stack already holds this machine's hub.")
				return nil
			}
			fmt.Fprintf(e.stdout, "Pushed %s to the stack (%s).\n", plural(len(res.Changed), "changed file"), res.Commit[:12])
			for _, f := range res.Changed {
				fmt.Fprintf(e.stdout, "  %s\n", f)
			}
			return nil
		}),
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return c
}
