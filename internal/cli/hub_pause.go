package cli

import (
	"fmt"

	"github.com/capabilities-sh/capabilities/engine/hub"

	"github.com/spf13/cobra"
)

func newPauseCmd(e *env) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "pause",
		Short: "Pause the hub: every call asks a person, nothing runs unseen",
		Long: `Pause the hub: until ` + "`capabilities hub resume`" + `, every call that policy would run asks a
person first (a tool allowed by a rule, read-only or allowed for the session asks too); a
denied call stays denied. The pause is the file paused in the hub's folder (mode 600), so
every process serving the hub sees it on its next call.`,
		Args: exactArgs(0, "no arguments"),
		RunE: e.withHub(func(c *cobra.Command, args []string, h *hub.Hub, _ hubStore) error {
			if err := h.SetPaused(true); err != nil {
				return err
			}
			if asJSON {
				return e.printJSON(map[string]any{"paused": true})
			}
			fmt.Fprintln(e.stdout, "The hub is paused: every call asks, nothing runs unseen. `capabilities hub resume` ends it.")
			return nil
		}),
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return c
}
