package model

import (
	"encoding/json"
	"time"
)

// RunStatus is where a run is in its life.
type RunStatus string

// The statuses are the envelope's words, in run records and everywhere a
// run is shown.
const (
	RunRunning            RunStatus = "running"
	RunAwaitingApproval   RunStatus = "awaiting_approval"   // paused: a call waits for a person's decision
	RunAwaitingConnection RunStatus = "awaiting_connection" // paused: a call waits for a credential
	RunCompleted          RunStatus = "completed"
	RunFailed             RunStatus = "failed"
	RunCancelled          RunStatus = "cancelled"
	RunExpired            RunStatus = "expired" // a pending item expired before a person decided
)

// RunInterrupted is never stored: it is what a run recorded running is
// shown as when no process holds it (store.Held), because the process that
// ran it died (killed, crashed, the machine stopped) before the run ended.
// A person resumes it (a call that was in flight then asks about itself:
// it may have happened) or cancels it. The run engine decides it
// (run.Engine.Effective).
const RunInterrupted RunStatus = "interrupted"

// runAwaitingInput is what run records said of a paused run before the
// statuses took the envelope's words; reading one gives Awaiting's status.
const runAwaitingInput RunStatus = "awaiting_input"

// Done reports whether the run can no longer change.
func (s RunStatus) Done() bool {
	return s == RunCompleted || s == RunFailed || s == RunCancelled || s == RunExpired
}

// Paused reports whether the run waits on pending items.
func (s RunStatus) Paused() bool {
	return s == RunAwaitingApproval || s == RunAwaitingConnection
}

// Pending item kinds.
const (
	PendingApproval   = "approval"
	PendingConnection = "connection"
	// PendingInFlight is a call that was in flight when the hub stopped: its
	// intent is in the journal, its outcome is not, so it may have happened.
	// A person decides: once retries it, deny skips it (the code gets a
	// ToolError skipped_in_flight).
	PendingInFlight = "in_flight"
)

// Choice is a person's decision on a pending call.
type Choice string

const (
	ChoiceOnce   Choice = "once"   // this call runs
	ChoiceRun    Choice = "run"    // this tool runs for the rest of the run
	ChoiceAlways Choice = "always" // a rule pinned to the tool's current contract
	ChoiceDeny   Choice = "deny"   // the call fails inside the code with ToolError approval_denied
)

// Choices lists the choices in the order they are offered.
var Choices = []Choice{ChoiceOnce, ChoiceRun, ChoiceAlways, ChoiceDeny}

// Decision is a person's answer to a pending item, with the channel it came
// through (cli, approval page, desktop, elicitation).
type Decision struct {
	Choice  Choice `json:"choice"`
	Channel string `json:"channel"`
	// By is who decided, when the channel knows it: on a hosted hub, the
	// signed-in person's account. Empty on a local hub.
	By string    `json:"by,omitempty"`
	At time.Time `json:"at"`
}

// AllowedTool is AllowedTools' entry for a tool a person allowed for the
// rest of a run, in one version, through one connection: the address,
// "@connection" when the call went through a named one, and "#contract".
// A tool that changes, or a call through another credential, asks again.
func AllowedTool(address, connection, contract string) string {
	s := address
	if connection != "" {
		s += "@" + connection
	}
	return s + "#" + contract
}

// Pending is something a run waits for: a person's approval of one call, or
// a credential for a connection.
type Pending struct {
	ID         string          `json:"id"` // "c<seq>", stable across attempts
	Kind       string          `json:"kind"`
	Seq        int             `json:"seq"`
	Address    string          `json:"address"`
	Connection string          `json:"connection,omitempty"`
	Contract   string          `json:"contract,omitempty"`   // the version of the tool a decision allows
	ArgsDigest string          `json:"argsDigest,omitempty"` // the exact arguments a decision allows
	Summary    string          `json:"summary"`              // the first sentence of the tool's description
	Args       json.RawMessage `json:"args,omitempty"`       // redacted, capped at 4 KB
	// ArgsSize is the whole arguments' size in bytes when Args shows them
	// shortened; the run engine keeps them whole for a person to read.
	ArgsSize  int       `json:"argsSize,omitempty"`
	Reason    string    `json:"reason,omitempty"`    // the policy reason code
	Message   string    `json:"message"`             // why it waits, in a sentence
	ExpiresAt time.Time `json:"expiresAt,omitempty"` // when an undecided item expires the run
	Decision  *Decision `json:"decision,omitempty"`
}

// AwaitsDecision reports whether the item waits for a person's decision: an
// undecided approval, or an undecided call that was in flight when the hub
// stopped (retry is recorded as once, skip as deny). A connection waits for
// a credential instead.
func (p *Pending) AwaitsDecision() bool {
	return p.Decision == nil && (p.Kind == PendingApproval || p.Kind == PendingInFlight)
}

// RunError is why a run failed.
type RunError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Hint    string `json:"hint,omitempty"`
}

// Run is runs/<id>.json: one execute, across its attempts. The calls it made
// are in the journal beside it.
type Run struct {
	ID        string          `json:"id"`
	Status    RunStatus       `json:"status"`
	Code      string          `json:"code"`
	Seed      int64           `json:"seed"`
	Clock     time.Time       `json:"clock"` // the logical clock's start
	CreatedAt time.Time       `json:"createdAt"`
	UpdatedAt time.Time       `json:"updatedAt"`
	Attempts  int             `json:"attempts"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     *RunError       `json:"error,omitempty"`
	Logs      []string        `json:"logs,omitempty"`
	Notices   []string        `json:"notices,omitempty"`
	Truncated *Truncated      `json:"truncated,omitempty"`
	Pending   []Pending       `json:"pending,omitempty"`
	// AllowedTools are tools a person allowed for the rest of this run,
	// each in one version through one connection (AllowedTool).
	AllowedTools []string `json:"allowedTools,omitempty"`
	// UsedNonces are the one-time states of elicitation answers already
	// accepted for this run: a replayed answer is refused.
	UsedNonces []string `json:"usedNonces,omitempty"`
	// Namespaces is the digest of the namespaces and tools the run's first
	// attempt saw (kept as blobs/namespaces-<digest>.json): a resumed run
	// replays with the same ones.
	Namespaces string `json:"namespaces,omitempty"`
}

// Truncated says which parts of the envelope were cut to the inline budget.
type Truncated struct {
	Result bool `json:"result,omitempty"`
	Logs   bool `json:"logs,omitempty"`
	// Calls is how many settled calls the envelope's list leaves out
	// between its first and last ones (set on the envelope only).
	Calls int `json:"calls,omitempty"`
}

// Awaiting is the status of the run paused on its pending items: a
// connection still without its credential says awaiting_connection,
// anything else awaiting_approval.
func (r *Run) Awaiting() RunStatus {
	for _, p := range r.Pending {
		if p.Decision == nil && p.Kind == PendingConnection {
			return RunAwaitingConnection
		}
	}
	return RunAwaitingApproval
}

// UnmarshalJSON reads a run record, also one written before the statuses
// took the envelope's words ("awaiting_input").
func (r *Run) UnmarshalJSON(b []byte) error {
	type record Run
	if err := json.Unmarshal(b, (*record)(r)); err != nil {
		return err
	}
	if r.Status == runAwaitingInput {
		r.Status = r.Awaiting()
	}
	return nil
}

// PendingItem returns the pending item with the id, or nil.
func (r *Run) PendingItem(id string) *Pending {
	for i := range r.Pending {
		if r.Pending[i].ID == id {
			return &r.Pending[i]
		}
	}
	return nil
}

// JournalEntry is one line of runs/<id>.journal.jsonl: a tool call as it
// settled (an outcome), or, with Intent, a call about to go out. Replay
// answers a call with the same sequence number from its outcome; an intent
// with no outcome after it is a call that may have happened. A line without
// the intent flag is an outcome, as in journals written before intents.
type JournalEntry struct {
	Seq        int             `json:"seq"`
	Address    string          `json:"address"`
	Connection string          `json:"connection,omitempty"`
	ArgsDigest string          `json:"argsDigest"` // SHA-256 of the canonical arguments
	OK         bool            `json:"ok"`
	Value      json.RawMessage `json:"value,omitempty"` // the result given to the code (scrubbed)
	Error      *ToolError      `json:"error,omitempty"`
	Millis     int64           `json:"ms"`
	At         time.Time       `json:"at"`
	// Intent marks the line written right before the request of a call
	// goes out: synced for a call that is not read-only, not for a read
	// (which has none as its run's first call, nor in journals written
	// before read intents). OK, Value, Error and Millis are unset.
	Intent bool `json:"intent,omitempty"`
	// Repeated marks the outcome of a read that an earlier attempt had
	// sent (its intent has no outcome: the attempt was interrupted) and
	// that this one made again. Reads may be repeated (I6 is about writes);
	// the run's record says so.
	Repeated bool `json:"repeated,omitempty"`
}

// ToolError is what a failed call gives the code: a ToolError in the guest.
type ToolError struct {
	Code      string `json:"code"`
	Message   string `json:"message"`
	Address   string `json:"address,omitempty"`
	Status    int    `json:"status,omitempty"`
	Hint      string `json:"hint,omitempty"`
	Retryable bool   `json:"retryable,omitempty"`
}
