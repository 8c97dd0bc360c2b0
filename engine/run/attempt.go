package run

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/capabilities-sh/capabilities/engine/code"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/policy"
	"github.com/capabilities-sh/capabilities/engine/sandbox"
	"github.com/capabilities-sh/capabilities/engine/scrub"
	"github.com/capabilities-sh/capabilities/engine/typegen"
	"github.com/capabilities-sh/capabilities/engine/visible"
	"github.com/capabilities-sh/capabilities/store"
)

// attempt runs the run's code once more, replaying its journal. fresh is a
// new run not stored yet (nil to read the run from the store).
func (e *Engine) attempt(ctx context.Context, id string, fresh *model.Run) (*Envelope, error) {
	// A new run is held from when it is stored (host.startStoring): until
	// then no other process can know its id.
	if fresh == nil {
		release, err := e.hold(ctx, id)
		if err != nil {
			return nil, err
		}
		defer release()
	}

	r, journal := fresh, []model.JournalEntry(nil)
	var err error
	if r == nil {
		if r, err = e.Get(ctx, id); err != nil {
			return nil, err
		}
		if r.Status.Done() {
			return e.envelope(ctx, r)
		}
	}
	r.Status = model.RunRunning
	r.Attempts++
	r.UpdatedAt = e.now()
	// A run is stored when its first call reaches the host (see
	// host.startStoring); code that calls nothing is stored once, when it
	// ends. A resumed run marks its new attempt at once, and only then
	// reads its journal: an attempt in a process that lost its claim sees
	// this one before its next write, or this one sees its intent
	// (host.stoppedElsewhere).
	stored := fresh == nil
	if stored {
		if err := e.store.Put(ctx, store.Runs, id, r); err != nil {
			return nil, fmt.Errorf("starting attempt %d of %s: %w", r.Attempts, id, err)
		}
		if journal, err = e.Journal(ctx, id); err != nil {
			return nil, err
		}
	}

	prepared, err := code.Prepare(r.Code)
	if err != nil {
		return e.finish(ctx, r, nil, failure(err), !stored, false)
	}
	r.Notices = prepared.Notices
	nss, err := e.namespaces(ctx, r)
	if err != nil {
		return nil, err
	}

	actx, cancel := context.WithCancel(ctx)
	e.mu.Lock()
	e.running[id] = cancel
	e.mu.Unlock()
	defer func() {
		cancel()
		e.mu.Lock()
		delete(e.running, id)
		e.mu.Unlock()
	}()

	js := readJournal(journal)
	// The secrets of the connections the journal's calls went through,
	// which this process may not have resolved: what leaves the run is
	// scrubbed of them (host.scrubber).
	e.tools.Scrubber(ctx, journal)
	h := &host{e: e, run: r, nss: nss, journal: js.settled, inFlight: js.inFlight, settled: len(js.settled), ctx: context.WithoutCancel(ctx), stored: stored, ready: make(chan struct{})}
	for _, je := range js.settled {
		if n := isHandle(je.Value); n > 0 {
			h.handleBytes += n
		}
	}
	out := e.sandbox.Run(actx, sandbox.Request{
		JS:           prepared.JS,
		Seed:         r.Seed,
		Clock:        r.Clock,
		NamespaceSet: nss,
		Limits:       e.opts.Sandbox,
		Host:         h,
		ReplayCalls:  len(js.settled),
	})
	if prepared.Plain && out.Status == sandbox.StatusFailed && out.Error != nil && out.Error.Code == sandbox.CodeSyntax {
		// QuickJS refused code that skipped esbuild; esbuild says it better.
		if err := code.Diagnose(r.Code); err != nil {
			out = failure(err)
		}
	}
	h.stopStoring(out.Status == sandbox.StatusPaused && h.diverged == nil)
	return e.finish(ctx, r, h, out, !h.stored, fresh != nil)
}

// ErrRunningElsewhere: an attempt of the run holds it in another process.
var ErrRunningElsewhere = errors.New("is running in another process")

// hold takes the run's cross-process hold for an attempt.
func (e *Engine) hold(ctx context.Context, id string) (release func(), err error) {
	release, err = e.store.Hold(ctx, store.Runs, id)
	if errors.Is(err, store.ErrBusy) {
		return nil, fmt.Errorf("run %s %w; wait for it, or cancel it with `capabilities hub cancel %s`", id, ErrRunningElsewhere, id)
	}
	return release, err
}

// failure turns a preparation error into a failed outcome.
func failure(err error) sandbox.Outcome {
	var se *code.SyntaxError
	if errors.As(err, &se) {
		return sandbox.Outcome{Status: sandbox.StatusFailed, Error: &sandbox.Error{Code: sandbox.CodeSyntax, Message: se.Error(), Hint: "fix the code at that line and run it again"}}
	}
	return sandbox.Outcome{Status: sandbox.StatusFailed, Error: &sandbox.Error{Code: "invalid_code", Message: err.Error()}}
}

// finish stores the attempt's outcome in the run record, and releases the
// hold a new run took when it was stored. A run stored for the first time
// now (it made no call, so nobody else can know its id) is written once;
// otherwise the record is updated under its lock, keeping a cancellation
// another process recorded meanwhile.
//
// A new run that ended (fresh, and not waiting for anyone) is recorded after
// its envelope is returned (Engine.later): the model does not wait for the
// record (0.1–0.3 ms on an idle disk, a millisecond and more under load),
// which nobody else waits for either. This process's readers wait for it
// (Flush), and so does the hub's Close; another process sees the run as
// running, or not yet, for that long. What the run did is already in its
// journal, so a crash in between loses no call (I6) but may leave the
// record behind.
func (e *Engine) finish(ctx context.Context, r *model.Run, h *host, out sandbox.Outcome, firstWrite, fresh bool) (*Envelope, error) {
	// What leaves the sandbox is scrubbed again: code can rebuild a secret
	// from parts that entered it clean.
	sc := e.tools.Scrubber(ctx, nil)
	out = scrubOutcome(sc, out)
	if out.Status == sandbox.StatusCompleted && out.ResultTruncated && out.Full != nil {
		// Too large for the envelope: the model gets a handle and a
		// preview, and reads the rest with hub.read in another execute.
		full := out.Full
		if sc.Len() > 0 {
			full = sc.JSON(full)
		}
		if hv, _, err := storeHandle(ctx, e.store, r.ID, handleID(r.ID, 0), full); err == nil {
			out.Result, out.ResultTruncated = hv, false
		} else {
			e.log.Warn("keeping a large run result", "run", r.ID, "err", err)
		}
	}
	out.Full = nil
	if h != nil {
		for i := range h.pending {
			h.pending[i] = scrubPending(sc, h.pending[i])
		}
		// The calls that asked together came to the host concurrently;
		// they are shown, and decided, in the order the code made them.
		slices.SortFunc(h.pending, func(a, b model.Pending) int {
			return cmp.Or(cmp.Compare(a.Seq, b.Seq), strings.Compare(a.ID, b.ID))
		})
		// A person is asked about at most MaxAsks calls at once (I7). The
		// calls past them made nothing (each paused): they ask again,
		// after these are decided, in the next attempt.
		if len(h.pending) > MaxAsks {
			h.pending = h.pending[:MaxAsks]
		}
	}
	release := func() {}
	if h != nil && h.release != nil {
		release = h.release
	}
	if h != nil && h.takenOver.Load() {
		// Not "cancelled": the run goes on in the other process, which
		// owns its record now; the agent gets its end by resuming it.
		release()
		return nil, fmt.Errorf("run %s %w: that process resumed it after this one lost its claim on it; resume it again later for its result", r.ID, ErrRunningElsewhere)
	}
	record := func(ctx context.Context) (*model.Run, error) {
		defer release()
		if firstWrite {
			e.apply(r, r, h, out)
			if r.Status.Done() {
				// Nothing will change it (it called no tool, so no
				// decision or resume comes back to it): it may share
				// a file with others (store.PutFinal).
				return r, store.PutFinal(ctx, e.store, store.Runs, r.ID, r)
			}
			return r, e.store.Put(ctx, store.Runs, r.ID, r)
		}
		final := r
		err := store.UpdateJSON(ctx, e.store, store.Runs, r.ID, func(cur *model.Run) (*model.Run, error) {
			if cur == nil {
				return nil, fmt.Errorf("run %s disappeared", r.ID)
			}
			e.apply(cur, r, h, out)
			final = cur
			return cur, nil
		})
		return final, err
	}
	if fresh && h != nil && out.Status != sandbox.StatusPaused {
		ended := *r
		e.apply(&ended, r, h, out)
		env := e.render(&ended, h.entries()).Scrubbed(sc)
		bg := context.WithoutCancel(ctx)
		e.later(func() {
			if _, err := record(bg); err != nil {
				e.log.Warn("recording the end of a run", "run", r.ID, "err", err)
			}
		})
		return env, nil
	}
	final, err := record(ctx)
	if err != nil {
		return nil, fmt.Errorf("recording the end of attempt %d of %s: %w", r.Attempts, r.ID, err)
	}
	if h != nil {
		return e.render(final, h.entries()).Scrubbed(sc), nil
	}
	return e.envelope(ctx, final)
}

// later runs f, a record's write, after the caller returns; Flush waits
// for it.
func (e *Engine) later(f func()) {
	e.mu.Lock()
	e.writing++
	e.mu.Unlock()
	go func() {
		f()
		e.mu.Lock()
		if e.writing--; e.writing == 0 {
			e.written.Broadcast()
		}
		e.mu.Unlock()
	}()
}

// Flush waits until the records of the runs that ended in this process are
// written (see finish). Every read of runs does; the hub's Close does.
func (e *Engine) Flush() {
	e.mu.Lock()
	for e.writing > 0 {
		e.written.Wait()
	}
	e.mu.Unlock()
}

// apply sets the outcome of attempt r on the stored record cur.
func (e *Engine) apply(cur, r *model.Run, h *host, out sandbox.Outcome) {
	if cur.Attempts > r.Attempts {
		// A later attempt, in a process that resumed the run after this
		// one lost its claim on it, owns the record now.
		return
	}
	cur.Attempts, cur.Notices = r.Attempts, r.Notices
	cur.UpdatedAt = e.now()
	if cur.Status == model.RunCancelled {
		return
	}
	if h != nil && h.diverged != nil {
		cur.Status, cur.Error = model.RunFailed, h.diverged
		return
	}
	cur.Logs = out.Logs
	if out.ResultTruncated || out.LogsTruncated {
		cur.Truncated = &model.Truncated{Result: out.ResultTruncated, Logs: out.LogsTruncated}
	}
	switch out.Status {
	case sandbox.StatusPaused:
		for _, p := range h.pending {
			switch old := cur.PendingItem(p.ID); {
			case old == nil:
				cur.Pending = append(cur.Pending, p)
			case old.Contract != p.Contract:
				*old = p // the tool changed since the decision: ask again
			}
		}
		cur.Status = cur.Awaiting()
	case sandbox.StatusCompleted:
		cur.Status, cur.Result, cur.Error = model.RunCompleted, out.Result, nil
	case sandbox.StatusCancelled:
		cur.Status = model.RunCancelled
		cur.Error = runError(out.Error)
	default:
		cur.Status = model.RunFailed
		cur.Error = runError(out.Error)
	}
}

func runError(e *sandbox.Error) *model.RunError {
	if e == nil {
		return &model.RunError{Code: sandbox.CodeInternal, Message: "the attempt ended without a result or an error"}
	}
	// e.Message already ends with the location (sandbox.attempt.locate).
	// What the code threw is cut to maxErrorChars: `throw new
	// Error("x".repeat(1e7))` put 10 MB in the envelope, past its budget
	// for result and logs, and in the run record.
	// Its head and its tail are kept, where the location is.
	return &model.RunError{Code: cutError(e.Code), Message: cutError(e.Message), Hint: cutError(e.Hint)}
}

// maxErrorChars is the most of a run's error message (and of its code and
// hint) kept in its record and envelope.
const maxErrorChars = 8 << 10

// cutError is s, or its head and tail around a marker, in maxErrorChars
// characters.
func cutError(s string) string {
	if len(s) <= maxErrorChars {
		return s
	}
	return shortenN(s, utf8.RuneCountInString(s), maxErrorChars)
}

// MaxAsks is the most pending items one pause adds: calls the code made
// together ask together, up to this many (in Seq order); the rest ask when
// these are decided. It bounds what the envelope, the approval page and
// the person face at once (each item's arguments are shown up to
// Limits.ArgsPreviewBytes).
const MaxAsks = 20

// host answers the guest's calls for one attempt: from the journal when the
// call already settled, else through policy, a person's decision and the
// upstream.
type host struct {
	e   *Engine
	run *model.Run
	nss *sandbox.Namespaces // what the run sees

	// takenOver: another process resumed the run after this one lost its
	// claim on it (stoppedElsewhere); the attempt stopped and leaves the
	// record to it.
	takenOver atomic.Bool

	mu       sync.Mutex
	journal  map[int]model.JournalEntry // settled calls, by sequence number
	inFlight map[int]inFlight           // calls with an intent and no outcome (a process died)
	sent     map[int]int                // this attempt's journaled intents: the call's intent count
	repeated map[int]bool               // reads an interrupted attempt had sent, made again (JournalEntry.Repeated)
	settled  int                        // calls in the journal, across attempts
	pending  []model.Pending            // this attempt's asks, in the order they came (finish sorts them by Seq)
	expires  time.Time                  // when this attempt's asks expire: one time for all of them (expiry)
	diverged *model.RunError
	// handleBytes is what the run's handles hold (Limits.MaxHandleBytes).
	handleBytes int

	// The run record and the journal: the first call starts storing the
	// record (when it is not stored yet) and opening the journal, and goes
	// on to policy and the upstream meanwhile; settle waits for both before
	// it journals. Resume needs the record only once a call settled.
	ctx      context.Context
	storing  sync.Once
	ready    chan struct{} // closed when storing is done
	stored   bool          // the record exists; read after ready
	log      store.Log
	storeErr error
	release  func() // the hold of a new run, taken when it is stored
	// unsynced is set once a line went into the journal without an
	// fdatasync (a read's outcome, settleRead); stopStoring syncs it when
	// the run paused.
	unsynced atomic.Bool
}

// startStoring stores the record and opens the journal, once, in the
// background.
func (h *host) startStoring() {
	h.storing.Do(func() {
		go func() {
			defer close(h.ready)
			if !h.stored {
				if h.release, h.storeErr = h.e.hold(h.ctx, h.run.ID); h.storeErr != nil {
					return
				}
				// The set the record names is stored first: a resume reads it.
				if h.storeErr = h.e.sets.save(h.ctx, h.e.store, h.nss); h.storeErr != nil {
					return
				}
				if err := h.e.store.Put(h.ctx, store.Runs, h.run.ID, h.run); err != nil {
					h.storeErr = fmt.Errorf("storing run %s: %w", h.run.ID, err)
					return
				}
				h.stored = true
			}
			if h.log, h.storeErr = h.e.store.OpenLog(h.ctx, store.Runs, h.run.ID); h.storeErr != nil {
				h.storeErr = fmt.Errorf("opening the journal of %s: %w", h.run.ID, h.storeErr)
			}
		}()
	})
}

// waitStored waits until the record is stored and the journal open.
func (h *host) waitStored() error {
	<-h.ready
	return h.storeErr
}

// stopStoring waits for storing, if it started, and closes the journal.
// Lines written without an fdatasync (reads' outcomes) are synced first when
// the run will be replayed (it paused), before its record says so. A
// finished run is not replayed: those lines are left for the kernel to
// write, as its final record is (renamed into place without fsync). An
// fdatasync after every such run, even off the answer's path, made the next
// executes wait on the disk (one call back to back over stdio, p50 2.2–3.2 →
// 1.5–2.0 ms).
func (h *host) stopStoring(replayed bool) {
	started := true
	h.storing.Do(func() { started = false })
	if !started {
		return
	}
	<-h.ready
	if h.log == nil {
		return
	}
	if replayed && h.unsynced.Load() {
		if err := h.log.Sync(); err != nil {
			h.e.log.Warn("syncing a journal", "run", h.run.ID, "err", err)
		}
	}
	if err := h.log.Close(); err != nil {
		h.e.log.Warn("closing a journal", "run", h.run.ID, "err", err)
	}
}

func (h *host) CallTool(ctx context.Context, call sandbox.Call) sandbox.CallResult {
	argsDigest := digest(call.Args)
	h.startStoring()
	h.mu.Lock()
	if je, ok := h.journal[call.Seq]; ok {
		h.mu.Unlock()
		if je.Address != call.Address || je.ArgsDigest != argsDigest || je.Connection != call.Connection {
			return h.diverge(call, je, "the journal has")
		}
		return replay(je)
	}
	// A call that comes while the attempt pauses on another is decided
	// as it would be alone: it asks (its own pending item, in the same
	// pause) or goes ahead. The sandbox sends it only when the code issued
	// it before it could see any paused call's result.
	if h.diverged != nil {
		h.mu.Unlock()
		return sandbox.CallResult{Pause: true}
	}
	if h.settled >= h.e.limits.MaxCalls {
		h.mu.Unlock()
		return h.settle(ctx, call, argsDigest, time.Now(), nil, &model.ToolError{Code: "too_many_calls", Message: fmt.Sprintf("the run made %d tool calls, its limit", h.e.limits.MaxCalls), Hint: "do the work in fewer calls, or across runs"})
	}
	f, wasInFlight := h.inFlight[call.Seq]
	h.mu.Unlock()

	start := time.Now()
	if wasInFlight {
		if res, goOn := h.wasInFlight(ctx, call, argsDigest, start, f); !goOn {
			return res
		}
	}
	switch call.Address {
	case sandbox.AddressRead:
		v, terr := h.e.readHandle(ctx, call.Args, h.e.limits.HandleBytes)
		if terr != nil {
			terr.Address = call.Address
		}
		return h.settleRead(ctx, call, argsDigest, start, v, terr)
	case sandbox.AddressSearch, sandbox.AddressDescribe:
		var arg struct {
			Query  string `json:"query"`
			Target string `json:"target"`
		}
		_ = json.Unmarshal(call.Args, &arg)
		var text string
		var err error
		if call.Address == sandbox.AddressSearch {
			text, err = h.e.tools.Search(ctx, arg.Query)
		} else {
			text, err = h.e.tools.Describe(ctx, arg.Target)
		}
		if err != nil {
			return h.settle(ctx, call, argsDigest, start, nil, &model.ToolError{Code: "invalid_request", Message: err.Error(), Address: call.Address})
		}
		v, _ := json.Marshal(text)
		return h.settleRead(ctx, call, argsDigest, start, v, nil)
	}

	t, err := h.e.tools.Tool(ctx, call.Address)
	if err != nil {
		return h.settle(ctx, call, argsDigest, start, nil, &model.ToolError{Code: "unknown_tool", Message: err.Error(), Address: call.Address, Hint: "use hub.search to find tools"})
	}
	verdict, err := h.e.tools.Verdict(ctx, t, call.Connection)
	if err != nil {
		// A policy that cannot be decoded needs a person; a store that
		// does not answer (a database away) needs only time.
		te := &model.ToolError{Code: "policy_error", Message: err.Error(), Address: call.Address, Hint: "a person must fix the policy file"}
		if _, corrupt := errors.AsType[*store.CorruptError](err); !corrupt {
			te.Hint, te.Retryable = "the hub could not read its policy: try again later", true
		}
		return h.settle(ctx, call, argsDigest, start, nil, te)
	}
	if verdict.Action != policy.Deny {
		// A call that can never go out fails here, in the code, and never
		// reaches a person (deny never reads a credential: checked first).
		if terr := h.e.tools.Check(ctx, t, call.Connection, call.Args); terr != nil {
			if terr.Address == "" {
				terr.Address = call.Address
			}
			return h.settle(ctx, call, argsDigest, start, nil, terr)
		}
	}
	switch verdict.Action {
	case policy.Deny:
		return h.settle(ctx, call, argsDigest, start, nil, &model.ToolError{Code: "policy_denied", Message: verdict.Message, Address: call.Address, Status: 403})
	case policy.Ask:
		if res, decided := h.decided(ctx, call, argsDigest, start, t, verdict); decided {
			if res != nil {
				return *res
			}
			break // approved: make the call
		}
		return sandbox.CallResult{Pause: true}
	}

	// A call that may change something is announced in the journal, synced,
	// right before its request goes out (BeforeSend): a process killed
	// before the outcome is journaled leaves the intent, and resume asks a
	// person instead of calling again. A read's intent is not synced: a
	// resume that finds it makes the read again and says so.
	if t.Effect() != model.EffectRead {
		ctx = h.withIntent(ctx, call, argsDigest)
	} else {
		ctx = h.withReadIntent(ctx, call, argsDigest)
	}
	cctx := ctx // every upstream call has its deadline in engine/source
	if h.e.limits.UpstreamTimeout > 0 {
		var cancel context.CancelFunc
		cctx, cancel = context.WithTimeout(ctx, h.e.limits.UpstreamTimeout)
		defer cancel()
	}
	value, terr := h.e.tools.Call(cctx, t, call.Connection, call.Args)
	if terr != nil && terr.Address == "" {
		terr.Address = call.Address
	}
	if ctx.Err() != nil {
		// The attempt was stopped while the call was in flight; whether it
		// happened upstream is unknown, so no outcome is journaled (a
		// write's intent stays: a resume asks a person).
		return sandbox.CallResult{Error: &sandbox.ToolError{Code: "cancelled", Message: "the run was stopped"}}
	}
	if terr != nil && terr.Code == CodeConnectionRequired {
		// No credential yet: wait for a person to store one, then resume.
		h.mu.Lock()
		h.pending = append(h.pending, model.Pending{
			ID:         "c" + strconv.Itoa(call.Seq) + "-connection",
			Kind:       model.PendingConnection,
			Seq:        call.Seq,
			Address:    t.Address,
			Connection: call.Connection,
			Summary:    typegen.FirstSentence(t.Description),
			Reason:     CodeConnectionRequired,
			Message:    terr.Message,
		})
		h.mu.Unlock()
		return sandbox.CallResult{Pause: true}
	}
	if terr == nil && len(value) > h.e.limits.HandleBytes {
		value, terr = h.toHandle(ctx, call, value)
	}
	if t.Effect() == model.EffectRead {
		return h.settleRead(ctx, call, argsDigest, start, value, terr)
	}
	return h.settle(ctx, call, argsDigest, start, value, terr)
}

// toHandle keeps a result too large for the sandbox as a blob, scrubbed
// first (whole, so no slice of it can hold part of a secret), and returns
// the Handle the code gets instead.
func (h *host) toHandle(ctx context.Context, call sandbox.Call, value json.RawMessage) (json.RawMessage, *model.ToolError) {
	if sc := h.scrubber(); sc.Len() > 0 {
		value = sc.JSON(value)
	}
	typ, text := content(value)
	h.mu.Lock()
	over := h.handleBytes+len(text) > h.e.limits.MaxHandleBytes
	if !over {
		h.handleBytes += len(text)
	}
	h.mu.Unlock()
	if over {
		return nil, &model.ToolError{Code: "result_too_large", Address: call.Address, Message: fmt.Sprintf("the result is %d bytes and the run's large results may hold %d in all (%v)", len(text), h.e.limits.MaxHandleBytes, ErrHandleBudget), Hint: "ask the tool for less (a filter, a page), or do the rest in another run"}
	}
	hv, _, err := storeContent(ctx, h.e.store, h.run.ID, handleID(h.run.ID, call.Seq), typ, text)
	if err != nil {
		return nil, &model.ToolError{Code: "internal", Address: call.Address, Message: err.Error()}
	}
	return hv, nil
}

// decided applies a person's decision on this call, if there is one. It
// returns (nil, true) when the call may go ahead, (result, true) when it
// was denied, and (nil, false) after adding a pending approval and pausing.
func (h *host) decided(ctx context.Context, call sandbox.Call, argsDigest string, start time.Time, t *model.Tool, v policy.Verdict) (*sandbox.CallResult, bool) {
	id := "c" + strconv.Itoa(call.Seq)
	// What a person allowed is bound to the tool's version and the
	// connection the call goes through (v.Connection: the default one by
	// its name): allowing a call on one credential allows nothing on
	// another, and a tool changed since asks again.
	allowed := slices.Contains(h.run.AllowedTools, model.AllowedTool(t.Address, v.Connection, t.Contract))
	if allowed && v.Reason != policy.ReasonNew && v.Reason != policy.ReasonChanged && v.Reason != policy.ReasonPaused {
		return nil, true
	}
	// A decision names exactly what it allows: this address, these
	// arguments, this version of the tool. A tool changed since the person
	// decided asks again.
	if p := h.run.PendingItem(id); p != nil && p.Kind == model.PendingApproval && p.Decision != nil && (p.Contract == "" || p.Contract == t.Contract) {
		// (A decision recorded before connections were named holds the
		// call's own "".)
		otherConnection := p.Connection != v.Connection && p.Connection != call.Connection
		if p.Address != call.Address || (p.ArgsDigest != "" && p.ArgsDigest != argsDigest) || otherConnection {
			res := h.diverge(call, model.JournalEntry{Seq: call.Seq, Address: p.Address}, "a person decided on")
			return &res, true
		}
		if p.Decision.Choice == model.ChoiceDeny {
			res := h.settle(ctx, call, argsDigest, start, nil, &model.ToolError{Code: "approval_denied", Message: fmt.Sprintf("a person denied this call to %s", t.Address), Address: t.Address, Status: 403, Hint: "do without this call, or ask the person"})
			return &res, true
		}
		return nil, true
	}
	// A tool allowed for the session runs, unless the hub is paused.
	if allowed && v.Reason != policy.ReasonPaused {
		return nil, true
	}
	preview, size := h.preview(id, call.Args)
	h.mu.Lock()
	h.pending = append(h.pending, model.Pending{
		ID:         id,
		Kind:       model.PendingApproval,
		Seq:        call.Seq,
		Address:    t.Address,
		Connection: v.Connection,
		Contract:   t.Contract,
		ArgsDigest: argsDigest,
		Summary:    typegen.FirstSentence(t.Description),
		Args:       preview,
		ArgsSize:   size,
		Reason:     v.Reason,
		Message:    v.Message,
		ExpiresAt:  h.expiry(),
	})
	h.mu.Unlock()
	return nil, false
}

// expiry is when this attempt's asks expire, with h.mu held: the same time
// for every call that asks in one pause, so that they are shown together,
// in Seq order, wherever asks are listed by when they expire.
func (h *host) expiry() time.Time {
	if h.expires.IsZero() {
		h.expires = h.e.now().Add(h.e.limits.ApprovalTTL)
	}
	return h.expires
}

// preview is the arguments a person reads in the pending item id:
// scrubbed before it is cut (a cut could split a secret), every field kept
// (PreviewArgs). When it shortened them, the whole arguments, scrubbed,
// are kept beside the run for the person to read (FullArgs), and size is
// their length.
func (h *host) preview(id string, args json.RawMessage) (preview json.RawMessage, size int) {
	full := h.scrubber().JSON(args)
	var compact bytes.Buffer
	if json.Compact(&compact, full) != nil {
		return PreviewArgs(full, h.e.limits.ArgsPreviewBytes), 0 // not JSON: a string, shortened
	}
	preview = PreviewArgs(compact.Bytes(), h.e.limits.ArgsPreviewBytes)
	if bytes.Equal(preview, visible.Escape(compact.Bytes())) || compact.Len() > maxFullArgs {
		return preview, 0 // nothing shortened, or too long to keep
	}
	blob := handleBlob{Run: h.run.ID, Type: "json", Content: compact.String()}
	if err := h.e.store.Put(h.ctx, store.Blobs, fullArgsID(h.run.ID, id), blob); err != nil {
		h.e.log.Warn("keeping a pending call's whole arguments", "run", h.run.ID, "call", id, "err", err)
		return preview, 0
	}
	return preview, compact.Len()
}

// scrubber removes every secret the run may have seen (Tools.Scrubber).
func (h *host) scrubber() *scrub.Scrubber { return h.e.tools.Scrubber(h.ctx, nil) }

// settle journals a call's outcome, synced, then answers the guest. The
// outcome is scrubbed before either: nothing unscrubbed enters the sandbox
// or the journal.
func (h *host) settle(ctx context.Context, call sandbox.Call, argsDigest string, start time.Time, value json.RawMessage, terr *model.ToolError) sandbox.CallResult {
	return h.settleAs(ctx, call, argsDigest, start, value, terr, true)
}

// settleRead is settle for the outcome of a call that is read-only (a
// read-only tool, hub.search, hub.describe, hub.read): its line goes into
// the journal, in order, before the guest sees the outcome, but without
// waiting for an fdatasync. A process that dies leaves the line written
// (the kernel has it); only a machine crash can lose it, and then the read
// is made again on resume, which I6 allows. Anything the code did outside
// the run with the value is a write, whose intent line is synced before it
// goes out, and that fdatasync of the same append-only file makes every
// earlier line durable too. A run that pauses syncs its journal before its
// record says so (stopStoring).
func (h *host) settleRead(ctx context.Context, call sandbox.Call, argsDigest string, start time.Time, value json.RawMessage, terr *model.ToolError) sandbox.CallResult {
	return h.settleAs(ctx, call, argsDigest, start, value, terr, false)
}

func (h *host) settleAs(ctx context.Context, call sandbox.Call, argsDigest string, start time.Time, value json.RawMessage, terr *model.ToolError, durable bool) sandbox.CallResult {
	if sc := h.scrubber(); sc.Len() > 0 {
		if len(value) > 0 {
			value = sc.JSON(value)
		}
		terr = scrubToolError(sc, terr)
	}
	terr = cutToolError(terr, h.e.limits.HandleBytes)
	je := model.JournalEntry{
		Seq:        call.Seq,
		Address:    call.Address,
		Connection: call.Connection,
		ArgsDigest: argsDigest,
		OK:         terr == nil,
		Value:      value,
		Error:      terr,
		Millis:     time.Since(start).Milliseconds(),
		At:         h.e.now(),
	}
	h.mu.Lock()
	je.Repeated = h.repeated[call.Seq]
	h.mu.Unlock()
	line, err := json.Marshal(je)
	if err == nil {
		err = h.waitStored()
	}
	if err == nil && durable {
		err = h.log.Append(line)
	} else if err == nil {
		h.unsynced.Store(true)
		err = h.log.Write(line)
	}
	if err != nil {
		h.e.log.Error("journaling a call", "run", h.run.ID, "seq", call.Seq, "err", err)
		if durable && h.unrecorded(call, argsDigest, err) {
			return sandbox.CallResult{Pause: true}
		}
		return sandbox.CallResult{Error: &sandbox.ToolError{Code: "journal_failed", Message: "the hub could not record the call: " + err.Error()}}
	}
	h.mu.Lock()
	h.journal[call.Seq] = je
	h.settled++
	h.mu.Unlock()
	return replay(je)
}

// cutToolError keeps at most limit bytes of an error's message and hint
// (the head, and how much was cut). A result over the limit becomes a
// handle; an error has no handle, and an upstream's error text of 20 MB
// went whole into the journal, whose lines a resume reads with a 16 MB
// budget, and into the sandbox. It is cut after scrubbing, so a cut never
// splits a secret.
func cutToolError(e *model.ToolError, limit int) *model.ToolError {
	if e == nil || (len(e.Message) <= limit && len(e.Hint) <= limit) {
		return e
	}
	cp := *e
	cp.Message, cp.Hint = cutText(e.Message, limit), cutText(e.Hint, limit)
	return &cp
}

// cutText is s, or its head and a marker saying how many bytes follow,
// within limit bytes.
func cutText(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	marker := "…[" + strconv.Itoa(len(s)) + " bytes, the rest not shown]"
	keep := max(limit-len(marker), 0)
	for keep > 0 && !utf8.RuneStart(s[keep]) {
		keep--
	}
	return s[:keep] + marker
}

// entries is the journal as the attempt left it, in order.
func (h *host) entries() []model.JournalEntry {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]model.JournalEntry, 0, len(h.journal))
	for _, je := range h.journal {
		out = append(out, je)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Seq < out[j].Seq })
	return out
}

func replay(je model.JournalEntry) sandbox.CallResult {
	if je.OK {
		v := je.Value
		if len(v) == 0 {
			v = json.RawMessage("null")
		}
		return sandbox.CallResult{Value: v}
	}
	te := je.Error
	return sandbox.CallResult{Error: &sandbox.ToolError{Code: te.Code, Message: te.Message, Hint: te.Hint, Status: te.Status, Retryable: te.Retryable}}
}

// diverge fails the run: the code took another path than the journal (or
// the decision, or the intent: against names which) says.
func (h *host) diverge(call sandbox.Call, je model.JournalEntry, against string) sandbox.CallResult {
	what := fmt.Sprintf("%s %s there", against, je.Address)
	if je.Address == call.Address {
		// Same tool: "…made call 2 to x, but the journal has x there" said
		// nothing of what differed.
		what = fmt.Sprintf("%s that call with other arguments or another connection", against)
	}
	h.mu.Lock()
	if h.diverged == nil {
		h.diverged = &model.RunError{
			Code:    "divergence",
			Message: fmt.Sprintf("on resume the code made call %d to %s, but %s: the code is not deterministic (it must not depend on anything but tool results, Date and Math.random), or its journal lost a line", call.Seq, call.Address, what),
			Hint:    "run the code again as a new run",
		}
	}
	h.mu.Unlock()
	return sandbox.CallResult{Pause: true}
}
