package cli

import (
	"fmt"

	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/store"

	"github.com/spf13/cobra"
)

func newRemoveCmd(e *env) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:               "remove <namespace>",
		Short:             "Remove a source and its cached tools",
		Args:              exactArgs(1, "one namespace"),
		ValidArgsFunction: complete(byPosition(namespaces)),
		RunE: e.withHub(func(c *cobra.Command, args []string, h *hub.Hub, _ *store.File) error {
			if err := h.Remove(c.Context(), args[0]); err != nil {
				return err
			}
			if asJSON {
				return e.printJSON(map[string]any{"removed": args[0]})
			}
			fmt.Fprintf(e.stdout, "Removed %s.\n", args[0])
			return nil
		}),
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return c
}
