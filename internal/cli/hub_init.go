package cli

import (
	"fmt"

	"github.com/capabilities-sh/capabilities/store"
	"github.com/spf13/cobra"
)

func newInitCmd(e *env) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "init",
		Short: "Create the hub (idempotent)",
		Long:  "Create the hub at $CAPABILITIES_HOME/hub (default ~/.capabilities/hub): directories mode 700, files mode 600. Running it again keeps what is there.",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, args []string) error {
			dir, err := hubDir()
			if err != nil {
				return err
			}
			f, created, err := store.Init(dir)
			if err != nil {
				return fmt.Errorf("initializing the hub: %w", err)
			}
			if asJSON {
				return e.printJSON(map[string]any{"dir": dir, "created": created, "schema": f.Hub().Schema, "id": f.Hub().ID})
			}
			if created {
				fmt.Fprintf(e.stdout, "Created the hub at %s\nNext: capabilities hub add -- <command> [args…]   or   capabilities hub add <url>\n", dir)
			} else {
				fmt.Fprintf(e.stdout, "The hub at %s already exists; nothing changed.\n", dir)
			}
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return c
}
