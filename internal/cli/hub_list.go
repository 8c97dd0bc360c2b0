package cli

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/visible"

	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/spf13/cobra"
)

type listedTool struct {
	Address  string       `json:"address"`
	Name     string       `json:"name"`
	Effect   model.Effect `json:"effect"`
	Contract string       `json:"contract"`
}

type listedSource struct {
	Namespace   string     `json:"namespace"`
	Kind        string     `json:"kind"`
	Command     string     `json:"command,omitempty"`
	URL         string     `json:"url,omitempty"`
	CallTimeout int64      `json:"callTimeoutMs,omitempty"` // the source's own call deadline
	Protocol    string     `json:"protocol,omitempty"`
	Health      string     `json:"health"`
	LastError   string     `json:"lastError,omitempty"`
	RefreshedAt *time.Time `json:"refreshedAt,omitempty"`
	// PerProcess: on a database store, a stdio source is started by each
	// hub process that calls it, on that process's machine.
	PerProcess bool         `json:"perProcess,omitempty"`
	ToolCount  int          `json:"toolCount"`
	Tools      []listedTool `json:"tools"`
}

func newListCmd(e *env) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "list",
		Short: "List sources with their kind, tools and health",
		Long: `List the hub's sources from the cached manifests (it never waits on an upstream): kind,
namespace, tool count, health of the last contact and when the tools were last listed.

On a database store (--store, CAPABILITIES_STORE) every hub process runs its own upstream
clients: a stdio source starts on each process that calls it, on that process's machine
(its command must be installed there), and a source that fails on one process is not
marked failed for the others; HEALTH is that of the last listing that worked, and
` + "`capabilities hub doctor`" + ` checks each source from this machine.`,
		Args: exactArgs(0, "no arguments"),
		RunE: e.withHub(func(c *cobra.Command, args []string, h *hub.Hub, _ hubStore) error {
			perProcess := h.UpstreamsPerProcess()
			recs, err := h.Sources(c.Context())
			if err != nil {
				return err
			}
			out := make([]listedSource, 0, len(recs))
			for _, r := range recs {
				ls := listedSource{Namespace: r.Source.Namespace, Kind: r.Source.Kind, Command: r.Source.ShownCommandLine(), URL: r.Source.ShownURL(), CallTimeout: r.Source.CallTimeoutMs, Health: "unknown", Tools: []listedTool{}}
				ls.PerProcess = perProcess && r.Source.Kind == model.KindStdio
				if m := r.Manifest; m != nil {
					ls.Protocol, ls.Health, ls.LastError, ls.ToolCount = m.Protocol, m.Health, m.LastError, len(m.Tools)
					if !m.FetchedAt.IsZero() {
						t := m.FetchedAt
						ls.RefreshedAt = &t
					}
					for _, t := range m.Tools {
						ls.Tools = append(ls.Tools, listedTool{Address: t.Address, Name: t.Name, Effect: t.Effect(), Contract: t.Contract})
					}
				}
				out = append(out, ls)
			}
			bad, err := h.Unreadable(c.Context())
			if err != nil {
				return err
			}
			for _, b := range bad {
				out = append(out, listedSource{Namespace: b.Namespace, Health: "unreadable", LastError: b.Err.Error(), Tools: []listedTool{}})
			}
			if asJSON {
				return e.printJSON(map[string]any{"sources": out})
			}
			for _, b := range bad {
				fmt.Fprintf(e.stderr, "capabilities: %s is left out of the hub: %v (%s)\n", b.Namespace, b.Err, b.Fix())
			}
			if len(out) == 0 {
				fmt.Fprintln(e.stdout, "No sources yet. Add one with: capabilities hub add -- <command> [args…]")
				return nil
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAMESPACE\tKIND\tTOOLS\tHEALTH\tREFRESHED\tSOURCE")
			for _, s := range out {
				when := "never"
				if s.RefreshedAt != nil {
					when = ago(*s.RefreshedAt)
				}
				where := s.Command
				if s.Kind == model.KindHTTP || s.Kind == model.KindOpenAPI {
					where = s.URL
				}
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\n", s.Namespace, s.Kind, s.ToolCount, s.Health, when, visible.Line(where))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			for _, s := range out {
				if s.PerProcess {
					fmt.Fprintln(e.stdout, "\nThe hub is in a database: each hub process starts its own stdio sources when a call needs them, on its own machine (the command must be installed there); a source that fails on one process is not marked failed for the others. `capabilities hub doctor` checks them from this machine.")
					break
				}
			}
			return nil
		}),
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the sources as JSON, with their tools")
	return c
}

func ago(t time.Time) string {
	d := time.Since(t)
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d.Hours()))
	}
	return t.Local().Format("2006-01-02")
}
