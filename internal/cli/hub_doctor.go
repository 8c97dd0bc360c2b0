package cli

import (
	"fmt"
	"strings"

	"github.com/capabilities-sh/capabilities/engine/hub"

	"github.com/spf13/cobra"
)

func newDoctorCmd(e *env) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "doctor",
		Short: "Check the store and every source",
		Long:  "Check the store (schema version, permissions) and connect to every source, showing its health and the tail of its stderr.",
		Args:  exactArgs(0, "no arguments"),
		RunE: e.withHub(func(c *cobra.Command, args []string, h *hub.Hub, st hubStore) error {
			r, err := h.Doctor(c.Context())
			if err != nil {
				return err
			}
			si := describeStore(c.Context(), st)
			bad := len(r.Permissions)
			if si != nil && !si.Reachable {
				bad++
			}
			for _, s := range r.Sources {
				if s.Health != "ok" {
					bad++
				}
			}
			// Sealed secrets that cannot be opened (no key-encryption key,
			// a wrong or unreadable one) are a problem, not a status.
			var sealedErr error
			if u, ok := h.Secrets().(interface{ Err() error }); ok {
				if sealedErr = u.Err(); sealedErr != nil {
					bad++
				}
			}
			if asJSON {
				var v any = r
				if si != nil {
					v = struct {
						*hub.Report
						Store *storeInfo `json:"store"`
					}{r, si}
				}
				if err := e.printJSON(v); err != nil {
					return err
				}
			} else {
				if si != nil {
					fmt.Fprintf(e.stdout, "store  %s\n  this machine's hub folder %s\n", si, st.Dir())
				} else {
					fmt.Fprintf(e.stdout, "store  %s\n  schema %d, hub %s\n", r.Dir, r.Schema, r.HubID)
				}
				if len(r.Permissions) == 0 {
					fmt.Fprintln(e.stdout, "  permissions ok (directories 700, files 600)")
				}
				for _, p := range r.Permissions {
					fmt.Fprintf(e.stdout, "  ! %s\n", p)
				}
				fmt.Fprintf(e.stdout, "secrets  %s\n", r.Secrets)
				if sealedErr != nil {
					fmt.Fprintln(e.stdout, "  ! no credential can be read or stored: set CAPABILITIES_KEK_FILE (or CAPABILITIES_KEK) to this hub's key-encryption key (docs/secrets-at-rest.md)")
				}
				if len(r.Sources) == 0 {
					fmt.Fprintln(e.stdout, "sources  none")
				}
				for _, s := range r.Sources {
					fmt.Fprintf(e.stdout, "%s  %s %s", s.Namespace, s.Kind, s.Health)
					if s.Health == "ok" {
						fmt.Fprintf(e.stdout, ", %d tools, protocol %s, %d ms\n", s.Tools, s.Protocol, s.Millis)
					} else {
						fmt.Fprintf(e.stdout, ": %s\n", s.Error)
					}
					if s.Stderr != "" {
						fmt.Fprintf(e.stdout, "  stderr:\n    %s\n", strings.ReplaceAll(s.Stderr, "\n", "\n    "))
					}
				}
			}
			if bad > 0 {
				return fmt.Errorf("doctor found %d problem(s)", bad)
			}
			return nil
		}),
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	return c
}
