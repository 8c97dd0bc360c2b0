package cli

import (
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/run"
	"github.com/capabilities-sh/capabilities/store"

	"github.com/spf13/cobra"
)

// runStatuses are the statuses --status accepts: the envelope's words, which
// run records use too.
var runStatuses = []string{"running", "awaiting_approval", "awaiting_connection", "completed", "failed", "cancelled", "expired"}

func newRunsCmd(e *env) *cobra.Command {
	var (
		status string
		asJSON bool
	)
	c := &cobra.Command{
		Use:   "runs [--status STATUS]",
		Short: "List runs, newest first",
		Long: "List runs (kept 7 days): id, status, attempts, when started. --status filters (" + strings.Join(runStatuses, ", ") +
			"). The statuses are those of execute's envelope: a paused run is awaiting_approval (a call waits for a person's" +
			" decision: `capabilities hub approve <runId>`) or awaiting_connection (a call waits for a credential: `capabilities hub auth`).",
		Args: func(c *cobra.Command, args []string) error {
			if err := exactArgs(0, "no arguments (use `runs show <id>` for one run)")(c, args); err != nil {
				return err
			}
			switch {
			case status == "" || slices.Contains(runStatuses, status):
				return nil
			case status == "awaiting_input":
				return usagef("--status awaiting_input is now awaiting_approval (a call waits for a decision) or awaiting_connection (for a credential)")
			}
			return usagef("--status %q is not a status: use one of %s", status, strings.Join(runStatuses, ", "))
		},
		RunE: e.withHub(func(c *cobra.Command, args []string, h *hub.Hub, _ *store.File) error {
			eng, err := h.Runs()
			if err != nil {
				return err
			}
			list, err := eng.List(c.Context(), status)
			if err != nil {
				return err
			}
			if asJSON {
				type row struct {
					ID        string `json:"id"`
					Status    string `json:"status"`
					Attempts  int    `json:"attempts"`
					CreatedAt string `json:"createdAt"`
					UpdatedAt string `json:"updatedAt"`
				}
				rows := []row{}
				for _, r := range list {
					rows = append(rows, row{r.ID, string(r.Status), r.Attempts, r.CreatedAt.Format("2006-01-02T15:04:05Z07:00"), r.UpdatedAt.Format("2006-01-02T15:04:05Z07:00")})
				}
				return e.printJSON(map[string]any{"runs": rows})
			}
			if len(list) == 0 {
				fmt.Fprintln(e.stdout, "No runs.")
				return nil
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "RUN\tSTATUS\tATTEMPTS\tSTARTED")
			for _, r := range list {
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", r.ID, r.Status, r.Attempts, ago(r.CreatedAt))
			}
			return tw.Flush()
		}),
	}
	c.Flags().StringVar(&status, "status", "", "only runs with this `STATUS`: "+strings.Join(runStatuses, ", "))
	c.Flags().BoolVar(&asJSON, "json", false, "print the runs as JSON")
	_ = c.RegisterFlagCompletionFunc("status", complete(fixed(runStatuses...)))
	c.AddCommand(newRunsShowCmd(e))
	return c
}

func newRunsShowCmd(e *env) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:               "show <runId>",
		Short:             "Show one run: status, result, error, pending, calls, notices",
		Args:              exactArgs(1, "one run id"),
		ValidArgsFunction: complete(byPosition(runIDs(anyRun))),
		RunE: e.withHub(func(c *cobra.Command, args []string, h *hub.Hub, _ *store.File) error {
			eng, err := h.Runs()
			if err != nil {
				return err
			}
			r, err := eng.Get(c.Context(), args[0])
			if err != nil {
				return err
			}
			env, err := eng.Envelope(c.Context(), args[0])
			if err != nil {
				return err
			}
			journal, err := eng.Journal(c.Context(), args[0])
			if err != nil {
				return err
			}
			// The run may have been made in another process: scrub the
			// secrets of the connections its calls went through.
			sc := h.RunScrubber(c.Context(), journal)
			if asJSON {
				return e.scrubbedOut(sc, true, func() error {
					return e.printJSON(map[string]any{"run": run.ScrubRun(sc, r), "envelope": env.Scrubbed(sc), "journal": run.ScrubJournal(sc, journal)})
				})
			}
			return e.scrubbedOut(sc, false, func() error {
				fmt.Fprintf(e.stdout, "created %s, %d attempt(s)\n", r.CreatedAt.Local().Format("2006-01-02 15:04:05"), r.Attempts)
				err := e.printEnvelope(env.Scrubbed(sc), false)
				if _, silent := err.(errSilent); silent {
					return nil // showing a failed run is not a failure
				}
				return err
			})
		}),
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the run record, envelope and journal as JSON")
	return c
}

func newCancelCmd(e *env) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:               "cancel <runId>",
		Short:             "Cancel a run that has not finished",
		Args:              exactArgs(1, "one run id"),
		ValidArgsFunction: complete(byPosition(runIDs(unfinishedRun))),
		RunE: e.withHub(func(c *cobra.Command, args []string, h *hub.Hub, _ *store.File) error {
			eng, err := h.Runs()
			if err != nil {
				return err
			}
			env, err := eng.Cancel(c.Context(), args[0])
			if err != nil {
				return err
			}
			if asJSON {
				return e.printJSON(env)
			}
			fmt.Fprintf(e.stdout, "Cancelled %s.\n", env.RunID)
			return nil
		}),
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the envelope as JSON")
	return c
}
