package cli

import (
	"github.com/spf13/cobra"
)

// newStackCmd is `capabilities stack`: the person's capabilities in a git
// repository they own, carried to every machine (docs/stack.md).
func newStackCmd(e *env) *cobra.Command {
	c := &cobra.Command{
		Use:   "stack",
		Short: "Carry your capabilities to every machine through a git repository you own",
		Long: `The stack is a git repository you own holding your sources (with the names of
the secrets they need, never a value), policy rules, profiles and skills.
stack init links it, stack push commits this machine's hub to it, and stack
pull applies it here after a review. See docs/stack.md.`,
		Args: subcommands,
		RunE: func(c *cobra.Command, args []string) error {
			return c.Help()
		},
	}
	c.AddCommand(
		newStackInitCmd(e),
		newStackPushCmd(e),
		newStackPullCmd(e),
		newStackInstallCmd(e),
		newStackUninstallCmd(e),
	)
	return c
}
