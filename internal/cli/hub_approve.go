package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/capabilities-sh/capabilities/engine/approval"
	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/policy"
	"github.com/capabilities-sh/capabilities/engine/run"
	"github.com/capabilities-sh/capabilities/engine/visible"
	"github.com/spf13/cobra"
)

func newApproveCmd(e *env) *cobra.Command {
	var (
		choice string
		callID string
		asJSON bool
	)
	c := &cobra.Command{
		Use:   "approve <runId> [--choice once|run|always|deny|retry|skip] [--call ID]",
		Short: "Decide on a run's pending calls, then resume it",
		Long: `Show each call the run waits on — address, connection, what the tool does, the
arguments, why it asks and when it expires — and record your decision:
  once    this call runs
  run     this tool runs for the rest of the run
  always  a rule allows this version of the tool from now on
          (either also decides the run's other waiting calls of this tool: calls
          the code made together ask together, in the order it made them)
  deny    the call fails inside the code with ToolError approval_denied
A call that was in flight when the hub stopped (killed, crashed) may or may not have
happened upstream; it is not made again unless you say so:
  retry   make the call again (recorded as once)
  skip    the call fails inside the code with ToolError skipped_in_flight (recorded as deny)
A run whose process stopped while it ran is resumed first, to find such a call.
Then the run resumes from its journal (no call is made twice) and its envelope is printed.`,
		Args:              exactArgs(1, "one run id"),
		ValidArgsFunction: complete(byPosition(runIDs(approvable))),
		RunE: func(c *cobra.Command, args []string) error {
			runID := args[0]
			var preset model.Choice
			if choice != "" {
				var err error
				if preset, err = parseChoice(choice); err != nil {
					return usageError{err}
				}
			}
			h, st, err := e.openHub()
			if err != nil {
				return err
			}
			defer h.Close()
			eng, err := h.Runs()
			if err != nil {
				return err
			}
			r, err := eng.Get(c.Context(), runID)
			if err != nil {
				return err
			}
			if r.Status == model.RunRunning {
				// Its process may have stopped (killed, crashed) with the run
				// unfinished: resume it from its journal, which says whether a
				// call was in flight and asks here (a run still running in
				// another process is refused).
				env, err := h.Resume(c.Context(), runID)
				if err != nil {
					return err
				}
				if r, err = eng.Get(c.Context(), runID); err != nil {
					return err
				}
				if !r.Status.Paused() {
					return e.printEnvelope(env, asJSON)
				}
			}
			if !r.Status.Paused() {
				return fmt.Errorf("run %s is %s: it is not waiting for a decision", runID, r.Status)
			}
			var open []model.Pending
			for _, p := range r.Pending {
				if p.AwaitsDecision() && (callID == "" || p.ID == callID) {
					open = append(open, p)
				}
			}
			if len(open) == 0 {
				if p := r.PendingItem(callID); callID != "" && p != nil && p.Decision != nil {
					return fmt.Errorf("call %s of run %s was already decided (%s via %s)", callID, runID, p.Decision.Choice, p.Decision.Channel)
				}
				if callID != "" {
					var ids []string
					for _, p := range r.Pending {
						if p.AwaitsDecision() {
							ids = append(ids, p.ID)
						}
					}
					if len(ids) == 0 {
						return fmt.Errorf("run %s has no pending approval %q, nor any other undecided one", runID, callID)
					}
					return usagef("run %s has no pending approval %q; the undecided ones: %s", runID, callID, strings.Join(ids, ", "))
				}
				// Every call it waits for is decided (in the desktop app,
				// the console, or by an approve that stopped before it
				// resumed): approve goes on with it, as after a decision.
				if !asJSON {
					fmt.Fprintf(e.stdout, "Every call run %s waited for is decided; continuing it.\n\n", runID)
				}
			}
			for _, p := range open {
				// An expired call is refused before anything is shown or
				// asked: no decision can count any more (the run is marked
				// expired by the one package that records decisions).
				if !p.ExpiresAt.IsZero() && time.Now().After(p.ExpiresAt) {
					_, err := approval.Record(c.Context(), st, approval.Request{RunID: runID, CallID: p.ID, Choice: model.ChoiceDeny, Channel: approval.ChannelCLI})
					if err == nil || errors.Is(err, approval.ErrExpired) {
						return fmt.Errorf("call %s of run %s expired at %s, before a person decided: %w; the agent can run its code again", p.ID, runID, p.ExpiresAt.Local().Format("2006-01-02 15:04:05"), approval.ErrExpired)
					}
					return err
				}
			}
			if preset != "" && callID == "" && len(open) > 1 {
				var ids []string
				for _, p := range open {
					ids = append(ids, p.ID)
				}
				return usagef("run %s has %d pending calls (%s): say which with --call", runID, len(open), strings.Join(ids, ", "))
			}
			for _, p := range open {
				if p.Kind == model.PendingInFlight && preset != "" && preset != model.ChoiceOnce && preset != model.ChoiceDeny {
					return usagef("call %s was in flight when the hub stopped and may have happened: choose retry or skip, not %s", p.ID, preset)
				}
			}
			var by map[string]string // a call decided by the run or always of an earlier one: that one's id
			for _, p := range open {
				if q, ok := by[p.ID]; ok {
					if !asJSON {
						fmt.Fprintf(e.stdout, "Decided %s: %s (%s, as chosen for %s).\n\n", p.ID, choiceWord(p.Kind, r.PendingItem(p.ID).Decision.Choice), p.Address, q)
					}
					continue
				}
				if !asJSON {
					// What the person decides on, whole: the preview
					// shortens long values.
					if p.ArgsSize > 0 && p.ArgsSize <= wholeArgsBytes {
						if full, err := eng.FullArgs(c.Context(), runID, p.ID); err == nil {
							p.Args, p.ArgsSize = visible.Escape(full), 0
						}
					}
					p.Args = json.RawMessage(h.Scrub(string(p.Args)))
					printPending(e, &p)
					if p.Reason == policy.ReasonChanged {
						printChanges(c.Context(), e, h, &p)
					}
				}
				ch := preset
				if ch == "" {
					ask := askChoice
					if p.Kind == model.PendingInFlight {
						ask = askRetry
					}
					if ch, err = ask(e); err != nil {
						return err
					}
				}
				updated, err := approval.Record(c.Context(), st, approval.Request{RunID: runID, CallID: p.ID, Choice: ch, Channel: approval.ChannelCLI})
				if err != nil {
					return err
				}
				// A run or always decides the other calls of the tool that
				// wait in this run too (approval.Record).
				for _, o := range open {
					if q, was := updated.PendingItem(o.ID), r.PendingItem(o.ID); o.ID != p.ID && q != nil && q.Decision != nil && was != nil && was.Decision == nil {
						if by == nil {
							by = map[string]string{}
						}
						by[o.ID] = p.ID
					}
				}
				r = updated
				if !asJSON {
					fmt.Fprintf(e.stdout, "Decided %s: %s.\n\n", p.ID, choiceWord(p.Kind, ch))
				}
			}
			env, err := h.Resume(c.Context(), runID)
			if errors.Is(err, run.ErrRunningElsewhere) {
				// Another process (the agent's, the desktop app) went on
				// with the run as the decision landed: it is going on.
				fmt.Fprintf(e.stdout, "Run %s goes on in another process (the agent's, or the desktop app): `capabilities hub runs show %s` shows how it ends.\n", runID, runID)
				return nil
			}
			if err != nil {
				return err
			}
			// The decision is what approve does: a run that fails after
			// it (a deny the code does not catch) is shown, not a failure
			// of approve.
			if err := e.printEnvelope(env, asJSON); err != nil {
				if _, silent := err.(errSilent); !silent {
					return err
				}
			}
			return nil
		},
	}
	c.Flags().StringVar(&choice, "choice", "", "decide without prompting: `CHOICE` is once, run, always or deny (retry or skip for a call that was in flight)")
	c.Flags().StringVar(&callID, "call", "", "the pending call `ID` to decide (c1, c2, …), when several are pending")
	c.Flags().BoolVar(&asJSON, "json", false, "print the resumed run's envelope as JSON")
	_ = c.RegisterFlagCompletionFunc("choice", complete(fixed("once", "run", "always", "deny", "retry", "skip")))
	_ = c.RegisterFlagCompletionFunc("call", complete(pendingCalls))
	return c
}

// unescapeMarkup writes the \u003c, \u003e and \u0026 escapes of JSON text
// (how encoding/json stores <, > and &) as the characters they are, for a
// person to read "a=1&b=2 > out" as the code wrote it. An escaped
// backslash followed by "u003c" is left alone: it is text, not an escape.
func unescapeMarkup(b []byte) []byte {
	if !bytes.Contains(b, []byte(`\u00`)) {
		return b
	}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' || i+1 >= len(b) {
			out = append(out, b[i])
			continue
		}
		if b[i+1] == 'u' && i+6 <= len(b) {
			switch strings.ToLower(string(b[i+2 : i+6])) {
			case "003c":
				out, i = append(out, '<'), i+5
				continue
			case "003e":
				out, i = append(out, '>'), i+5
				continue
			case "0026":
				out, i = append(out, '&'), i+5
				continue
			}
		}
		out, i = append(out, b[i], b[i+1]), i+1 // an escape pair, kept
	}
	return out
}

// wholeArgsBytes is the most of a pending call's arguments approve prints
// whole; longer ones are printed shortened, and the console shows them.
const wholeArgsBytes = 64 << 10

func printPending(e *env, p *model.Pending) {
	w := e.stdout
	conn := "" // a source that takes no credential has no connection
	if p.Connection != "" {
		conn = "  (connection " + visible.Line(p.Connection) + ")"
	}
	// One line each: a newline in the tool's summary or the reason must
	// not forge the next call's header (Main's writer escapes the rest).
	fmt.Fprintf(w, "%s  %s%s\n    %s\n", p.ID, p.Address, conn, visible.Line(p.Summary))
	if len(p.Args) > 0 {
		fmt.Fprintf(w, "    arguments: %s\n", unescapeMarkup(p.Args))
	}
	if p.ArgsSize > 0 {
		fmt.Fprintf(w, "    (long values shortened: %d bytes in all; `capabilities hub console` shows them whole)\n", p.ArgsSize)
	}
	fmt.Fprintf(w, "    why: %s\n", visible.Line(p.Message))
	if !p.ExpiresAt.IsZero() {
		fmt.Fprintf(w, "    expires: %s (in %s)\n", p.ExpiresAt.Local().Format("2006-01-02 15:04"), time.Until(p.ExpiresAt).Round(time.Minute))
	}
}

// parseChoice reads a choice; retry and skip, the words for a call that was
// in flight, are recorded as once and deny.
func parseChoice(s string) (model.Choice, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "retry":
		return model.ChoiceOnce, nil
	case "skip":
		return model.ChoiceDeny, nil
	}
	c, err := approval.ParseChoice(s)
	if err != nil {
		return "", fmt.Errorf("%w (retry or skip for a call that was in flight)", err)
	}
	return c, nil
}

// choiceWord names a recorded choice as the person chose it.
func choiceWord(kind string, c model.Choice) string {
	if kind == model.PendingInFlight {
		switch c {
		case model.ChoiceOnce:
			return "retry"
		case model.ChoiceDeny:
			return "skip"
		}
	}
	return string(c)
}

// askRetry asks about a call that was in flight when the hub stopped.
func askRetry(e *env) (model.Choice, error) {
	for {
		fmt.Fprint(e.stdout, "    it may have happened: [r]etry  [s]kip: ")
		line, err := e.readLine()
		switch strings.ToLower(strings.TrimSpace(line)) {
		case "r", "retry", "once":
			return model.ChoiceOnce, nil
		case "s", "skip", "deny":
			return model.ChoiceDeny, nil
		}
		if err != nil {
			fmt.Fprintln(e.stdout)
			return "", fmt.Errorf("no answer on standard input; nothing decided (pass --choice retry|skip)")
		}
		fmt.Fprintln(e.stdout, "    answer retry or skip")
	}
}

func askChoice(e *env) (model.Choice, error) {
	for {
		fmt.Fprint(e.stdout, "    [o]nce  [r]un  [a]lways  [d]eny: ")
		line, err := e.readLine()
		ans := strings.ToLower(strings.TrimSpace(line))
		switch ans {
		case "o", "once":
			return model.ChoiceOnce, nil
		case "r", "run":
			return model.ChoiceRun, nil
		case "a", "always":
			return model.ChoiceAlways, nil
		case "d", "deny":
			return model.ChoiceDeny, nil
		}
		if err != nil {
			fmt.Fprintln(e.stdout)
			return "", fmt.Errorf("no answer on standard input; nothing decided (pass --choice once|run|always|deny)")
		}
		fmt.Fprintln(e.stdout, "    answer once, run, always or deny")
	}
}

// printChanges shows what changed in a tool that asks because it changed
// upstream since it was reviewed, so the person decides on what the tool
// says now, not on its first sentence.
func printChanges(ctx context.Context, e *env, h *hub.Hub, p *model.Pending) {
	ns, _, _ := model.SplitAddress(p.Address)
	r, err := h.PendingReview(ctx, ns)
	if err != nil {
		return
	}
	for _, it := range r.Items {
		if it.Tool.Address != p.Address || len(it.Changes) == 0 {
			continue
		}
		if it.Tool.Contract != p.Contract {
			fmt.Fprintf(e.stdout, "    what changed: it changed again since this call; `capabilities hub review %s` shows it\n", ns)
			return
		}
		fmt.Fprintln(e.stdout, "    what changed since it was reviewed:")
		for _, ch := range it.Changes {
			fmt.Fprintln(e.stdout, "      "+strings.ReplaceAll(ch, "\n", "\n      "))
		}
	}
}
