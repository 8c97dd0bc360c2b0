// Package approval is the one place that records a person's decision on a
// pending call. Only host code that handles a person's input imports it: the
// CLI prompt (`hub approve`), the approval page, the desktop app, and the
// answer to the client's own elicitation form checked against the state the
// hub signed. No MCP tool, execute argument or guest code can reach it; a
// test over the import graph holds this line (I2).
package approval

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/policy"
	"github.com/capabilities-sh/capabilities/store"
)

// Channels a decision can come through.
const (
	ChannelCLI         = "cli"
	ChannelPage        = "approval-page"
	ChannelDesktop     = "desktop"
	ChannelElicitation = "elicitation"
	// ChannelDashboard is the hosted hub's dashboard, behind the person's
	// sign-in (session cookie, CSRF, Host and Origin checks).
	ChannelDashboard = "dashboard"
)

// ErrNotAwaiting is returned for a run that waits for no decision.
var ErrNotAwaiting = errors.New("the run is not awaiting a decision")

// ErrExpired is returned when the pending call expired before the decision.
var ErrExpired = errors.New("the pending call expired")

// ParseChoice reads once, run, always or deny.
func ParseChoice(s string) (model.Choice, error) {
	c := model.Choice(strings.ToLower(strings.TrimSpace(s)))
	if slices.Contains(model.Choices, c) {
		return c, nil
	}
	return "", fmt.Errorf("%q is not a choice: use once (this call), run (this tool for the rest of the run), always (a rule pinned to this version of the tool) or deny", s)
}

// Request is one decision to record.
type Request struct {
	RunID   string
	CallID  string // the pending item; may be empty when exactly one is undecided
	Choice  model.Choice
	Channel string
	// By names who decided when the channel knows it: on a hosted hub, the
	// signed-in person's account (the tenant). Empty on a local hub.
	By string
	// Nonce, for answers that carry a signed one-time state, is recorded so
	// the same state cannot be used twice.
	Nonce string
	Now   time.Time // zero: time.Now()
}

// Record stores the decision on the run's pending call, under the run's
// lock. "run" also allows the tool for the rest of the run; "always" also
// adds an allow rule pinned to the tool's current contract (and marks the
// contract reviewed). Either also decides the run's other undecided asks
// of the same tool (decideSiblings). It returns the updated run.
func Record(ctx context.Context, st store.Store, req Request) (*model.Run, error) {
	if _, err := ParseChoice(string(req.Choice)); err != nil {
		return nil, fmt.Errorf("recording a decision: %w", err)
	}
	if req.Channel == "" {
		return nil, fmt.Errorf("recording a decision: no channel")
	}
	now := req.Now
	if now.IsZero() {
		now = time.Now()
	}
	now = now.UTC()
	var decided model.Pending
	var out *model.Run
	err := store.UpdateJSON(ctx, st, store.Runs, req.RunID, func(r *model.Run) (*model.Run, error) {
		if r == nil {
			return nil, fmt.Errorf("no run %q; list runs with `capabilities hub runs`", req.RunID)
		}
		if !r.Status.Paused() {
			return nil, fmt.Errorf("run %s is %s: %w", r.ID, r.Status, ErrNotAwaiting)
		}
		p, err := pick(r, req.CallID)
		if err != nil {
			return nil, err
		}
		if p.Kind == model.PendingInFlight && req.Choice != model.ChoiceOnce && req.Choice != model.ChoiceDeny {
			return nil, fmt.Errorf("call %s of run %s was in flight when the hub stopped and may have happened: choose once (retry: make it again) or deny (skip: the code gets ToolError skipped_in_flight), not %s", p.ID, r.ID, req.Choice)
		}
		if !p.ExpiresAt.IsZero() && now.After(p.ExpiresAt) {
			r.Status = model.RunExpired
			r.Error = &model.RunError{Code: "expired", Message: fmt.Sprintf("the approval of %s expired at %s before a person decided", p.Address, p.ExpiresAt.Format(time.RFC3339))}
			r.UpdatedAt = now
			out = r
			return r, nil
		}
		if req.Nonce != "" {
			if slices.Contains(r.UsedNonces, req.Nonce) {
				return nil, fmt.Errorf("this answer was already used once; it cannot decide again")
			}
			r.UsedNonces = append(r.UsedNonces, req.Nonce)
		}
		p.Decision = &model.Decision{Choice: req.Choice, Channel: req.Channel, By: req.By, At: now}
		decideSiblings(r, p)
		if allowed := model.AllowedTool(p.Address, p.Connection, p.Contract); req.Choice == model.ChoiceRun && !slices.Contains(r.AllowedTools, allowed) {
			r.AllowedTools = append(r.AllowedTools, allowed)
		}
		r.UpdatedAt = now
		decided = *p
		out = r
		return r, nil
	})
	if err != nil {
		return nil, fmt.Errorf("recording a decision: %w", err)
	}
	if out.Status == model.RunExpired {
		return out, fmt.Errorf("recording a decision: %w; the run is now expired", ErrExpired)
	}
	if req.Choice == model.ChoiceAlways {
		if err := allowAlways(ctx, st, &decided, req.Channel, now); err != nil {
			return out, err
		}
	}
	return out, nil
}

// decideSiblings applies a choice of run or always on p to the run's other
// undecided asks of the same tool, version and connection: calls the code
// made together with p, which ask in the same pause. Made one after
// another, they would have run without asking (the tool allowed for the
// run, or by the new rule); they are decided the same way, through the
// same channel. Not asks that only the hub's pause made: while it lasts,
// every call asks on its own.
func decideSiblings(r *model.Run, p *model.Pending) {
	if p.Kind != model.PendingApproval || (p.Decision.Choice != model.ChoiceRun && p.Decision.Choice != model.ChoiceAlways) {
		return
	}
	for i := range r.Pending {
		q := &r.Pending[i]
		if q == p || q.Kind != model.PendingApproval || !q.AwaitsDecision() || q.Reason == policy.ReasonPaused {
			continue
		}
		if q.Address == p.Address && q.Connection == p.Connection && q.Contract == p.Contract {
			d := *p.Decision
			q.Decision = &d
		}
	}
}

// pick finds the pending approval (or in-flight call) to decide.
func pick(r *model.Run, id string) (*model.Pending, error) {
	var open []string
	for i := range r.Pending {
		p := &r.Pending[i]
		if !p.AwaitsDecision() {
			continue
		}
		if id == "" || p.ID == id {
			open = append(open, p.ID)
		}
	}
	switch {
	case id != "" && len(open) == 0:
		if p := r.PendingItem(id); p != nil && p.Decision != nil {
			return nil, fmt.Errorf("call %s of run %s was already decided (%s via %s)", id, r.ID, p.Decision.Choice, p.Decision.Channel)
		}
		return nil, fmt.Errorf("run %s has no pending call %q; pending: %s", r.ID, id, strings.Join(undecided(r), ", "))
	case len(open) == 0:
		return nil, fmt.Errorf("run %s: %w (nothing undecided)", r.ID, ErrNotAwaiting)
	case len(open) > 1:
		return nil, fmt.Errorf("run %s has %d pending calls (%s): say which with --call", r.ID, len(open), strings.Join(open, ", "))
	}
	return r.PendingItem(open[0]), nil
}

func undecided(r *model.Run) []string {
	var ids []string
	for _, p := range r.Pending {
		if p.Decision == nil {
			ids = append(ids, p.ID)
		}
	}
	if len(ids) == 0 {
		return []string{"none"}
	}
	return ids
}

// allowAlways adds a rule pinned to the tool's current contract.
func allowAlways(ctx context.Context, st store.Store, p *model.Pending, channel string, now time.Time) error {
	err := store.UpdateJSON(ctx, st, store.Policies, policy.Profile, func(pol *policy.Policy) (*policy.Policy, error) {
		if pol == nil {
			pol = &policy.Policy{}
		}
		if err := pol.Validate(); err != nil {
			return nil, fmt.Errorf("policies/%s.json: %w", policy.Profile, err)
		}
		pol.Set(policy.Rule{Target: p.Address, Connection: p.Connection, Action: policy.Allow, Contract: p.Contract, CreatedAt: now.Truncate(time.Second), Channel: "approval:" + channel})
		if pol.Reviewed == nil {
			pol.Reviewed = map[string]string{}
		}
		pol.Reviewed[p.Address] = p.Contract
		return pol, nil
	})
	if err != nil {
		return fmt.Errorf("recording an always decision: %w", err)
	}
	return nil
}
