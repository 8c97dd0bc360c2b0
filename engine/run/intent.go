package run

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/sandbox"
	"github.com/capabilities-sh/capabilities/engine/typegen"
	"github.com/capabilities-sh/capabilities/store"
)

// CodeSkippedInFlight is the ToolError code the code gets for a call that
// was in flight when the hub stopped and that a person chose to skip.
const CodeSkippedInFlight = "skipped_in_flight"

// Write-ahead intents. A call that is not read-only is journaled twice: an
// intent line, synced right before its request goes out (Tools.Call calls
// BeforeSend once the credential and the upstream's session are ready), and
// its outcome once it settles. A process killed in between leaves an intent without an
// outcome: the call may have happened upstream. Resume does not make it
// again on its own: a write waits for a person to retry or skip it. A read
// after the run's first call has an intent too, not synced (a killed
// process leaves it in the file; only a machine crash loses it): a resume
// that finds it makes the read again (reads may be repeated) and its
// outcome says so (Repeated).

// journalState is what a journal says, call by call.
type journalState struct {
	settled  map[int]model.JournalEntry // the outcome of each settled call
	inFlight map[int]inFlight           // calls whose last intent has no outcome
}

// inFlight is a call whose intent was journaled and whose outcome was not.
type inFlight struct {
	intent model.JournalEntry
	n      int // the call's intents so far: 1 the first time, 2 after a retry…
}

// readJournal replays a journal's lines in order. A line without the intent
// flag is an outcome (journals written before intents have only those).
func readJournal(journal []model.JournalEntry) journalState {
	js := journalState{settled: map[int]model.JournalEntry{}, inFlight: map[int]inFlight{}}
	intents := map[int]int{}
	for _, je := range journal {
		switch {
		case !je.Intent:
			js.settled[je.Seq] = je
			delete(js.inFlight, je.Seq)
		default:
			intents[je.Seq]++
			if _, ok := js.settled[je.Seq]; !ok {
				js.inFlight[je.Seq] = inFlight{intent: je, n: intents[je.Seq]}
			}
		}
	}
	return js
}

// settledOnly drops the intent lines of a journal.
func settledOnly(journal []model.JournalEntry) []model.JournalEntry {
	out := journal[:0:0]
	for _, je := range journal {
		if !je.Intent {
			out = append(out, je)
		}
	}
	return out
}

// inFlightID is the id of the pending item for the n-th intent of call seq:
// a retry that was cut short again asks again, under a new id.
func inFlightID(seq, n int) string {
	id := "c" + strconv.Itoa(seq) + "-in-flight"
	if n > 1 {
		id += "-" + strconv.Itoa(n)
	}
	return id
}

// sendKey is the context key of what must happen right before a call's
// request goes out.
type sendKey struct{}

// withIntent returns the context of a call that is not read-only: its
// intent is journaled when Tools.Call calls BeforeSend.
func (h *host) withIntent(ctx context.Context, call sandbox.Call, argsDigest string) context.Context {
	return context.WithValue(ctx, sendKey{}, func() error { return h.intend(call, argsDigest) })
}

// withReadIntent returns the context of a read: its intent is journaled,
// not synced, when Tools.Call calls BeforeSend.
func (h *host) withReadIntent(ctx context.Context, call sandbox.Call, argsDigest string) context.Context {
	return context.WithValue(ctx, sendKey{}, func() error { h.intendRead(call, argsDigest); return nil })
}

// BeforeSend is what Tools.Call calls right before the request goes out to
// the upstream, after the credential and the session are ready: for a call
// that is not read-only, the run journals its intent, synced. An error means
// the request must not go out.
func BeforeSend(ctx context.Context) error {
	if f, ok := ctx.Value(sendKey{}).(func() error); ok {
		return f()
	}
	return nil
}

// intend journals, synced, that a call that is not read-only is about to
// go out.
func (h *host) intend(call sandbox.Call, argsDigest string) error {
	line, err := json.Marshal(model.JournalEntry{
		Seq:        call.Seq,
		Address:    call.Address,
		Connection: call.Connection,
		ArgsDigest: argsDigest,
		Intent:     true,
		At:         h.e.now(),
	})
	if err == nil {
		err = h.waitStored()
	}
	if err == nil {
		if err = h.stoppedElsewhere(false); err != nil {
			return err
		}
	}
	if err == nil {
		err = h.log.Append(line)
	}
	if err == nil {
		// Once more with the intent in: a process that resumed the run
		// meanwhile (this one's claim ended: a lease it could not renew
		// in time) recorded its attempt before it read the journal, so
		// either it sees this intent (and asks a person) or this sees
		// its attempt (and does not send).
		err = h.stoppedElsewhere(true)
	}
	if err != nil {
		return fmt.Errorf("journaling the intent of call %d: %w", call.Seq, err)
	}
	h.mu.Lock()
	if h.sent == nil {
		h.sent = map[int]int{}
	}
	h.sent[call.Seq] = h.inFlight[call.Seq].n + 1
	h.mu.Unlock()
	return nil
}

// intendRead journals, without an fdatasync, that a read is about to go
// out. The run's first call has none: it goes out while the run is being
// stored, and is never held back for it (a run of one read, the commonest,
// keeps a journal of one line). A later read waits for the journal only
// when it goes out before its run's first call settled (calls made
// together). A line that cannot be written costs only the note on a
// repeat: the read goes out.
func (h *host) intendRead(call sandbox.Call, argsDigest string) {
	if call.Seq == 1 {
		return
	}
	line, err := json.Marshal(model.JournalEntry{
		Seq:        call.Seq,
		Address:    call.Address,
		Connection: call.Connection,
		ArgsDigest: argsDigest,
		Intent:     true,
		At:         h.e.now(),
	})
	if err == nil {
		err = h.waitStored()
	}
	if err == nil {
		err = h.log.Write(line)
	}
	if err != nil {
		h.e.log.Warn("journaling the intent of a read", "run", h.run.ID, "seq", call.Seq, "err", err)
	}
}

// unrecorded pauses the run on a write whose request went out (its intent
// is journaled) but whose outcome could not be journaled (a full disk):
// it may have happened, and the code must not be told it failed, or it
// may make it again. The pending item is the one a resume finds for the
// intent without an outcome (wasInFlight), so a person's retry or skip
// decides it. It returns false for a call whose request never went out.
func (h *host) unrecorded(call sandbox.Call, argsDigest string, cause error) bool {
	h.mu.Lock()
	n := h.sent[call.Seq]
	h.mu.Unlock()
	if n == 0 {
		return false
	}
	id := inFlightID(call.Seq, n)
	summary := ""
	if t, err := h.e.tools.Tool(h.ctx, call.Address); err == nil {
		summary = typegen.FirstSentence(t.Description)
	}
	h.pauseInFlight(call, argsDigest, id, summary, "this call was made but the hub could not record its outcome ("+cause.Error()+"); it may have happened. Retry makes it again; skip gives the code a ToolError "+CodeSkippedInFlight)
	return true
}

// errCancelled stops a write whose run a person cancelled from another
// process.
var errCancelled = errors.New("a person cancelled the run")

// errTakenOver stops a write whose run another process resumed: this
// process's claim on the run had ended (it could not renew its lease in
// time: paused, or cut off from the database), and the other attempt makes
// the run's calls now.
var errTakenOver = errors.New("another process resumed the run after this one lost its claim on it")

// stoppedElsewhere says whether the run's record says a person cancelled
// it (`hub cancel` in another process, which cannot stop this attempt
// itself) or another process resumed it (a later attempt), and then stops
// the attempt: the write about to go out does not, nor any after it.
// Before, a run cancelled while it ran in a serve process went on making
// its writes and answered "completed"; and a process that lost its lease
// went on with the writes the process that took the run over made too.
// strict: a record that cannot be read stops the write as well (checked
// after the intent is journaled); otherwise the write goes ahead, as
// before. One or two reads of the record per write, beside the write's
// synced intent.
func (h *host) stoppedElsewhere(strict bool) error {
	r, err := store.Get[model.Run](h.ctx, h.e.store, store.Runs, h.run.ID)
	var why error
	switch {
	case err != nil && strict:
		return fmt.Errorf("checking that this process still runs %s: %w", h.run.ID, err)
	case err != nil:
		return nil
	case r.Status == model.RunCancelled:
		why = errCancelled
	case r.Attempts > h.run.Attempts:
		why = errTakenOver
		h.takenOver.Store(true)
	default:
		return nil
	}
	h.e.mu.Lock()
	stop := h.e.running[h.run.ID]
	h.e.mu.Unlock()
	if stop != nil {
		stop()
	}
	return why
}

// wasInFlight decides a call whose intent is in the journal without an
// outcome: it may have happened. A read goes ahead again, its outcome
// marked Repeated; a write goes
// ahead only on a person's retry (once), settles with skipped_in_flight on
// their skip (deny), and otherwise pauses the run on a pending item of kind
// in_flight. It returns true when the call may go ahead.
func (h *host) wasInFlight(ctx context.Context, call sandbox.Call, argsDigest string, start time.Time, f inFlight) (sandbox.CallResult, bool) {
	if f.intent.Address != call.Address || f.intent.ArgsDigest != argsDigest || f.intent.Connection != call.Connection {
		return h.diverge(call, f.intent, "the journal has"), false
	}
	t, err := h.e.tools.Tool(ctx, call.Address)
	if err == nil && t.Effect() == model.EffectRead {
		h.mu.Lock()
		if h.repeated == nil {
			h.repeated = map[int]bool{}
		}
		h.repeated[call.Seq] = true
		h.mu.Unlock()
		return sandbox.CallResult{}, true
	}
	id := inFlightID(call.Seq, f.n)
	if p := h.run.PendingItem(id); p != nil && p.Decision != nil {
		if p.Decision.Choice == model.ChoiceDeny {
			return h.settle(ctx, call, argsDigest, start, nil, &model.ToolError{
				Code:    CodeSkippedInFlight,
				Message: fmt.Sprintf("call %d to %s was in flight when the hub stopped, and a person chose to skip it: it may or may not have happened", call.Seq, call.Address),
				Address: call.Address,
				Status:  409,
				Hint:    "check with the person whether it happened before doing it again",
			}), false
		}
		return sandbox.CallResult{}, true
	}
	summary := ""
	if t != nil {
		summary = typegen.FirstSentence(t.Description)
	}
	h.pauseInFlight(call, argsDigest, id, summary, "this call was in flight when the hub stopped; it may have happened. Retry makes it again; skip gives the code a ToolError "+CodeSkippedInFlight)
	return sandbox.CallResult{Pause: true}, false
}

// pauseInFlight pauses the attempt on a call that may have happened: the
// person's retry (once) or skip (deny) decides it.
func (h *host) pauseInFlight(call sandbox.Call, argsDigest, id, summary, message string) {
	preview, size := h.preview(id, call.Args)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.pending = append(h.pending, model.Pending{
		ID:         id,
		Kind:       model.PendingInFlight,
		Seq:        call.Seq,
		Address:    call.Address,
		Connection: call.Connection,
		ArgsDigest: argsDigest,
		Summary:    summary,
		Args:       preview,
		ArgsSize:   size,
		Reason:     model.PendingInFlight,
		Message:    message,
		ExpiresAt:  h.expiry(),
	})
}
