// Package run executes the model's code: it prepares it, runs attempts in
// the sandbox, decides each tool call (policy, then a person's decision),
// journals every call as it settles, pauses for a person and resumes by
// replaying the journal so that no settled call is ever made twice.
//
// A run is runs/<id>.json plus runs/<id>.journal.jsonl. Resume re-runs the
// code with the same seed and logical clock; calls already settled are
// answered from the journal in order (by sequence number, checked against
// the address and the digest of the arguments); a call that differs fails
// the run with `divergence`. While an attempt runs, its process holds a
// claim on the run (store.Hold): a second process cannot run it at the same
// time, and a process killed mid-run frees it for a resume elsewhere.
package run

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/capabilities-sh/capabilities/engine/code"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/policy"
	"github.com/capabilities-sh/capabilities/engine/sandbox"
	"github.com/capabilities-sh/capabilities/engine/scrub"
	"github.com/capabilities-sh/capabilities/store"
)

// Tools is what a run needs from the hub, declared where it is used.
type Tools interface {
	// Namespaces is the current set of namespaces, each with the tool part
	// of its addresses; the same set (not a copy) until a tool changes.
	Namespaces(ctx context.Context) (*sandbox.Namespaces, error)
	// Tool looks a tool up by address in the cached manifests.
	Tool(ctx context.Context, address string) (*model.Tool, error)
	// Verdict decides a call under the current policy.
	Verdict(ctx context.Context, t *model.Tool, conn string) (policy.Verdict, error)
	// Check refuses, before a person is asked for it, a call that must
	// never go out: arguments the tool's input schema rejects, or that
	// carry another source's credential. nil: it may go ahead.
	Check(ctx context.Context, t *model.Tool, conn string, args json.RawMessage) *model.ToolError
	// Call makes the upstream call and returns what the code receives.
	Call(ctx context.Context, t *model.Tool, conn string, args json.RawMessage) (json.RawMessage, *model.ToolError)
	// Search and Describe answer hub.search and hub.describe.
	Search(ctx context.Context, query string) (string, error)
	Describe(ctx context.Context, target string) (string, error)
	// ConnectionReady reports whether a person has since stored the
	// credential a paused call lacked.
	ConnectionReady(ctx context.Context, address, conn string) bool
	// Scrubber removes secrets from what enters and leaves a run: every
	// secret this process resolved, after it resolves those of the
	// connections through which the journal's calls reached an upstream
	// (the run may have made them in another process).
	Scrubber(ctx context.Context, journal []model.JournalEntry) *scrub.Scrubber
}

// CodeConnectionRequired is the ToolError code Tools.Call returns when the
// call's connection has no credential yet: the run pauses with a pending
// item of kind "connection" instead of failing the call.
const CodeConnectionRequired = "connection_required"

// Sandbox runs one attempt.
type Sandbox interface {
	Run(ctx context.Context, req sandbox.Request) sandbox.Outcome
}

// Limits of a run beyond one attempt's (sandbox.Limits).
type Limits struct {
	CodeBytes         int           // 64 KB
	MaxCalls          int           // 500 tool calls per run, across attempts
	UpstreamTimeout   time.Duration // an extra bound on each tool call; 0: none beyond the call's own deadline (engine/source, per source, 60 s by default)
	ApprovalTTL       time.Duration // 24 h before an undecided approval expires the run
	Retention         time.Duration // 7 days before a finished run is pruned
	ArgsPreviewBytes  int           // 4 KB of arguments shown in a pending approval
	InlineResultBytes int           // 24 KB of result and logs in the envelope
	// HandleBytes: a tool result larger than this (64 KB) reaches the code
	// as a Handle, read in parts with hub.read (each part at most this).
	HandleBytes int
	// MaxHandleBytes is how much the handles of one run may hold (64 MB).
	MaxHandleBytes int
}

func (l Limits) withDefaults() Limits {
	if l.CodeBytes <= 0 {
		l.CodeBytes = code.MaxBytes
	}
	if l.MaxCalls <= 0 {
		l.MaxCalls = 500
	}
	if l.ApprovalTTL <= 0 {
		l.ApprovalTTL = 24 * time.Hour
	}
	if l.Retention <= 0 {
		l.Retention = 7 * 24 * time.Hour
	}
	if l.ArgsPreviewBytes <= 0 {
		l.ArgsPreviewBytes = 4 << 10
	}
	if l.InlineResultBytes <= 0 {
		l.InlineResultBytes = 24 << 10
	}
	if l.HandleBytes <= 0 {
		l.HandleBytes = 64 << 10
	}
	if l.MaxHandleBytes <= 0 {
		l.MaxHandleBytes = 64 << 20
	}
	return l
}

// Options configure an Engine. Zero values are useful.
type Options struct {
	Limits  Limits
	Sandbox sandbox.Limits
	Logger  *slog.Logger
	// Now is the clock (time.Now by default); tests move it.
	Now func() time.Time
	// Retention is what the automatic prune keeps (read at each prune, at
	// most hourly); nil: Limits.Retention by age, no size limit.
	Retention func(context.Context) Retention
}

// Engine executes and resumes runs over a store.
type Engine struct {
	store   store.Store
	sandbox Sandbox
	tools   Tools
	opts    Options
	limits  Limits
	log     *slog.Logger

	mu      sync.Mutex
	running map[string]context.CancelFunc // runs attempting in this process
	writing int                           // records being written (later)
	written *sync.Cond                    // writing fell to 0
	pruned  time.Time
	pruning sync.WaitGroup // the automatic prune, in the background
	sets    namespaceSets
	handles handleCache
	seen    seenRecords // what Waiting last read of each record
}

// New returns an engine.
func New(st store.Store, sb Sandbox, tools Tools, opts Options) *Engine {
	e := &Engine{store: st, sandbox: sb, tools: tools, opts: opts, limits: opts.Limits.withDefaults(), log: opts.Logger, running: map[string]context.CancelFunc{}}
	e.written = sync.NewCond(&e.mu)
	if e.log == nil {
		e.log = slog.New(slog.DiscardHandler)
	}
	if e.opts.Now == nil {
		e.opts.Now = time.Now
	}
	return e
}

func (e *Engine) now() time.Time { return e.opts.Now().UTC() }

// Envelope is what execute returns, to the model and to the CLI.
type Envelope struct {
	RunID     string           `json:"runId"`
	Status    string           `json:"status"` // completed | failed | awaiting_approval | awaiting_connection | cancelled | expired
	Result    json.RawMessage  `json:"result,omitempty"`
	Error     *model.RunError  `json:"error,omitempty"`
	Logs      []string         `json:"logs"`
	Calls     []CallInfo       `json:"calls"`
	Pending   []PendingInfo    `json:"pending"`
	Truncated *model.Truncated `json:"truncated,omitempty"`
	Notices   []string         `json:"notices"`
	// Decisions are the answers people gave to this run's pending items,
	// in the order the items came, each with the channel it came through
	// (cli, approval-page, desktop, elicitation; auth for a credential).
	Decisions []DecisionInfo `json:"decisions,omitempty"`
}

// DecisionInfo is one decided pending item in the envelope.
type DecisionInfo struct {
	ID      string       `json:"id"`
	Address string       `json:"address"`
	Choice  model.Choice `json:"choice"`
	Channel string       `json:"channel"`
}

// CallInfo is one settled tool call in the envelope.
type CallInfo struct {
	Address string `json:"address"`
	OK      bool   `json:"ok"`
	Ms      int64  `json:"ms"`
	// Note says what a person reading the run should know of the call:
	// NoteRepeated.
	Note string `json:"note,omitempty"`
}

// NoteRepeated is the note on a read made again on resume: an attempt that
// was interrupted (killed, crashed) had sent it and not journaled its
// outcome. Reads may be repeated; writes never are without a person.
const NoteRepeated = "read repeated after an interrupted attempt"

// PendingInfo is one undecided item in the envelope.
type PendingInfo struct {
	ID         string          `json:"id"`
	Kind       string          `json:"kind"`
	Address    string          `json:"address"`
	Connection string          `json:"connection,omitempty"`
	Summary    string          `json:"summary"`
	Message    string          `json:"message"`
	Args       json.RawMessage `json:"args,omitempty"`
}

// ErrUnknownRun is returned for a run id with no run.
var ErrUnknownRun = errors.New("unknown run")

// errGone is the error of an update to a run record that another process
// removed (pruned) or changed since it was read.
func errGone(id string) error {
	return fmt.Errorf("%w %q: it changed or was pruned meanwhile; list runs with `capabilities hub runs`", ErrUnknownRun, id)
}

// ErrCodeTooLarge is wrapped by Execute's error for code over the size limit.
var ErrCodeTooLarge = errors.New("the code is too large")

// ErrNoCode is wrapped by Execute's error for code that is empty or only
// white space.
var ErrNoCode = errors.New("the code is empty")

// Execute starts a new run of src (the body of an async function).
func (e *Engine) Execute(ctx context.Context, src string) (*Envelope, error) {
	defer e.maybePrune(ctx)
	if len(src) > e.limits.CodeBytes {
		return nil, fmt.Errorf("%w: %d bytes; the limit is %d: send less code, or split the work across runs", ErrCodeTooLarge, len(src), e.limits.CodeBytes)
	}
	if strings.TrimSpace(src) == "" {
		return nil, fmt.Errorf("%w: send the body of an async function, e.g. `return await hub.search(\"what you need\")`", ErrNoCode)
	}
	now := e.now()
	r := &model.Run{
		ID:        "r" + store.NewID()[:20],
		Status:    model.RunRunning,
		Code:      src,
		Seed:      rand.Int64(),
		Clock:     now.Truncate(time.Millisecond),
		CreatedAt: now,
		UpdatedAt: now,
	}
	return e.attempt(ctx, r.ID, r)
}

// Resume continues a run that waited for a person. Before a decision it
// returns the same pending envelope and runs nothing; a finished run
// returns its envelope.
func (e *Engine) Resume(ctx context.Context, id string) (*Envelope, error) {
	r, err := e.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	switch {
	case r.Status.Done():
		return e.envelope(ctx, r)
	case r.Status.Paused():
		if e.expire(ctx, r) {
			return e.envelope(ctx, r)
		}
		if err := e.resolveConnections(ctx, r); err != nil {
			return nil, err
		}
		if err := e.dropPauseAsks(ctx, r); err != nil {
			return nil, err
		}
		if undecided(r) > 0 {
			return e.envelope(ctx, r)
		}
	}
	// Running with no live attempt (its process died), or every pending item
	// decided: attempt again from the journal.
	return e.attempt(ctx, id, nil)
}

// Get reads a run record.
func (e *Engine) Get(ctx context.Context, id string) (*model.Run, error) {
	if err := store.ValidID(id); err != nil {
		return nil, fmt.Errorf("%w %q: a run id looks like r0123abcd…", ErrUnknownRun, id)
	}
	e.Flush()
	r, err := store.Get[model.Run](ctx, e.store, store.Runs, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("%w %q: list runs with `capabilities hub runs`", ErrUnknownRun, id)
	}
	if err != nil {
		return nil, fmt.Errorf("reading run %s: %w", id, err)
	}
	return r, nil
}

// Envelope renders a run's current state.
func (e *Engine) Envelope(ctx context.Context, id string) (*Envelope, error) {
	r, err := e.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	return e.envelope(ctx, r)
}

// Cancel ends a run that has not finished. An attempt running in this
// process is stopped.
func (e *Engine) Cancel(ctx context.Context, id string) (*Envelope, error) {
	if _, err := e.Get(ctx, id); err != nil {
		return nil, err
	}
	e.mu.Lock()
	stop := e.running[id]
	e.mu.Unlock()
	if stop != nil {
		stop()
	}
	var out *model.Run
	err := store.UpdateJSON(ctx, e.store, store.Runs, id, func(r *model.Run) (*model.Run, error) {
		if r == nil {
			return nil, errGone(id)
		}
		if r.Status.Done() {
			return nil, fmt.Errorf("run %s is already %s", id, r.Status)
		}
		r.Status = model.RunCancelled
		r.Error = &model.RunError{Code: "cancelled", Message: "a person cancelled the run"}
		r.UpdatedAt = e.now()
		out = r
		return r, nil
	})
	if err != nil {
		return nil, fmt.Errorf("cancelling: %w", err)
	}
	env, err := e.envelope(ctx, out)
	if err != nil {
		// The run is cancelled; an unreadable journal (the reason it is,
		// often) only leaves its calls out of what is shown.
		e.log.Warn("showing a cancelled run without its calls", "run", id, "err", err)
		return e.render(out, nil).Scrubbed(e.tools.Scrubber(ctx, nil)), nil
	}
	return env, nil
}

// List returns runs, newest first, optionally with one status.
func (e *Engine) List(ctx context.Context, status string) ([]model.Run, error) {
	e.Flush()
	ids, err := e.store.List(ctx, store.Runs)
	if err != nil {
		return nil, fmt.Errorf("listing runs: %w", err)
	}
	var out []model.Run
	for _, id := range ids {
		r, err := store.Get[model.Run](ctx, e.store, store.Runs, id)
		if err != nil {
			if errors.Is(err, store.ErrNotFound) {
				continue // pruned meanwhile
			}
			// One unreadable record (a crash between a rename and the
			// disk, a hand edit) must not hide every other run.
			e.log.Warn("leaving out of the list a run whose record is unreadable", "run", id, "err", err)
			continue
		}
		if status == "" || string(r.Status) == status {
			out = append(out, *r)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CreatedAt.After(out[j].CreatedAt) })
	return out, nil
}

// Journal reads a run's journal: each call's outcome and, before a call
// to an upstream, its intent (JournalEntry.Intent).
func (e *Engine) Journal(ctx context.Context, id string) ([]model.JournalEntry, error) {
	e.Flush()
	lines, err := e.store.ReadLog(ctx, store.Runs, id)
	if err != nil {
		return nil, fmt.Errorf("reading the journal of %s: %w", id, err)
	}
	out := make([]model.JournalEntry, 0, len(lines))
	for i, l := range lines {
		var je model.JournalEntry
		if err := json.Unmarshal(l, &je); err != nil {
			return nil, fmt.Errorf("reading the journal of %s: line %d of runs/%s.journal.jsonl is corrupt: %w; the run cannot go on until that line is fixed by hand, or cancel it with `capabilities hub cancel %s`", id, i+1, id, err, id)
		}
		out = append(out, je)
	}
	return out, nil
}

func undecided(r *model.Run) int {
	n := 0
	for _, p := range r.Pending {
		if p.Decision == nil {
			n++
		}
	}
	return n
}

// resolveConnections marks pending connections whose credential a person
// has since stored.
func (e *Engine) resolveConnections(ctx context.Context, r *model.Run) error {
	ready := map[string]bool{}
	for _, p := range r.Pending {
		if p.Kind == model.PendingConnection && p.Decision == nil && e.tools.ConnectionReady(ctx, p.Address, p.Connection) {
			ready[p.ID] = true
		}
	}
	if len(ready) == 0 {
		return nil
	}
	return store.UpdateJSON(ctx, e.store, store.Runs, r.ID, func(cur *model.Run) (*model.Run, error) {
		if cur == nil {
			return nil, errGone(r.ID)
		}
		for i := range cur.Pending {
			if ready[cur.Pending[i].ID] && cur.Pending[i].Decision == nil {
				cur.Pending[i].Decision = &model.Decision{Choice: model.ChoiceOnce, Channel: "auth", At: e.now()}
			}
		}
		if cur.Status.Paused() {
			cur.Status = cur.Awaiting()
		}
		*r = *cur
		return cur, nil
	})
}

// dropPauseAsks takes back the undecided asks that only the hub's pause
// made (policy.ReasonPaused) once the pause is over: they were never a
// question about the call, and nobody answers them for it. The attempt
// that follows decides each such call again, as if it came now: it runs
// when policy allows it, and asks (for its own reason) when not. No
// decision is recorded.
func (e *Engine) dropPauseAsks(ctx context.Context, r *model.Run) error {
	stale := map[string]bool{}
	for _, p := range r.Pending {
		if p.Kind != model.PendingApproval || p.Decision != nil || p.Reason != policy.ReasonPaused {
			continue
		}
		t, err := e.tools.Tool(ctx, p.Address)
		if err != nil {
			continue // the attempt reports it
		}
		if v, err := e.tools.Verdict(ctx, t, p.Connection); err == nil && v.Reason != policy.ReasonPaused {
			stale[p.ID] = true
		}
	}
	if len(stale) == 0 {
		return nil
	}
	return store.UpdateJSON(ctx, e.store, store.Runs, r.ID, func(cur *model.Run) (*model.Run, error) {
		if cur == nil {
			return nil, errGone(r.ID)
		}
		cur.Pending = slices.DeleteFunc(cur.Pending, func(p model.Pending) bool { return stale[p.ID] && p.Decision == nil })
		*r = *cur
		return cur, nil
	})
}

// PausedOnly reports whether every undecided item of r is an ask that only
// the hub's pause made: the runs `capabilities hub resume` continues.
func PausedOnly(r *model.Run) bool {
	n := 0
	for _, p := range r.Pending {
		if p.Decision != nil {
			continue
		}
		if p.Kind != model.PendingApproval || p.Reason != policy.ReasonPaused {
			return false
		}
		n++
	}
	return n > 0
}

// expire marks the run expired when an undecided item's time is up.
func (e *Engine) expire(ctx context.Context, r *model.Run) bool {
	now := e.now()
	for _, p := range r.Pending {
		if p.Decision == nil && !p.ExpiresAt.IsZero() && now.After(p.ExpiresAt) {
			expired := false
			_ = store.UpdateJSON(ctx, e.store, store.Runs, r.ID, func(cur *model.Run) (*model.Run, error) {
				// As it is now: pruned, resumed or decided meanwhile, it
				// is not expired (a decision recorded in time stands).
				if cur == nil || !cur.Status.Paused() {
					return nil, errGone(r.ID)
				}
				if q := cur.PendingItem(p.ID); q == nil || q.Decision != nil {
					return nil, errGone(r.ID)
				}
				expired = true
				cur.Status = model.RunExpired
				cur.Error = &model.RunError{Code: "expired", Message: fmt.Sprintf("nobody decided on %s before %s", p.Address, p.ExpiresAt.Format(time.RFC3339)), Hint: "run the code again to ask again"}
				cur.UpdatedAt = now
				*r = *cur
				return cur, nil
			})
			return expired
		}
	}
	return false
}

func (e *Engine) envelope(ctx context.Context, r *model.Run) (*Envelope, error) {
	journal, err := e.Journal(ctx, r.ID)
	if err != nil {
		return nil, err
	}
	return e.render(r, settledOnly(journal)).Scrubbed(e.tools.Scrubber(ctx, journal)), nil
}

// MaxListedCalls bounds the envelope's list of settled calls (I7: a run may
// make 500, and the list would outgrow the envelope's 24 KB): a run of more
// lists its first and last MaxListedCalls/2, and truncated.calls says how
// many are left out between them (`hub runs show` lists them all).
const MaxListedCalls = 100

// render builds the envelope of a run from its record and settled calls.
func (e *Engine) render(r *model.Run, journal []model.JournalEntry) *Envelope {
	env := &Envelope{
		RunID:     r.ID,
		Status:    string(r.Status),
		Result:    r.Result,
		Error:     r.Error,
		Logs:      nonNil(r.Logs),
		Calls:     []CallInfo{},
		Pending:   []PendingInfo{},
		Truncated: r.Truncated,
		Notices:   nonNil(r.Notices),
	}
	for _, je := range journal {
		if je.Address == sandbox.AddressSearch || je.Address == sandbox.AddressDescribe || je.Address == sandbox.AddressRead {
			continue
		}
		c := CallInfo{Address: je.Address, OK: je.OK, Ms: je.Millis}
		if je.Repeated {
			c.Note = NoteRepeated
		}
		env.Calls = append(env.Calls, c)
	}
	if n := len(env.Calls); n > MaxListedCalls {
		half := MaxListedCalls / 2
		env.Calls = append(env.Calls[:half], env.Calls[n-half:]...)
		t := model.Truncated{Calls: n - MaxListedCalls}
		if r.Truncated != nil {
			t.Result, t.Logs = r.Truncated.Result, r.Truncated.Logs
		}
		env.Truncated = &t
	}
	for _, p := range r.Pending {
		if p.Decision != nil {
			env.Decisions = append(env.Decisions, DecisionInfo{ID: p.ID, Address: p.Address, Choice: p.Decision.Choice, Channel: p.Decision.Channel})
		}
	}
	if r.Status.Paused() {
		for _, p := range r.Pending {
			if p.Decision == nil {
				env.Pending = append(env.Pending, PendingInfo{ID: p.ID, Kind: p.Kind, Address: p.Address, Connection: p.Connection, Summary: p.Summary, Message: p.Message, Args: p.Args})
			}
		}
	}
	return env
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// digest is the SHA-256 of the canonical JSON of a call's arguments.
func digest(args json.RawMessage) string {
	c, err := model.Canonical(args)
	if err != nil {
		c = args
	}
	sum := sha256.Sum256(c)
	return hex.EncodeToString(sum[:])
}

// maybePrune starts the automatic prune (Prune) when this process has not
// started one in the last hour. It runs in the background, after the run
// that started it, and only when no process pruned the hub's runs in the
// last hour (the mark it leaves in the store): reading every run record is
// no part of an agent's first execute, nor of every `hub exec`. Wait waits
// for it.
func (e *Engine) maybePrune(ctx context.Context) {
	e.mu.Lock()
	due := e.now().Sub(e.pruned) > time.Hour
	if due {
		e.pruned = e.now()
		e.pruning.Add(1)
	}
	e.mu.Unlock()
	if !due {
		return
	}
	go func() {
		defer e.pruning.Done()
		ctx := context.WithoutCancel(ctx)
		now := e.now()
		if m, err := store.Get[pruneMark](ctx, e.store, store.Blobs, pruneMarkID); err == nil && !m.At.After(now) && now.Sub(m.At) < time.Hour {
			return
		}
		if err := e.store.Put(ctx, store.Blobs, pruneMarkID, pruneMark{At: now}); err != nil {
			e.log.Warn("marking the runs pruned", "err", err)
		}
		if n, err := e.Prune(ctx); err != nil {
			e.log.Warn("pruning old runs", "err", err)
		} else if n > 0 {
			e.log.Info("pruned old runs", "count", n)
		}
	}()
}

// pruneMark is when a process last started the automatic prune of the
// hub's runs (a blob, pruneMarkID).
type pruneMark struct {
	At time.Time `json:"at"`
}

const pruneMarkID = "runs-pruned"

// Wait waits for the automatic prune this process started and for the
// records of the runs that ended in it (Flush). The hub's Close calls it.
func (e *Engine) Wait() {
	e.pruning.Wait()
	e.Flush()
}

// Prune is the automatic prune: PruneRuns with Options.Retention, else
// Limits.Retention. Runs (and journals) that are done, or paused with
// nothing a person can still decide (every pending call decided or
// expired), go; a run still waiting for a person stays, however old.
func (e *Engine) Prune(ctx context.Context) (int, error) {
	ret := Retention{Age: e.limits.Retention}
	if e.opts.Retention != nil {
		ret = e.opts.Retention(ctx)
	}
	e.Flush()
	if ag, ok := e.store.(agedStore); ok { // nothing kept is counted: nobody reads it
		p, err := e.pruneAged(ctx, ag, ret, false)
		return p.Runs, err
	}
	p, err := e.PruneRuns(ctx, ret)
	return p.Runs, err
}

// waitsForAPerson says whether a paused run has a pending call a person can
// still decide (undecided, and not expired).
func waitsForAPerson(r *model.Run, now time.Time) bool {
	for i := range r.Pending {
		p := &r.Pending[i]
		if p.AwaitsDecision() && (p.ExpiresAt.IsZero() || now.Before(p.ExpiresAt)) {
			return true
		}
	}
	return false
}
