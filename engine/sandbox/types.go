package sandbox

import (
	"context"
	"encoding/json"
	"time"
)

// Limits bound one attempt. The zero value of every field means its default.
type Limits struct {
	ComputeMs         int // guest compute time: CPU time of the guest's thread on Linux (wall time elsewhere), so a busy machine does not use it up; not counted while waiting on tool calls or timers (10,000)
	WallMs            int // wall time of the attempt (90,000)
	MemoryBytes       int // linear memory cap minus 16 MB, checked after each guest entry; cannot exceed Options.MemoryBytes (64 MB)
	MaxCalls          int // tool calls per attempt, hub.search/describe included (500)
	MaxConcurrent     int // tool calls in flight at once (8)
	InlineResultBytes int // result JSON and logs together (24 KB)
	UpstreamTimeoutMs int // deadline of the ctx given to each Host.CallTool; 0: none (the host bounds its calls: each upstream call has its own deadline)
	QueueMs           int // how long an attempt may wait for a turn when Options.MaxRunning attempts run already (60,000)
}

func (l Limits) withDefaults() Limits {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&l.ComputeMs, 10_000)
	def(&l.WallMs, 90_000)
	def(&l.MemoryBytes, 64<<20)
	def(&l.MaxCalls, 500)
	def(&l.MaxConcurrent, 8)
	def(&l.InlineResultBytes, 24<<10)
	def(&l.QueueMs, 60_000)
	return l
}

// Request is one attempt of a run.
type Request struct {
	// JS is the body of an async function, plain JavaScript (code.Prepare's output).
	JS string
	// Seed drives Math.random, crypto.randomUUID and crypto.getRandomValues.
	Seed int64
	// Clock is where the logical clock starts: Date.now() returns it until a
	// timer fires, and each fired timer advances it to the timer's due time.
	// The zero time means the Unix epoch.
	Clock time.Time
	// Namespaces maps each namespace to its tool names (the part after the dot
	// of a tool address). Each becomes a frozen global.
	Namespaces map[string][]string
	// NamespaceSet, when set, is used instead of Namespaces: a set built
	// once and shared by many runs (NewNamespaces).
	NamespaceSet *Namespaces
	Limits       Limits
	Host         Host
	// Key is who the attempt is for (a tenant), when one Driver serves
	// many: run slots and compute turns are served fairly across keys, and
	// a key holds at most Options.MaxRunningPerKey and MaxComputingPerKey
	// of them. "" is a Driver's own hub, without a cap.
	Key string
	// ReplayCalls is how many calls the host will answer from a journal
	// (resume). Until their results have all been delivered, timers fire
	// without waiting in real time; the logical clock advances the same way.
	ReplayCalls int
}

// Reserved addresses that hub.search(query), hub.describe(target) and
// hub.read(handle, {offset, length, jsonPath}) call through Host.CallTool,
// with Args {"query": "..."}, {"target": "..."} and {"handle": "...",
// "offset"?: n, "length"?: n, "jsonPath"?: "..."}.
const (
	AddressSearch   = "hub.search"
	AddressDescribe = "hub.describe"
	AddressRead     = "hub.read"
)

// Host answers the guest's tool calls. CallTool is called on its own
// goroutine, up to Limits.MaxConcurrent at once; it must return when ctx is done.
type Host interface {
	CallTool(ctx context.Context, call Call) CallResult
}

// Call is one tool call issued by the guest.
type Call struct {
	Seq        int             // 1, 2, 3… in the order the guest issued calls
	Address    string          // "namespace.tool", or AddressSearch / AddressDescribe
	Args       json.RawMessage // always a JSON object
	Connection string          // from the call's {connection: "work"} option, or ""
}

// CallResult answers a Call: either Value (any JSON), Error, or Pause.
type CallResult struct {
	Value json.RawMessage
	Error *ToolError
	// Pause ends the attempt with StatusPaused when the guest would get
	// this call's result: results reach the guest in Seq order, so those of
	// earlier calls are delivered first (and the guest may issue more
	// calls meanwhile). From then on the guest runs no more; every call it
	// issued, queued or in flight, still reaches the host, and no call
	// from this one on is answered in this attempt. Which calls were
	// issued when the attempt pauses depends only on the results the guest
	// got, not on the order the host answered in.
	Pause bool
}

// ToolError is a failed call; the guest sees a catchable ToolError.
type ToolError struct {
	Code      string `json:"code"`
	Message   string `json:"message"`
	Hint      string `json:"hint,omitempty"`
	Status    int    `json:"status,omitempty"`
	Retryable bool   `json:"retryable,omitempty"`
}

// Status is how an attempt ended.
type Status string

const (
	StatusCompleted Status = "completed"
	StatusFailed    Status = "failed"
	StatusPaused    Status = "paused"
	StatusCancelled Status = "cancelled"
)

// CodeResultTooDeep is the ToolError of a call whose result nests deeper
// than MaxResultDepth.
const CodeResultTooDeep = "result_too_deep"

// Error codes of a failed or cancelled attempt.
const (
	CodeSyntax         = "syntax_error"
	CodeRuntime        = "runtime_error"
	CodeTool           = "tool_error" // an uncaught ToolError
	CodeImport         = "import_blocked"
	CodeComputeTimeout = "timeout_compute"
	CodeWallTimeout    = "timeout_wall"
	CodeMemory         = "memory_limit"
	CodeStackOverflow  = "stack_overflow"
	CodeTooManyCalls   = "too_many_calls"
	CodeNeverSettled   = "never_settled"
	CodeCancelled      = "cancelled"
	CodeBusy           = "busy" // no turn within Limits.QueueMs
	CodeInternal       = "internal_error"
)

// Error says why an attempt failed.
type Error struct {
	Code    string
	Message string
	Hint    string
	// Tool is set for CodeTool: the uncaught ToolError.
	Tool *ToolError
	// Line and Column locate a runtime error in Request.JS, when known.
	Line, Column int
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Outcome is the end of an attempt.
type Outcome struct {
	Status Status
	// Result is the JSON of the returned value (undefined → null). When it is
	// larger than Limits.InlineResultBytes it is replaced by a JSON string
	// holding its first bytes, and ResultTruncated is set.
	Result          json.RawMessage
	ResultTruncated bool
	// Full is the whole result when it was cut (ResultTruncated), for the
	// host to keep as a handle; nil otherwise.
	Full  json.RawMessage
	Error *Error
	// Logs is console output, one entry per call, in the budget left by Result.
	Logs          []string
	LogsTruncated bool
	Calls         int
	Compute, Wall time.Duration
	// Queued is how long the attempt waited for a turn (Options.MaxRunning).
	Queued time.Duration
}

func computeTimeoutError() *Error {
	return &Error{Code: CodeComputeTimeout, Message: "the code used more than its compute time (time spent waiting on tool calls does not count)", Hint: "look for an infinite loop or a catastrophic regular expression; do less work per run"}
}

// WallTimeoutError is how an attempt that outlived Limits.WallMs ends.
func WallTimeoutError() *Error {
	return &Error{Code: CodeWallTimeout, Message: "the run took longer than its wall time limit", Hint: "make fewer or smaller calls, or split the work across runs"}
}

func cancelledError() *Error {
	return &Error{Code: CodeCancelled, Message: "the run was cancelled by the host"}
}

func memoryError() *Error {
	return &Error{Code: CodeMemory, Message: "the code used more memory than the sandbox allows", Hint: "process data in smaller pieces and return only what is needed"}
}
