//go:build linux

package pgfaults

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/run"
	"github.com/capabilities-sh/capabilities/internal/testenv"
)

// writeCode is the code of a run that writes id once; a call a person
// chose to skip (it was in flight when a process stopped) returns its
// ToolError's code, so that the run completes either way.
func writeCode(id string) string {
	return fmt.Sprintf(`try { return await up.record({id: %q}) } catch (e) { return e.code == "skipped_in_flight" ? e.code : e.code + ": " + e.message }`, id)
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

func envDuration(name string, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(os.Getenv(name)); err == nil && d >= 0 {
		return d
	}
	return def
}

// resumeSettled resumes run on a live process until it answers something
// other than "running in another process" (the lease of a killed process
// lasts until it expires).
func resumeSettled(ctx context.Context, a *agent, run string) (*envelope, error) {
	deadline := time.Now().Add(testenv.Timeout(60 * time.Second))
	for {
		out := a.execute(ctx, map[string]any{"resume": run})
		switch {
		case out.env != nil:
			return out.env, nil
		case out.err == nil && !strings.Contains(out.toolErr, "is running in another process"):
			return nil, fmt.Errorf("resuming %s: %s", run, out.toolErr)
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("resuming %s: still refused after %v: %v%s", run, testenv.Timeout(60*time.Second), out.err, out.toolErr)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// settled is what settle did.
type settled struct {
	interrupted      int // runs recorded running that no process ran: resumed
	interruptedCalls int // of which made their write on resume (no intent before: first time)
	inFlight         int // runs paused on an in_flight item, resumed again: asked again, called nothing
	skipped          int // of which a person then skipped with hub approve
}

// settle is what an operator does once the faults are over: every run the
// database holds that is neither finished nor paused on an in_flight item
// (its process died mid-attempt) is resumed on a live process; every run
// paused on an in_flight item is resumed once more (it must ask again and
// call nothing), then skipped by a person with `hub approve --choice skip`
// when skip is true. A resume must never make a write whose intent is
// journaled.
func settle(t *testing.T, ctx context.Context, c *cluster, view *dbView, up *upstream, skip bool) settled {
	t.Helper()
	var s settled
	a := newAgent(c, "settle", 0)
	defer a.close()
	snap := view.snapshot(t)
	for _, r := range snap.runs {
		if r.Run.Status.Done() || r.inFlight() {
			continue
		}
		s.interrupted++
		before := up.calls(t)[r.WriteID]
		env, err := resumeSettled(ctx, a, r.Run.ID)
		if err != nil {
			t.Error(err)
			continue
		}
		after := up.calls(t)[r.WriteID]
		if after != before {
			s.interruptedCalls++
		}
		switch {
		case r.Intent && after != before:
			t.Errorf("resuming run %s (status %s, its write %s's intent journaled) made the write again: %d calls before, %d after", r.Run.ID, r.Run.Status, r.WriteID, before, after)
		case env.Status == string(model.RunCompleted) && env.result() == "recorded "+r.WriteID, env.inFlight():
		default:
			t.Errorf("resuming run %s (%s) answered %s %s %v", r.Run.ID, r.WriteID, env.Status, env.Result, env.Error)
		}
	}
	snap = view.snapshot(t)
	var waiting []*runState
	for _, r := range snap.runs {
		if !r.inFlight() {
			continue
		}
		s.inFlight++
		waiting = append(waiting, r)
		before := up.calls(t)[r.WriteID]
		env, err := resumeSettled(ctx, a, r.Run.ID)
		if err != nil {
			t.Error(err)
			continue
		}
		if !env.inFlight() {
			t.Errorf("resuming run %s, paused on an in_flight call, answered %s %s: want it to ask again", r.Run.ID, env.Status, env.Result)
		}
		if after := up.calls(t)[r.WriteID]; after != before {
			t.Errorf("resuming run %s, paused on an in_flight call, made the write %s again (%d calls, then %d)", r.Run.ID, r.WriteID, before, after)
		}
	}
	if !skip {
		return s
	}
	// A person skips them (4 at a time: a CLI process each).
	var mu sync.Mutex
	sem := make(chan struct{}, 4)
	var wg sync.WaitGroup
	for i, r := range waiting {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			out, err := hubCLIErr(c.db, c.homes[i%len(c.homes)], "hub", "approve", r.Run.ID, "--choice", "skip")
			mu.Lock()
			defer mu.Unlock()
			// The run completes when its code catches the skip's
			// ToolError (writeCode), and fails when it does not.
			if err != nil || !strings.Contains(out, "Decided c1-in-flight: skip") || !strings.Contains(out, "skipped_in_flight") {
				t.Errorf("hub approve %s --choice skip: %v\n%s", r.Run.ID, err, out)
				return
			}
			s.skipped++
		})
	}
	wg.Wait()
	return s
}

// verdict is what the database and the upstream's call log say at the
// end.
type verdict struct {
	runs, records, journalLines int
	completedWrite              int // completed with the write made once and journaled
	skippedMade                 int // skipped by a person, the write made upstream before the kill
	skippedNotMade              int // skipped by a person, the request never reached the upstream
	failedAway                  int // failed, saying the database was away, the write not made
	lost                        []string
	repeated                    []string
	unowned                     []string // writes in the log with no run whose journal has their intent
	corrupt                     []string
	orphans                     []string
	other                       []string // finished otherwise than completed with the write or skipped
}

// judge reads everything back: every record and journal line must parse;
// every run must be finished, or paused on in_flight calls (allowInFlight);
// the upstream's call log must hold each id at most once, and only ids
// whose run journaled their intent.
func judge(t *testing.T, view *dbView, up *upstream, allowInFlight bool) verdict {
	t.Helper()
	snap := view.snapshot(t)
	calls := up.calls(t)
	v := verdict{runs: len(snap.runs), records: snap.records, journalLines: snap.journals, corrupt: snap.corrupt, orphans: snap.orphans}
	intended := map[string]bool{}
	for _, r := range snap.runs {
		if r.Intent {
			intended[r.WriteID] = true
		}
		res := ""
		switch {
		case r.Run.Status == model.RunCompleted:
			res = (&envelope{Result: r.Run.Result}).result()
		case r.Run.Status == model.RunFailed && r.Run.Error != nil && strings.Contains(r.Run.Error.Message, "("+run.CodeSkippedInFlight+")"):
			res = run.CodeSkippedInFlight // code that does not catch the skip's ToolError
		case r.Run.Status == model.RunFailed && r.Run.Error != nil && unreachable.MatchString(r.Run.Error.Message):
			res = "away"
		}
		switch {
		case !r.Run.Status.Done() && !(allowInFlight && r.inFlight()):
			v.lost = append(v.lost, fmt.Sprintf("%s (%s, %s)", r.Run.ID, r.WriteID, r.Run.Status))
		case r.inFlight():
		case res == "recorded "+r.WriteID && r.Outcome && calls[r.WriteID] == 1:
			v.completedWrite++
		case res == "skipped_in_flight" && r.Intent && r.Skipped && !r.Outcome && calls[r.WriteID] == 1:
			v.skippedMade++
		case res == "skipped_in_flight" && r.Intent && r.Skipped && !r.Outcome && calls[r.WriteID] == 0:
			v.skippedNotMade++
		case res == "away" && !r.Outcome && calls[r.WriteID] == 0:
			v.failedAway++
		default:
			v.other = append(v.other, fmt.Sprintf("%s (%s): %s %s %v, %d calls", r.Run.ID, r.WriteID, r.Run.Status, r.Run.Result, r.Run.Error, calls[r.WriteID]))
		}
	}
	for id, n := range calls {
		if n > 1 {
			v.repeated = append(v.repeated, fmt.Sprintf("%s ×%d", id, n))
		}
		if !intended[id] {
			v.unowned = append(v.unowned, id)
		}
	}
	sort.Strings(v.repeated)
	sort.Strings(v.unowned)
	return v
}

// check fails the test for anything judge found wrong.
func (v verdict) check(t *testing.T) {
	t.Helper()
	for _, x := range []struct {
		what string
		list []string
	}{
		{"lost runs (neither finished nor paused on an in_flight call)", v.lost},
		{"writes made more than once (the upstream's call log)", v.repeated},
		{"writes in the upstream's log that no run journaled as intended", v.unowned},
		{"records or journal lines that do not parse", v.corrupt},
		{"journals with no run record", v.orphans},
		{"runs that finished otherwise than with their write or a person's skip", v.other},
	} {
		if len(x.list) > 0 {
			t.Errorf("%d %s: %s", len(x.list), x.what, strings.Join(head(x.list, 20), "; "))
		}
	}
}

func head(s []string, n int) []string {
	if len(s) > n {
		return append(s[:n:n], fmt.Sprintf("… %d more", len(s)-n))
	}
	return s
}
