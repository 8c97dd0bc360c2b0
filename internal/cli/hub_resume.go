package cli

import (
	"fmt"

	"github.com/capabilities-sh/capabilities/engine/hub"

	"github.com/spf13/cobra"
)

func newResumeCmd(e *env) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "resume",
		Short: "Resume the hub after `capabilities hub pause`: policy decides again",
		Long: `Resume the hub: the pause ends and each call is decided by policy again (removes the file
paused in the hub's folder). A run that waits only because of the pause goes on here: each call
that asked only for the pause is decided again, so it runs when policy allows it and asks for
its own reason when not.`,
		Args: exactArgs(0, "no arguments"),
		RunE: e.withHub(func(c *cobra.Command, args []string, h *hub.Hub, _ hubStore) error {
			if err := h.SetPaused(false); err != nil {
				return err
			}
			resumed, err := h.ContinuePaused(c.Context())
			if err != nil {
				return err
			}
			if asJSON {
				return e.printJSON(map[string]any{"paused": false, "resumed": resumed})
			}
			fmt.Fprintln(e.stdout, "The hub is running: policy decides each call again.")
			for _, r := range resumed {
				fmt.Fprintf(e.stdout, "  run %s, which waited only for the pause: %s\n", r.RunID, r.Status)
			}
			return nil
		}),
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return c
}
