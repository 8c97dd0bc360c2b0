package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/push"
	"github.com/capabilities-sh/capabilities/engine/visible"
	"github.com/spf13/cobra"
)

func newHubStatusCmd(e *env) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "status [url]",
		Short: "Show the hosted hub's state and its drift from this hub (what hub push would change)",
		Long: `Show the hosted hub you signed in to (` + "`capabilities hub login <url>`" + `; the URL is
needed only when signed in to several): its sources with their tools and health,
the tools waiting for review, the calls waiting for a decision and the recent runs;
then the drift from this hub: what ` + "`capabilities hub push`" + ` would change there.
The exit status is 0 when there is no drift, 1 when there is.`,
		Args: cobra.MaximumNArgs(1),
		RunE: e.withHub(func(c *cobra.Command, args []string, h *hub.Hub, _ hubStore) error {
			return runHubStatus(c.Context(), e, h, args, asJSON)
		}),
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the status and the drift as JSON")
	return c
}

func runHubStatus(ctx context.Context, e *env, h *hub.Hub, args []string, asJSON bool) error {
	pc, l, err := e.hostedClient(ctx, args)
	if err != nil {
		return err
	}
	st, err := pc.Status(ctx)
	if err != nil {
		return fmt.Errorf("reading the status of %s: %w", l.URL, err)
	}
	b, left, err := push.Export(ctx, h)
	if err != nil {
		return err
	}
	drift, err := pc.Plan(ctx, b)
	if err != nil {
		return fmt.Errorf("comparing with %s: %w", l.URL, err)
	}
	var silent error
	if len(drift.Changes) > 0 {
		silent = errSilent{errors.New("the hosted hub differs from this hub")}
	}
	if asJSON {
		if left == nil {
			left = []push.Left{}
		}
		if err := e.printJSON(map[string]any{"url": l.URL, "status": st, "drift": drift.Changes, "notes": drift.Notes, "leftHere": left}); err != nil {
			return err
		}
		return silent
	}
	fmt.Fprintf(e.stdout, "%s (account %s)\n", l.URL, orDash(st.Tenant))
	if len(st.Sources) == 0 {
		fmt.Fprintln(e.stdout, "  no sources")
	}
	for _, s := range st.Sources {
		line := fmt.Sprintf("  %-16s %-8s %3d tools  %-7s %s", s.Namespace, s.Kind, s.Tools, s.Health, s.Where)
		if s.LastError != "" {
			line += "  (" + s.LastError + ")"
		}
		fmt.Fprintln(e.stdout, visible.Line(line))
	}
	if st.Unreviewed > 0 {
		fmt.Fprintf(e.stdout, "  %s to review (they ask until a person reviews them, in the hosted hub's dashboard)\n", plural(st.Unreviewed, "tool"))
	}
	fmt.Fprintf(e.stdout, "Pending calls: %d\n", len(st.Pending))
	for _, p := range st.Pending {
		fmt.Fprintln(e.stdout, visible.Line(fmt.Sprintf("  %s %s  %s  %s", p.Run, p.ID, p.Address, p.Summary)))
	}
	fmt.Fprintf(e.stdout, "Recent runs: %d\n", len(st.Runs))
	for _, r := range st.Runs {
		fmt.Fprintf(e.stdout, "  %s  %-19s %s\n", r.ID, r.Status, r.CreatedAt.Local().Format(time.DateTime))
	}
	for _, x := range left {
		fmt.Fprintf(e.stdout, "Left here: %s: %s.\n", x.Key, x.Reason)
	}
	if len(drift.Changes) == 0 {
		printNotes(e, drift.Notes)
		fmt.Fprintln(e.stdout, "No drift: the hosted hub has what this hub holds.")
		return nil
	}
	fmt.Fprintf(e.stdout, "Drift: `capabilities hub push` would make %s:\n", plural(len(drift.Changes), "change"))
	printPushChanges(e, drift.Changes)
	printNotes(e, drift.Notes)
	return silent
}
