// Package policy decides every tool call: allow, ask or deny.
//
// Rules attach to a source (a namespace) or a tool (an address), optionally
// narrowed to one connection. For each call:
//
//  1. Any matching deny wins. A narrower rule never loosens a deny.
//  2. A tool that is new (never reviewed) or changed since it was reviewed
//     (its contract digest differs from the one a person approved) asks.
//  3. Otherwise the most specific matching rule decides: tool+connection,
//     tool, source+connection, source. A rule pinned to a contract applies
//     only while the tool still has that contract.
//  4. With no rule, a tool annotated readOnlyHint: true runs and anything
//     else asks; an unannotated tool counts as possibly destructive.
//
// The package is pure: it reads a Policy value and a tool and returns a
// Verdict. Storing policies and recording decisions live elsewhere.
package policy

import (
	"fmt"
	"strings"
	"time"

	"github.com/capabilities-sh/capabilities/engine/model"
)

// Profile is the only profile for now; its policy is policies/default.json.
const Profile = "default"

// Action is what a rule or a verdict says.
type Action string

const (
	Allow Action = "allow"
	Ask   Action = "ask"
	Deny  Action = "deny"
)

// ParseAction reads "allow", "ask" or "deny".
func ParseAction(s string) (Action, error) {
	switch a := Action(strings.ToLower(strings.TrimSpace(s))); a {
	case Allow, Ask, Deny:
		return a, nil
	}
	return "", fmt.Errorf("%q is not a policy action: use allow, ask or deny", s)
}

// Rule is one line of policy.
type Rule struct {
	// Target is a namespace ("github") or a tool address ("github.createIssue").
	Target string `json:"target"`
	// Connection narrows the rule to one connection ("work"); empty means any.
	Connection string `json:"connection,omitempty"`
	Action     Action `json:"action"`
	// Contract, for a tool rule, pins it to the contract digest the person
	// saw; the rule stops applying when the tool changes.
	Contract  string    `json:"contract,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
	// Channel says how the rule was made: "cli", "review", "approval:cli", …
	Channel string `json:"channel,omitempty"`
}

// IsTool reports whether the rule targets a tool rather than a source.
func (r *Rule) IsTool() bool { return strings.Contains(r.Target, ".") }

// Policy is a profile's rules, the contracts a person reviewed and the
// stdio commands a person consented to run. It is stored as
// policies/<profile>.json.
type Policy struct {
	Rules []Rule `json:"rules"`
	// Reviewed maps a tool address to the contract digest a person
	// accepted in review (or by approving it "always").
	Reviewed map[string]string `json:"reviewed"`
	// Consented maps a stdio source's namespace to the exact command line a
	// person agreed to run.
	Consented map[string]string `json:"consented,omitempty"`
}

// Reason codes say why a verdict came out as it did.
const (
	ReasonDenyRule  = "deny_rule"  // a matching deny rule
	ReasonNew       = "new"        // the tool was never reviewed
	ReasonChanged   = "changed"    // the tool's contract changed since review
	ReasonRule      = "rule"       // the most specific rule
	ReasonReadOnly  = "read_only"  // no rule; annotated read-only
	ReasonMayWrite  = "may_write"  // no rule; not annotated read-only
	ReasonStaleRule = "stale_rule" // only a rule pinned to an old contract matched
	ReasonPaused    = "paused"     // the hub is paused: every call that would run asks
)

// Verdict is the decision for one call.
type Verdict struct {
	Action Action `json:"action"`
	Reason string `json:"reason"`
	// Message says why in a sentence a person (and the model) can read.
	Message string `json:"message"`
	// Rule is the rule that decided, if any.
	Rule *Rule `json:"rule,omitempty"`
	// Connection is the connection decided for, by name ("" for a source
	// that needs none): what a person's decision on this call is bound to.
	Connection string `json:"connection,omitempty"`
}

// Decide returns the verdict for calling tool t through connection conn,
// named as the caller resolved it (the default connection by its name).
func (p *Policy) Decide(t *model.Tool, conn string) Verdict {
	v := p.decide(t, conn)
	v.Connection = conn
	return v
}

func (p *Policy) decide(t *model.Tool, conn string) Verdict {
	ns := t.Namespace()
	matches := func(r *Rule) bool {
		if r.Target != t.Address && r.Target != ns {
			return false
		}
		return r.Connection == "" || r.Connection == conn
	}
	// 1. Any matching deny wins, pinned or not: a deny never loosens.
	for i := range p.Rules {
		r := &p.Rules[i]
		if r.Action == Deny && matches(r) {
			return Verdict{Action: Deny, Reason: ReasonDenyRule, Rule: r,
				Message: fmt.Sprintf("denied by the rule %s", r.describe())}
		}
	}
	// 2. New or changed tools ask until a person reviews them.
	reviewed, ok := p.Reviewed[t.Address]
	if !ok {
		return Verdict{Action: Ask, Reason: ReasonNew, Message: fmt.Sprintf("%s is new and has not been reviewed", t.Address)}
	}
	if reviewed != t.Contract {
		return Verdict{Action: Ask, Reason: ReasonChanged, Message: fmt.Sprintf("%s changed upstream since it was reviewed", t.Address)}
	}
	// 3. The most specific live rule decides.
	var best *Rule
	stale := false
	for i := range p.Rules {
		r := &p.Rules[i]
		if !matches(r) {
			continue
		}
		if r.Contract != "" && r.Contract != t.Contract {
			stale = true
			continue
		}
		if best == nil || specificity(r) > specificity(best) {
			best = r
		}
	}
	if best != nil {
		return Verdict{Action: best.Action, Reason: ReasonRule, Rule: best,
			Message: fmt.Sprintf("%s by the rule %s", verb(best.Action), best.describe())}
	}
	// 4. Annotations.
	if t.Effect() == model.EffectRead {
		return Verdict{Action: Allow, Reason: ReasonReadOnly, Message: fmt.Sprintf("%s is annotated read-only", t.Address)}
	}
	v := Verdict{Action: Ask, Reason: ReasonMayWrite, Message: fmt.Sprintf("%s may change data (it is not annotated read-only)", t.Address)}
	if stale {
		v.Reason = ReasonStaleRule
		v.Message = fmt.Sprintf("%s changed since it was allowed; the old approval no longer applies", t.Address)
	}
	return v
}

// specificity orders rules: tool+connection > tool > source+connection > source.
func specificity(r *Rule) int {
	s := 0
	if r.IsTool() {
		s += 2
	}
	if r.Connection != "" {
		s++
	}
	return s
}

func verb(a Action) string {
	switch a {
	case Allow:
		return "allowed"
	case Deny:
		return "denied"
	}
	return "asks"
}

func (r *Rule) describe() string {
	s := fmt.Sprintf("%q %s", r.Target, r.Action)
	if r.Connection != "" {
		s = fmt.Sprintf("%q (connection %s) %s", r.Target, r.Connection, r.Action)
	}
	return s
}

// Set adds or replaces the rule for (target, connection).
func (p *Policy) Set(r Rule) {
	for i := range p.Rules {
		if p.Rules[i].Target == r.Target && p.Rules[i].Connection == r.Connection {
			p.Rules[i] = r
			return
		}
	}
	p.Rules = append(p.Rules, r)
}

// Remove deletes the rule for (target, connection) and reports whether
// there was one.
func (p *Policy) Remove(target, conn string) bool {
	for i := range p.Rules {
		if p.Rules[i].Target == target && p.Rules[i].Connection == conn {
			p.Rules = append(p.Rules[:i], p.Rules[i+1:]...)
			return true
		}
	}
	return false
}

// Review records that a person accepted the tool's current contract.
func (p *Policy) Review(t *model.Tool) {
	if p.Reviewed == nil {
		p.Reviewed = map[string]string{}
	}
	p.Reviewed[t.Address] = t.Contract
}

// Validate checks a policy read from disk, naming the first bad rule.
func (p *Policy) Validate() error {
	for i, r := range p.Rules {
		if _, err := ParseAction(string(r.Action)); err != nil {
			return fmt.Errorf("rule %d (%s): %w", i+1, r.Target, err)
		}
		ns, _, isTool := model.SplitAddress(r.Target)
		if !isTool {
			ns = r.Target
		}
		if err := model.ValidNamespace(ns); err != nil {
			return fmt.Errorf("rule %d: target %q: %w", i+1, r.Target, err)
		}
	}
	return nil
}
