package cli

import (
	"fmt"

	"github.com/capabilities-sh/capabilities/store"
	"github.com/spf13/cobra"
)

func newInitCmd(e *env) *cobra.Command {
	var (
		asJSON bool
		doImp  bool
		imp    importFlags
	)
	c := &cobra.Command{
		Use:   "init",
		Short: "Create the hub (idempotent)",
		Long:  "Create the hub at $CAPABILITIES_HOME/hub (default ~/.capabilities/hub): directories mode 700, files mode 600. Running it again keeps what is there. With --import, then import the MCP servers the agents already have (see capabilities hub import --help).",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, args []string) error {
			if doImp {
				if asJSON && !imp.yes {
					return usagef("--json needs --yes: the JSON form does not prompt")
				}
			} else if imp.yes || len(imp.from) > 0 {
				return usagef("--yes and --from go with --import")
			}
			dir, err := hubDir()
			if err != nil {
				return err
			}
			f, created, err := store.Init(dir)
			if err != nil {
				return fmt.Errorf("initializing the hub: %w", err)
			}
			if doImp {
				if !asJSON {
					if created {
						fmt.Fprintf(e.stdout, "Created the hub at %s\n", dir)
					} else {
						fmt.Fprintf(e.stdout, "The hub at %s already exists.\n", dir)
					}
				}
				imp.asJSON = asJSON
				return runImport(c.Context(), e, imp)
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
	c.Flags().BoolVar(&doImp, "import", false, "then import the MCP servers of the agent harnesses (like capabilities hub import)")
	imp.register(c, false)
	return c
}
