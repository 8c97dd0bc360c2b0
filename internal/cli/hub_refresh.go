package cli

import (
	"fmt"
	"strings"

	"github.com/capabilities-sh/capabilities/engine/hub"

	"github.com/spf13/cobra"
)

func newRefreshCmd(e *env) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:               "refresh [namespace]",
		Short:             "Re-read tool lists and show what was added, removed and changed",
		Long:              "Re-read the tool list of one source, or of every source, store it, and print the tools added, removed and changed (a tool changed when its contract digest differs: name, description, schemas or annotations).",
		ValidArgsFunction: complete(byPosition(namespaces)),
		Args: func(c *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usagef("refresh expects at most one namespace (got %d)", len(args))
			}
			return nil
		},
		RunE: e.withHub(func(c *cobra.Command, args []string, h *hub.Hub, _ hubStore) error {
			ns := ""
			if len(args) == 1 {
				ns = args[0]
			}
			changes, err := h.Refresh(c.Context(), ns)
			if err != nil {
				return err
			}
			failed := 0
			for _, ch := range changes {
				if ch.Error != "" {
					failed++
				}
			}
			if asJSON {
				if err := e.printJSON(map[string]any{"changes": changes}); err != nil {
					return err
				}
			} else {
				var toReview []string
				for _, ch := range changes {
					if ch.Error != "" {
						fmt.Fprintf(e.stdout, "%s: refresh failed, keeping the cached tools: %s\n", ch.Namespace, ch.Error)
						continue
					}
					if len(ch.Added)+len(ch.Removed)+len(ch.Changed) == 0 {
						fmt.Fprintf(e.stdout, "%s: %d tools, no changes\n", ch.Namespace, ch.Tools)
						continue
					}
					fmt.Fprintf(e.stdout, "%s: %d tools\n", ch.Namespace, ch.Tools)
					if len(ch.Added)+len(ch.Changed) > 0 {
						toReview = append(toReview, ch.Namespace)
					}
					for _, group := range []struct {
						sign  string
						addrs []string
					}{{"+ added  ", ch.Added}, {"- removed", ch.Removed}, {"~ changed", ch.Changed}} {
						if len(group.addrs) > 0 {
							fmt.Fprintf(e.stdout, "  %s %s\n", group.sign, strings.Join(group.addrs, ", "))
						}
					}
				}
				switch len(toReview) {
				case 0:
				case 1:
					fmt.Fprintf(e.stdout, "New and changed tools ask a person until reviewed: capabilities hub review %s\n", toReview[0])
				default:
					fmt.Fprintln(e.stdout, "New and changed tools ask a person until reviewed: capabilities hub review")
				}
			}
			if failed > 0 {
				return fmt.Errorf("refreshing: %d of %d sources could not be reached", failed, len(changes))
			}
			return nil
		}),
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the changes as JSON")
	return c
}
