package cli

import (
	"fmt"
	"slices"
	"strings"

	"github.com/capabilities-sh/capabilities/engine/hub"

	"github.com/spf13/cobra"
)

func newRemoveCmd(e *env) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:               "remove <namespace>",
		Short:             "Remove a source: its cached tools, connections, credentials and policy rules",
		Long:              "Remove a source and everything about it: its cached tools, its connections and their credentials, and the policy's rules, reviews and command consent for it, and stop its upstream. A source added later under the same namespace starts unreviewed.",
		Args:              exactArgs(1, "one namespace"),
		ValidArgsFunction: complete(byPosition(namespaces)),
		RunE: e.withHub(func(c *cobra.Command, args []string, h *hub.Hub, _ hubStore) error {
			if err := h.Remove(c.Context(), args[0]); err != nil {
				return err
			}
			if asJSON {
				return e.printJSON(map[string]any{"removed": args[0]})
			}
			fmt.Fprintf(e.stdout, "Removed %s.\n", args[0])
			// A profile that lists the namespace shows nothing of it now,
			// and would show a source added again under that name.
			if ps, err := h.Profiles(c.Context()); err == nil {
				for _, p := range ps {
					listed := slices.Contains(p.Namespaces, args[0])
					for _, t := range p.Tools {
						listed = listed || strings.HasPrefix(t, args[0]+".")
					}
					if listed {
						fmt.Fprintf(e.stderr, "capabilities: note: profile %s still lists %s: it shows nothing of it now, and would show a source added again under that name (`capabilities hub profiles edit %s --remove-namespace %s` or --remove-tool)\n", p.Name, args[0], p.Name, args[0])
					}
				}
			}
			return nil
		}),
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return c
}
