package run

import (
	"context"

	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/store"
)

// Effective is the status a run is shown with: its record's, except that a
// run recorded running that no process holds is interrupted
// (model.RunInterrupted). Every attempt holds its run (store.Hold) from
// before its record says running until after it says otherwise, and the
// kernel drops the hold of a process that dies; so a record that says
// running with the hold free is a run whose process died mid-attempt.
//
// Asking takes nothing (store.Held): an agent resuming the run at that
// instant is not refused. Where the store cannot tell (an error, a system
// with no lock test), the run is shown running, as before.
func (e *Engine) Effective(ctx context.Context, r *model.Run) model.RunStatus {
	if r.Status == model.RunRunning && e.orphaned(ctx, r) {
		return model.RunInterrupted
	}
	return r.Status
}

// orphaned reports whether r, read as running, has no live attempt: its
// hold is free and, read again after that, the record is still the one r
// was read from (an attempt that ended between the read and the test wrote
// its record before it let go of the hold; a resume that started took the
// hold before it wrote).
func (e *Engine) orphaned(ctx context.Context, r *model.Run) bool {
	held, err := e.store.Held(ctx, store.Runs, r.ID)
	if err != nil {
		e.log.Warn("telling whether a run's process is alive; showing it running", "run", r.ID, "err", err)
		return false
	}
	if held {
		return false
	}
	cur, err := store.Get[model.Run](ctx, e.store, store.Runs, r.ID)
	return err == nil && cur.Status == model.RunRunning && cur.Attempts == r.Attempts && cur.UpdatedAt.Equal(r.UpdatedAt)
}
