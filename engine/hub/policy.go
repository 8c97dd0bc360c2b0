package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/policy"
	"github.com/capabilities-sh/capabilities/store"
)

// policyID names the hub's one policy record: profiles carry no policy, so
// every profile's calls are decided by this one.
const policyID = policy.Profile

// policyCache keeps the last policy read, with the file's modification time
// and size: every call is decided on the current policy (another process may
// have changed it) at the cost of one stat.
type policyCache struct {
	mu  sync.Mutex
	key fileKey
	p   *policy.Policy
}

// fileKey identifies one version of a file: every write of a record is a new
// file renamed into place, so its inode changes along with the times.
type fileKey struct {
	ino, size, mtimeNs int64
}

// keyOf is fi's key; ok is false where the system gives no inode (the
// file is then read every time: size and time alone could miss a write).
func keyOf(fi os.FileInfo) (k fileKey, ok bool) {
	ino, ok := inode(fi)
	return fileKey{ino: ino, size: fi.Size(), mtimeNs: fi.ModTime().UnixNano()}, ok
}

// Policy reads the profile's policy. A missing file is an empty policy; a
// malformed one is an error naming the file, and nothing is overwritten.
// The result is shared: do not change it.
func (h *Hub) Policy(ctx context.Context) (*policy.Policy, error) {
	f, isFile := h.store.(*store.File)
	if !isFile {
		return h.readPolicy(ctx)
	}
	fi, err := os.Stat(f.Path(store.Policies, policyID))
	if err != nil {
		return h.readPolicy(ctx)
	}
	key, ok := keyOf(fi)
	if !ok {
		return h.readPolicy(ctx)
	}
	c := &h.policyCache
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.p != nil && key == c.key {
		return c.p, nil
	}
	p, err := h.readPolicy(ctx)
	if err != nil {
		return nil, err
	}
	c.p, c.key = p, key
	return p, nil
}

func (h *Hub) readPolicy(ctx context.Context) (*policy.Policy, error) {
	var p policy.Policy
	err := h.store.Get(ctx, store.Policies, policyID, &p)
	if errors.Is(err, store.ErrNotFound) {
		return &policy.Policy{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the policy: %w", err)
	}
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("reading the policy: policies/%s.json: %w; fix or remove the rule", policyID, err)
	}
	return &p, nil
}

// updatePolicy changes the policy under its lock.
func (h *Hub) updatePolicy(ctx context.Context, fn func(p *policy.Policy) error) error {
	err := store.UpdateJSON(ctx, h.store, store.Policies, policyID, func(old *policy.Policy) (*policy.Policy, error) {
		if old == nil {
			old = &policy.Policy{}
		}
		if err := old.Validate(); err != nil {
			return nil, fmt.Errorf("policies/%s.json: %w; fix or remove the rule", policyID, err)
		}
		if err := fn(old); err != nil {
			return nil, err
		}
		return old, nil
	})
	if err != nil {
		return fmt.Errorf("updating the policy: %w", err)
	}
	h.Invalidate()
	return nil
}

// SetRule adds or replaces the rule for a namespace or tool address. A rule
// on a tool is pinned to the tool's current contract.
func (h *Hub) SetRule(ctx context.Context, target string, action policy.Action, conn, channel string) (*policy.Rule, error) {
	r := policy.Rule{Target: target, Action: action, Connection: conn, CreatedAt: time.Now().UTC().Truncate(time.Second), Channel: channel}
	if _, _, ok := model.SplitAddress(target); ok {
		_, t, _, err := h.Tool(ctx, target)
		if err != nil {
			return nil, fmt.Errorf("setting a rule: %w", err)
		}
		r.Contract = t.Contract
	} else if _, err := h.Source(ctx, target); err != nil {
		return nil, fmt.Errorf("setting a rule: %w", err)
	}
	if conn != "" {
		if err := validConnectionName(conn); err != nil {
			return nil, fmt.Errorf("setting a rule: %w", err)
		}
	}
	err := h.updatePolicy(ctx, func(p *policy.Policy) error {
		p.Set(r)
		return nil
	})
	return &r, err
}

// UnknownConnection says why a rule for connection conn on target would
// never apply, or "" when conn is one of the source's connections (or "").
func (h *Hub) UnknownConnection(ctx context.Context, target, conn string) (string, error) {
	if conn == "" {
		return "", nil
	}
	ns, _, _ := strings.Cut(target, ".")
	conns, err := h.Connections(ctx, ns)
	if err != nil {
		return "", err
	}
	def, err := h.defaultConnection(ctx, ns)
	if err != nil {
		return "", err
	}
	known := []string{}
	for _, c := range conns.Items {
		known = append(known, c.Name)
	}
	if def != "" && !slices.Contains(known, def) {
		known = append(known, def)
	}
	switch {
	case slices.Contains(known, conn):
		return "", nil
	case len(known) == 0:
		return fmt.Sprintf("%s has no connections (it takes no credential): a rule for connection %q applies to nothing until it has one", ns, conn), nil
	}
	return fmt.Sprintf("%s has no connection %q (it has %s): the rule applies to nothing until it does (`capabilities hub auth %s --connection %s`)", ns, conn, strings.Join(known, ", "), ns, conn), nil
}

// RemoveRule deletes the rule for (target, connection).
func (h *Hub) RemoveRule(ctx context.Context, target, conn string) error {
	return h.updatePolicy(ctx, func(p *policy.Policy) error {
		if !p.Remove(target, conn) {
			what := target
			if conn != "" {
				what += " (connection " + conn + ")"
			}
			var others []string
			for _, r := range p.Rules {
				if r.Target == target && r.Connection != conn {
					c := r.Connection
					if c == "" {
						c = "any"
					}
					others = append(others, c)
				}
			}
			if len(others) > 0 {
				return fmt.Errorf("no rule for %s; %s has rules for connection %s: name one with --connection (`capabilities hub policy list` shows them)", what, target, strings.Join(others, ", "))
			}
			return fmt.Errorf("no rule for %s; see `capabilities hub policy list`", what)
		}
		return nil
	})
}

func validConnectionName(c string) error {
	if len(c) == 0 || len(c) > 64 {
		return fmt.Errorf("connection name %q must be 1 to 64 characters", c)
	}
	for _, r := range c {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return fmt.Errorf("connection name %q may contain only a-z, 0-9, '_' and '-'", c)
		}
	}
	return nil
}

// Verdict decides one call under the current policy. For a tool that
// changed since it was reviewed, the message says what changed. While the
// hub is paused, a call that would run asks.
//
// The call's connection is decided for by its name: a call that names
// none goes through its source's default connection, and rules (and a
// person's decisions) for that connection apply to it, no others.
func (h *Hub) Verdict(ctx context.Context, t *model.Tool, conn string) (policy.Verdict, error) {
	p, err := h.Policy(ctx)
	if err != nil {
		return policy.Verdict{}, err
	}
	if conn == "" {
		if conn, err = h.defaultConnection(ctx, t.Namespace()); err != nil {
			return policy.Verdict{}, err
		}
	}
	v := p.Decide(t, conn)
	if v.Reason == policy.ReasonChanged {
		var what []string
		for _, c := range h.contractChanges(ctx, p.Reviewed[t.Address], t) {
			head, _, _ := strings.Cut(c, ":")
			what = append(what, head)
		}
		v.Message += " (changed: " + strings.Join(what, ", ") + "; `capabilities hub review` shows the diff)"
	}
	return h.pause(v), nil
}

// ReviewItem is one new or changed tool awaiting review.
type ReviewItem struct {
	Tool     model.Tool    `json:"tool"`
	Effect   model.Effect  `json:"effect"`
	Status   string        `json:"status"`   // "new" or "changed"
	Proposal policy.Action `json:"proposal"` // allow for read-only, ask otherwise
	Changes  []string      `json:"changes,omitempty"`
	// SourceRule is the rule on the whole source that decides the tool
	// instead once it is reviewed as proposed (a source allowed: its new
	// write runs without asking); nil when the proposal holds.
	SourceRule *policy.Rule `json:"sourceRule,omitempty"`
}

// CommandConsent is a stdio source whose exact command a person has not
// agreed to run (or that changed since).
type CommandConsent struct {
	Namespace string `json:"namespace"`
	Command   string `json:"command"`
	// Shown is the command as a person is shown it: the credentials of
	// its arguments masked (model.ShownCommand). Command is what is
	// consented to.
	Shown string `json:"shown,omitempty"`
}

// Review is every new or changed tool, and every stdio command awaiting
// consent.
type Review struct {
	Items    []ReviewItem     `json:"items"`
	Commands []CommandConsent `json:"commands"`
}

// PendingReview lists what a person has not reviewed yet, optionally for one
// namespace.
func (h *Hub) PendingReview(ctx context.Context, ns string) (*Review, error) {
	p, err := h.Policy(ctx)
	if err != nil {
		return nil, err
	}
	recs, err := h.Sources(ctx)
	if err != nil {
		return nil, err
	}
	r := &Review{Items: []ReviewItem{}, Commands: []CommandConsent{}}
	for _, rec := range recs {
		if ns != "" && rec.Source.Namespace != ns {
			continue
		}
		var m *model.Manifest
		if rec.Manifest != nil {
			m = &rec.Manifest.Manifest
		}
		h.addToReview(ctx, r, p, &rec.Source, m)
	}
	return r, nil
}

// ReviewOf is the review the proposals will await once accepted (Accept),
// made without storing anything: what a person decides on one screen
// before anything is added (hub import). Give it to AcceptReview after
// accepting them.
func (h *Hub) ReviewOf(ctx context.Context, props []*Proposal) (*Review, error) {
	p, err := h.Policy(ctx)
	if err != nil {
		return nil, err
	}
	r := &Review{Items: []ReviewItem{}, Commands: []CommandConsent{}}
	for _, prop := range props {
		h.addToReview(ctx, r, p, &prop.Source, &prop.Manifest)
	}
	return r, nil
}

// addToReview adds to r what of src and its manifest m (nil: none yet)
// policy p has not reviewed: its command, and its new and changed tools.
func (h *Hub) addToReview(ctx context.Context, r *Review, p *policy.Policy, src *model.Source, m *model.Manifest) {
	if src.Kind == model.KindStdio && p.Consented[src.Namespace] != src.CommandLine() {
		r.Commands = append(r.Commands, CommandConsent{Namespace: src.Namespace, Command: src.CommandLine(), Shown: src.ShownCommandLine()})
	}
	if m == nil {
		return
	}
	for _, t := range m.Tools {
		it := ReviewItem{Tool: t, Effect: t.Effect(), Proposal: policy.Ask}
		if it.Effect == model.EffectRead {
			it.Proposal = policy.Allow
		}
		old, ok := p.Reviewed[t.Address]
		switch {
		case !ok:
			it.Status = "new"
		case old != t.Contract:
			it.Status = "changed"
			it.Changes = h.contractChanges(ctx, old, &t)
		default:
			continue
		}
		it.SourceRule = sourceRuleAfterReview(p, t, it.Proposal)
		r.Items = append(r.Items, it)
	}
}

// sourceRuleAfterReview is the rule on t's whole source that would decide
// t once it is reviewed with action (what AcceptReview records), when it
// decides something else; nil otherwise.
func sourceRuleAfterReview(p *policy.Policy, t model.Tool, action policy.Action) *policy.Rule {
	q := policy.Policy{Rules: slices.Clone(p.Rules), Reviewed: map[string]string{t.Address: t.Contract}}
	q.Remove(t.Address, "")
	def := policy.Ask
	if t.Effect() == model.EffectRead {
		def = policy.Allow
	}
	if action != def {
		q.Set(policy.Rule{Target: t.Address, Action: action, Contract: t.Contract})
	}
	v := q.Decide(&t, "")
	if v.Rule == nil || v.Rule.Target != t.Namespace() || v.Action == action {
		return nil
	}
	r := *v.Rule
	return &r
}

// Decision on one reviewed tool.
type ReviewDecision struct {
	Address string
	Action  policy.Action
}

// AcceptReview records a person's review: each tool's current contract is
// pinned (its snapshot kept in blobs/ for later diffs), a tool set to allow
// or deny gets a rule pinned to that contract, and the listed stdio
// commands are consented to. Tools whose decision equals the default (ask
// for writes, allow for read-only) need no rule.
func (h *Hub) AcceptReview(ctx context.Context, r *Review, decisions map[string]policy.Action, channel string) error {
	for _, it := range r.Items {
		if err := h.saveSnapshot(ctx, &it.Tool); err != nil {
			return err
		}
	}
	now := time.Now().UTC().Truncate(time.Second)
	return h.updatePolicy(ctx, func(p *policy.Policy) error {
		for _, it := range r.Items {
			t := it.Tool
			p.Review(&t)
			action, ok := decisions[t.Address]
			if !ok {
				action = it.Proposal
			}
			p.Remove(t.Address, "")
			defaultAction := policy.Ask
			if t.Effect() == model.EffectRead {
				defaultAction = policy.Allow
			}
			if action != defaultAction {
				p.Set(policy.Rule{Target: t.Address, Action: action, Contract: t.Contract, CreatedAt: now, Channel: channel})
			}
		}
		for _, c := range r.Commands {
			if p.Consented == nil {
				p.Consented = map[string]string{}
			}
			p.Consented[c.Namespace] = c.Command
		}
		return nil
	})
}

// snapshot is a tool's contract content, kept under blobs/ by digest so a
// later change can be shown as a diff.
type snapshot struct {
	Name         string             `json:"name"`
	Description  string             `json:"description"`
	InputSchema  json.RawMessage    `json:"inputSchema,omitempty"`
	OutputSchema json.RawMessage    `json:"outputSchema,omitempty"`
	Annotations  *model.Annotations `json:"annotations,omitempty"`
}

func (h *Hub) saveSnapshot(ctx context.Context, t *model.Tool) error {
	s := snapshot{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema, OutputSchema: t.OutputSchema, Annotations: t.Annotations}
	if err := h.store.Put(ctx, store.Blobs, "contract-"+t.Contract, s); err != nil {
		return fmt.Errorf("keeping the reviewed contract of %s: %w", t.Address, err)
	}
	return nil
}

// contractChanges describes how t differs from the reviewed contract.
func (h *Hub) contractChanges(ctx context.Context, oldContract string, t *model.Tool) []string {
	old, err := store.Get[snapshot](ctx, h.store, store.Blobs, "contract-"+oldContract)
	if err != nil {
		return []string{"the contract changed (the reviewed version is not kept, so no diff)"}
	}
	var out []string
	if old.Description != t.Description {
		out = append(out, "description:\n"+lineDiff(old.Description, t.Description))
	}
	if !sameJSON(old.InputSchema, t.InputSchema) {
		out = append(out, "input schema:\n"+lineDiff(pretty(old.InputSchema), pretty(t.InputSchema)))
	}
	if !sameJSON(old.OutputSchema, t.OutputSchema) {
		out = append(out, "output schema:\n"+lineDiff(pretty(old.OutputSchema), pretty(t.OutputSchema)))
	}
	oa, _ := json.Marshal(old.Annotations)
	na, _ := json.Marshal(t.Annotations)
	if string(oa) != string(na) {
		out = append(out, "annotations:\n"+lineDiff(pretty(oa), pretty(na)))
	}
	if len(out) == 0 {
		out = append(out, "the contract digest changed")
	}
	return out
}

func sameJSON(a, b json.RawMessage) bool {
	ca, err1 := model.Canonical(a)
	cb, err2 := model.Canonical(b)
	return err1 == nil && err2 == nil && string(ca) == string(cb)
}

func pretty(raw json.RawMessage) string {
	c, err := model.Canonical(raw)
	if err != nil {
		return string(raw)
	}
	var v any
	if json.Unmarshal(c, &v) != nil {
		return string(raw)
	}
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b)
}

// lineDiff is a small line diff: lines only in a get "-", only in b "+".
// It uses the longest common subsequence, fine for tool-sized texts.
func lineDiff(a, b string) string {
	x, y := strings.Split(a, "\n"), strings.Split(b, "\n")
	if len(x)*len(y) > 1_000_000 {
		return "  - (long text replaced)\n  + (long text replaced)"
	}
	lcs := make([][]int, len(x)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(y)+1)
	}
	for i := len(x) - 1; i >= 0; i-- {
		for j := len(y) - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out []string
	i, j := 0, 0
	for i < len(x) || j < len(y) {
		switch {
		case i < len(x) && j < len(y) && x[i] == y[j]:
			i++
			j++
		case i < len(x) && (j == len(y) || lcs[i+1][j] >= lcs[i][j+1]):
			out = append(out, "  - "+x[i]) // what went comes before what replaced it
			i++
		default:
			out = append(out, "  + "+y[j])
			j++
		}
	}
	return strings.Join(out, "\n")
}
