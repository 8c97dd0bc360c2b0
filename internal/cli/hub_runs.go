package cli

import (
	"fmt"
	"github.com/capabilities-sh/capabilities/engine/model"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/run"

	"github.com/spf13/cobra"
)

// runStatuses are the statuses --status accepts: the envelope's words, which
// run records use too.
var runStatuses = hub.RunStatuses

func newRunsCmd(e *env) *cobra.Command {
	var (
		status, since, namespace string
		limit                    int
		asJSON                   bool
	)
	c := &cobra.Command{
		Use:   "runs [--status STATUS] [--since AGE|TIME] [--namespace NS] [--limit N]",
		Short: "List runs, newest first",
		Long: "List runs (kept 7 days and 1 GB by default: see `runs prune`): id, status, attempts, when started. --status filters (" + strings.Join(runStatuses, ", ") +
			"). The statuses are those of execute's envelope: a paused run is awaiting_approval (a call waits for a person's" +
			" decision: `capabilities hub approve <runId>`) or awaiting_connection (a call waits for a credential: `capabilities hub auth`)." +
			" A run recorded running whose process stopped (killed, crashed) before it ended is interrupted: `capabilities hub approve <runId>`" +
			" resumes it, `capabilities hub cancel <runId>` ends it." +
			" --since keeps runs started within an age (90m, 24h, 7d) or at or after a time (2026-12-01 or RFC 3339); --namespace keeps" +
			" runs that called a tool of that namespace. The newest 50 are listed (--limit N, 0 for all), and a last line says when" +
			" older ones are left out. `runs prune` deletes runs by the hub's retention (or --older-than, --max-mb).",
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
		PreRunE: func(c *cobra.Command, args []string) error {
			if limit < 0 {
				return usagef("--limit %d: give how many runs to list, or 0 for all of them", limit)
			}
			if since != "" {
				if _, err := parseSince(since, time.Now()); err != nil {
					return usageError{err}
				}
			}
			return nil
		},
		RunE: e.withHub(func(c *cobra.Command, args []string, h *hub.Hub, _ hubStore) error {
			f := hub.RunFilter{Status: status, Namespace: namespace}
			if limit > 0 {
				f.Limit = limit + 1 // one more: are older runs left out?
			}
			if since != "" {
				f.Since, _ = parseSince(since, time.Now())
			}
			list, err := h.ListRuns(c.Context(), f)
			if err != nil {
				return err
			}
			more := limit > 0 && len(list) > limit
			if more {
				list = list[:limit]
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
				return e.printJSON(map[string]any{"runs": rows, "more": more})
			}
			if len(list) == 0 {
				fmt.Fprintln(e.stdout, "No runs.")
				return nil
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "RUN\tSTATUS\tATTEMPTS\tSTARTED")
			interrupted := ""
			for _, r := range list {
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", r.ID, r.Status, r.Attempts, ago(r.CreatedAt))
				if r.Status == model.RunInterrupted {
					interrupted = r.ID
				}
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if more {
				fmt.Fprintf(e.stdout, "Older runs are not listed: --limit %d lists more, --limit 0 all of them; --since and --status narrow the list.\n", 2*limit)
			}
			if interrupted != "" {
				fmt.Fprintf(e.stdout, "\n%s\n", interruptedHint(interrupted))
			}
			return nil
		}),
	}
	c.Flags().StringVar(&status, "status", "", "only runs with this `STATUS`: "+strings.Join(runStatuses, ", "))
	c.Flags().StringVar(&since, "since", "", "only runs started within this `AGE` (90m, 24h, 7d) or at or after a time (2026-12-01, RFC 3339)")
	c.Flags().StringVar(&namespace, "namespace", "", "only runs that called a tool of the `NAMESPACE`")
	c.Flags().IntVar(&limit, "limit", 50, "list the newest `N` runs (0: all of them)")
	c.Flags().BoolVar(&asJSON, "json", false, "print the runs as JSON (\"more\": older runs left out by --limit)")
	_ = c.RegisterFlagCompletionFunc("status", complete(fixed(runStatuses...)))
	c.AddCommand(newRunsShowCmd(e), newRunsPruneCmd(e))
	return c
}

// parseAge reads an age: a Go duration (90m, 36h) or whole days (7d).
func parseAge(s string) (time.Duration, error) {
	if d, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(d)
		if err != nil || n < 0 || n > 36500 {
			return 0, fmt.Errorf("%q is not an age: write whole days (7d) or a duration (90m, 36h)", s)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%q is not an age: write whole days (7d) or a duration (90m, 36h)", s)
	}
	return d, nil
}

// parseSince reads --since: an age before now, a date (local midnight) or
// an RFC 3339 time.
func parseSince(s string, now time.Time) (time.Time, error) {
	if d, err := parseAge(s); err == nil {
		return now.Add(-d), nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if t, err := time.ParseInLocation("2006-01-02", s, time.Local); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("--since %q: write an age (90m, 24h, 7d), a date (2026-12-01) or an RFC 3339 time", s)
}

func newRunsPruneCmd(e *env) *cobra.Command {
	var (
		olderThan string
		maxMB     int
		asJSON    bool
	)
	c := &cobra.Command{
		Use:   "prune [--older-than AGE] [--max-mb N]",
		Short: "Delete old runs (their journals and handles with them) by the hub's retention, or by AGE and size",
		Long: `Delete the runs that completed, failed, were cancelled or expired (or wait on a decision
that expired), with their journals and stored handles: those last updated longer ago than
--older-than (30d, 36h, 90m), then, oldest first, as many as it takes for the runs left to
take at most --max-mb megabytes. Without either flag, the hub's retention (the console's
Settings: 7 days and 1024 MB unless changed) decides, as it does when the hub prunes on its
own (at most hourly, when code runs). A run still running or waiting for a person is kept
whatever its age and size.`,
		Example: `  capabilities hub runs prune
  capabilities hub runs prune --older-than 30d
  capabilities hub runs prune --max-mb 200`,
		Args: exactArgs(0, "no arguments"),
		RunE: e.withHub(func(c *cobra.Command, args []string, h *hub.Hub, _ hubStore) error {
			var ret run.Retention
			if olderThan != "" {
				age, err := parseAge(olderThan)
				if err != nil || age == 0 {
					return usagef("--older-than %q: write whole days (7d) or a duration (90m, 36h), more than 0", olderThan)
				}
				ret.Age = age
			}
			if c.Flags().Changed("max-mb") {
				if maxMB <= 0 {
					return usagef("--max-mb %d: pass a size in megabytes, more than 0", maxMB)
				}
				ret.Bytes = int64(maxMB) << 20
			}
			p, err := h.PruneRuns(c.Context(), ret)
			if err != nil {
				return err
			}
			if asJSON {
				return e.printJSON(map[string]any{"pruned": p.Runs, "prunedBytes": p.Bytes, "kept": p.KeptRuns, "keptBytes": p.KeptBytes})
			}
			fmt.Fprintf(e.stdout, "Deleted %d run(s) (%s); %d run(s) kept (%s).\n", p.Runs, mbText(p.Bytes), p.KeptRuns, mbText(p.KeptBytes))
			return nil
		}),
	}
	c.Flags().StringVar(&olderThan, "older-than", "", "delete runs that ended longer ago than `AGE` (30d, 36h, 90m)")
	c.Flags().IntVar(&maxMB, "max-mb", 0, "then delete the oldest runs that ended until the rest take at most `N` megabytes")
	c.Flags().BoolVar(&asJSON, "json", false, "print what was deleted and kept as JSON")
	return c
}

// mbText is a size in megabytes, to one decimal.
func mbText(n int64) string {
	return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + " MB"
}

func newRunsShowCmd(e *env) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:               "show <runId>",
		Short:             "Show one run: status, result, error, pending, calls, notices",
		Args:              exactArgs(1, "one run id"),
		ValidArgsFunction: complete(byPosition(runIDs(anyRun))),
		RunE: e.withHub(func(c *cobra.Command, args []string, h *hub.Hub, _ hubStore) error {
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
			interrupted := eng.Effective(c.Context(), r) == model.RunInterrupted
			if interrupted {
				env.Status = string(model.RunInterrupted)
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
				printDecisions(e, r)
				err := e.printEnvelope(env.Scrubbed(sc), false)
				if interrupted {
					fmt.Fprintf(e.stdout, "\n%s\n", interruptedHint(r.ID))
				}
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
		RunE: e.withHub(func(c *cobra.Command, args []string, h *hub.Hub, _ hubStore) error {
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

// interruptedHint says what a person can do with an interrupted run, id
// one of them.
func interruptedHint(id string) string {
	return "interrupted: the process that ran it stopped (killed, crashed) before it ended. `capabilities hub approve " + id +
		"` resumes it from its journal (a call that was in flight asks first: it may have happened); `capabilities hub cancel " + id + "` ends it."
}

// printDecisions lists who decided on the run's calls, and how.
func printDecisions(e *env, r *model.Run) {
	first := true
	for _, p := range r.Pending {
		if p.Decision == nil {
			continue
		}
		if first {
			fmt.Fprintln(e.stdout, "decisions:")
			first = false
		}
		conn := ""
		if p.Connection != "" {
			conn = " (connection " + p.Connection + ")"
		}
		fmt.Fprintf(e.stdout, "  %s  %s%s: %s, by %s at %s\n", p.ID, p.Address, conn, p.Decision.Choice, p.Decision.Channel, p.Decision.At.Local().Format("2006-01-02 15:04:05"))
	}
}
