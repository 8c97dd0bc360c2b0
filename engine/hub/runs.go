package hub

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/run"
)

// RunStatuses are the statuses a run filter takes: the envelope's words,
// which run records use too.
// interrupted is no record's: a run recorded running whose process died
// (run.Engine.Effective).
var RunStatuses = []string{"running", "interrupted", "awaiting_approval", "awaiting_connection", "completed", "failed", "cancelled", "expired"}

// RunFilter selects runs; the zero value selects every run.
type RunFilter struct {
	// Status keeps runs with this status (one of RunStatuses).
	Status string
	// Since keeps runs started at or after it.
	Since time.Time
	// Namespace keeps runs that called a tool of it (their journal), or
	// wait on a call to one (their pending items).
	Namespace string
	// Limit keeps the newest Limit runs selected; 0 keeps them all. The
	// newest are found without reading every record (run.Engine.Select).
	Limit int
}

// ListRuns lists runs newest first, filtered: what `hub runs` and the
// console's Runs screen show. A run recorded running whose process died is
// listed with status interrupted (run.Engine.Effective). A namespace the
// hub does not have is an error unless a run called it (a source removed
// since).
func (h *Hub) ListRuns(ctx context.Context, f RunFilter) ([]model.Run, error) {
	if f.Status != "" && !slices.Contains(RunStatuses, f.Status) {
		return nil, fmt.Errorf("listing runs: status %q is not a status: use one of %s", f.Status, strings.Join(RunStatuses, ", "))
	}
	eng := h.runEngine()
	kept, err := eng.Select(ctx, run.Selection{Since: f.Since, Limit: f.Limit, Keep: func(r *model.Run) bool {
		recorded := r.Status
		if f.Status != "" && string(recorded) != f.Status && !(f.Status == string(model.RunInterrupted) && recorded == model.RunRunning) {
			return false // read no journal, test no hold
		}
		r.Status = eng.Effective(ctx, r)
		if f.Status != "" && string(r.Status) != f.Status {
			return false
		}
		return f.Namespace == "" || h.ranIn(ctx, r, f.Namespace)
	}})
	if err != nil {
		return nil, err
	}
	if f.Namespace == "" {
		return kept, nil
	}
	if len(kept) == 0 {
		if _, err := h.Source(ctx, f.Namespace); err != nil {
			return nil, fmt.Errorf("listing runs: %w", err)
		}
	}
	return kept, nil
}

// ranIn reports whether the run waits on a call to a tool of ns, or its
// journal has one.
func (h *Hub) ranIn(ctx context.Context, r *model.Run, ns string) bool {
	for _, p := range r.Pending {
		if strings.HasPrefix(p.Address, ns+".") {
			return true
		}
	}
	journal, err := h.runEngine().Journal(ctx, r.ID)
	if err != nil {
		return false
	}
	for _, je := range journal {
		if strings.HasPrefix(je.Address, ns+".") {
			return true
		}
	}
	return false
}

// PruneRuns deletes runs by ret (the settings' retention when ret is
// zero): the one prune behind `hub runs prune`, the console and the
// automatic prune. A run still running or waiting for a person is kept.
func (h *Hub) PruneRuns(ctx context.Context, ret run.Retention) (run.Pruned, error) {
	if ret == (run.Retention{}) {
		s, err := h.Settings()
		if err != nil {
			return run.Pruned{}, fmt.Errorf("pruning runs: %w", err)
		}
		ret = s.Retention()
	}
	p, err := h.runEngine().PruneRuns(ctx, ret)
	if err == nil {
		h.pruneOwed(ctx)
	}
	return p, err
}

// autoRetention is what the automatic prune keeps: the settings', or the
// defaults when they cannot be read (logged);
// Options.Run.Retention, when set, stands for the default age.
func (h *Hub) autoRetention(context.Context) run.Retention {
	s, err := h.Settings()
	if err != nil {
		if _, isDir := h.store.(dirStore); isDir {
			h.log.Warn("pruning runs by the default retention", "err", err)
		}
		s = Settings{}
	}
	ret := s.Retention()
	if s.RunRetentionDays == 0 && h.opts.Run.Retention > 0 {
		ret.Age = h.opts.Run.Retention
	}
	return ret
}
