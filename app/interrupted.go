package app

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/store"
)

// liveCheck is how often the app asks whether the runs recorded running
// still have a live process: one that dies (killed, crashed) writes
// nothing, so no file event says it.
const liveCheck = 3 * time.Second

// track notes whether run id, as its record r says (nil: gone), is recorded
// running, and whether it is interrupted (run.Engine.Effective); it reports
// whether what the tray shows changed.
func (a *App) track(ctx context.Context, id string, r *model.Run) bool {
	if a.running == nil {
		a.running, a.interrupted = map[string]bool{}, map[string]bool{}
	}
	was := a.interrupted[id]
	if r == nil || r.Status != model.RunRunning {
		delete(a.running, id)
		delete(a.interrupted, id)
		return was
	}
	a.running[id] = true
	now := false
	if eng, err := a.hub.Runs(); err == nil {
		now = eng.Effective(ctx, r) == model.RunInterrupted
	}
	if now {
		a.interrupted[id] = true
		if !was {
			a.log.Info("a run's process stopped while it ran: resume or cancel it in the console", "run", id)
		}
	} else {
		delete(a.interrupted, id)
	}
	return was != now
}

// checkRunning asks again about every run recorded running; it reports
// whether what the tray shows changed.
func (a *App) checkRunning(ctx context.Context) bool {
	changed := false
	for id := range a.running {
		var r model.Run
		err := a.st.Get(ctx, store.Runs, id, &r)
		switch {
		case errors.Is(err, store.ErrNotFound):
			changed = a.track(ctx, id, nil) || changed
		case err != nil:
			a.log.Warn("reading a run", "run", id, "err", err)
		default:
			changed = a.track(ctx, id, &r) || changed
		}
	}
	return changed
}

// interruptedRuns lists the runs interrupted, sorted.
func (a *App) interruptedRuns() []string {
	out := make([]string, 0, len(a.interrupted))
	for id := range a.interrupted {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}
