package cli

import (
	"fmt"

	"github.com/capabilities-sh/capabilities/engine/stack"
	"github.com/spf13/cobra"
)

func newStackInitCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "init <repo>",
		Short: "Link the stack repository (any git remote: a path, file://, ssh, https)",
		Long: `Clone the stack repository into $CAPABILITIES_HOME/stack. An empty repository
is fine: the first stack push makes its first commit. Git runs as the git
binary, with your credential helpers and ssh keys.`,
		Example: `  capabilities stack init git@github.com:me/my-stack.git
  capabilities stack init https://github.com/me/my-stack.git
  capabilities stack init ~/stack.git`,
		Args: exactArgs(1, "one git repository (a path, file://, ssh or https URL)"),
		RunE: func(c *cobra.Command, args []string) error {
			dir, err := stack.Dir()
			if err != nil {
				return err
			}
			already, err := stack.Init(c.Context(), dir, args[0])
			if err != nil {
				return err
			}
			r, err := stack.Open(dir)
			if err != nil {
				return err
			}
			remote, err := r.Remote(c.Context())
			if err != nil {
				return err
			}
			if already {
				fmt.Fprintf(e.stdout, "The stack is already linked to %s (in %s).\n", remote, dir)
				return nil
			}
			fmt.Fprintf(e.stdout, "Linked the stack %s (in %s).\n`capabilities stack pull` applies it to this machine; `capabilities stack push` sends this machine's hub to it.\n", remote, dir)
			return nil
		},
	}
}
