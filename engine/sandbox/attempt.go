package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/fastschema/qjs"
)

const (
	importMessage = "import() and import.meta are not available in the sandbox: tools are globals (e.g. github.search_issues(...)) and no module can be loaded"
	importHint    = "remove the import and call the tools directly"
)

// wrapperPrefix keeps the model's first line on line 1.
const wrapperPrefix = "(async function () {"

// attempt is the state of one Run. Only the Run goroutine touches it, except
// results, which call goroutines send on done.
type attempt struct {
	req Request
	nss *Namespaces
	lim Limits
	v   *vm
	d   *Driver
	cpu bool // holding a compute turn
	// turnAt is when it took its compute turn (yield).
	turnAt time.Time
	// trapped: a call into the guest ended in a panic (a trap, the
	// interrupt), so its runtime may be mid-call: it is closed, not reset.
	trapped bool

	parent   context.Context // the caller's ctx
	callCtx  context.Context // handed to Host.CallTool
	stopCall context.CancelFunc
	wg       sync.WaitGroup

	compute time.Duration
	elapsed int64 // logical ms since Request.Clock

	nextSeq  int
	queue    []Call
	inflight int
	results  map[int]CallResult
	delivery int // next Seq to deliver
	done     chan callDone
	pausing  bool
	timers   map[int]int64 // id → due (logical ms)

	logs     []string
	finished bool
	result   string
	fail     *Error
}

type callDone struct {
	seq int
	res CallResult
}

// Run runs one attempt. It never panics and always returns an Outcome.
func (d *Driver) Run(ctx context.Context, req Request) Outcome {
	start := time.Now()
	lim := req.Limits.withDefaults()
	queued, e := d.turn(ctx, req.Key, lim)
	if e != nil {
		out := failed(e)
		if e.Code == CodeCancelled {
			out.Status = StatusCancelled
		}
		out.Queued, out.Wall = queued, time.Since(start)
		return out
	}
	defer d.doneRunning(req.Key)
	n := d.active.Add(1)
	defer func() {
		d.ended.Store(time.Now().UnixNano())
		d.active.Add(-1)
	}()
	for p := d.peak.Load(); n > p && !d.peak.CompareAndSwap(p, n); p = d.peak.Load() {
	}
	nss := req.NamespaceSet
	if nss == nil {
		nss = NewNamespaces(req.Namespaces)
	}
	if req.ReplayCalls == 0 {
		d.expect.Store(nss) // a resumed run may see the set it started with, an older one
	}
	a := &attempt{req: req, nss: nss, lim: lim, d: d, results: map[int]CallResult{}, delivery: 1, done: make(chan callDone, lim.MaxConcurrent), timers: map[int]int64{}}
	waited := time.Now()
	if !d.compute(req.Key, false, ctx.Done()) {
		return Outcome{Status: StatusCancelled, Error: cancelledError(), Queued: queued + time.Since(waited), Wall: time.Since(start)}
	}
	a.cpu, a.turnAt = true, time.Now()
	queued += time.Since(waited)
	out := a.run(ctx, d)
	if a.cpu {
		d.doneComputing(req.Key)
	}
	out.Queued = queued
	out.Wall = time.Since(start)
	out.Compute = a.compute
	out.Calls = a.nextSeq
	return out
}

func (a *attempt) run(ctx context.Context, d *Driver) Outcome {
	wrapped := wrapperPrefix + a.req.JS + "\n})"
	if err := blockImport(wrapped); err != nil {
		if errors.Is(err, errImport) {
			return failed(&Error{Code: CodeImport, Message: importMessage, Hint: importHint})
		}
		return failed(&Error{Code: CodeSyntax, Message: err.Error()})
	}
	if ctx.Err() != nil {
		return Outcome{Status: StatusCancelled, Error: cancelledError()}
	}
	v, err := d.take(a.nss)
	if err != nil {
		return failed(&Error{Code: CodeInternal, Message: err.Error()})
	}
	a.v = v
	v.att = a
	defer func() { d.release(v, !a.trapped) }()

	a.parent = ctx
	// This run's kill switch: a runtime reset for another run gets a new
	// one, which a late timer of this run must not trip.
	ks := v.ks
	ks.att = a
	stopOnCancel := context.AfterFunc(ctx, func() { ks.trip(context.Cause(ctx)) })
	defer stopOnCancel()
	wall := time.AfterFunc(time.Duration(a.lim.WallMs)*time.Millisecond, func() { ks.trip(errWallTimeout) })
	defer wall.Stop()
	a.callCtx, a.stopCall = context.WithCancel(ctx)
	defer func() {
		a.stopCall()
		if a.cpu { // calls cut short still finish: not on a compute turn
			a.d.doneComputing(a.req.Key)
			a.cpu = false
		}
		a.wg.Wait()
	}()

	if e := a.enter(func() error { return a.begin(wrapped) }); e != nil {
		return a.outcome(e)
	}
	return a.outcome(a.loop())
}

// begin compiles the model's function, and starts it with the run's clock,
// seed and log budget.
func (a *attempt) begin(wrapped string) error {
	fn, err := a.v.rt.Eval("code.js", qjs.Code(wrapped))
	if err != nil {
		a.fail = a.compileError(err)
		return nil
	}
	defer fn.Free()
	seed := seedWords(a.req.Seed)
	cfg := fmt.Sprintf(`{"clock":%d,"seed":[%d,%d,%d,%d],"logBudget":%d}`, clockMs(a.req.Clock), seed[0], seed[1], seed[2], seed[3], a.lim.InlineResultBytes)
	return a.v.invoke(a.v.start, a.v.rt.Context().NewString(cfg), fn)
}

// loop drives the guest until it finishes, fails, pauses or is stopped.
func (a *attempt) loop() *Error {
	for {
		if a.fail != nil || a.finished {
			return nil
		}
		// A result that arrives because the host saw the cancellation must
		// not reach the guest: the stop wins.
		if a.parent.Err() != nil {
			a.v.ks.trip(context.Cause(a.parent))
		}
		if cause := a.v.ks.Cause(); cause != nil {
			return classifyTrap(cause, nil, nil)
		}
		a.dispatch()
		// The attempt pauses when the guest would see a paused call's
		// result (results reach it in Seq order), not when the host
		// answers: what the guest did by then, and so which calls it
		// issued, does not depend on which call the host answered first.
		if res, ok := a.results[a.delivery]; ok && res.Pause {
			a.pausing = true
		}
		if a.pausing {
			// Every call issued before the pause still reaches the host,
			// which asks about each one that needs a person: they are
			// asked together, in one pause.
			if a.inflight == 0 && len(a.queue) == 0 {
				return nil
			}
			if e := a.wait(nil); e != nil {
				return e
			}
			continue
		}
		if res, ok := a.results[a.delivery]; ok {
			seq := a.delivery
			delete(a.results, seq)
			a.delivery++
			if e := a.enter(func() error { return a.deliverResult(seq, res) }); e != nil {
				return e
			}
			continue
		}
		if a.inflight > 0 {
			if e := a.wait(nil); e != nil {
				return e
			}
			continue
		}
		id, due, ok := a.nextTimer()
		if !ok {
			return &Error{Code: CodeNeverSettled, Message: "the code is waiting on a promise that can never settle (no tool call or timer is pending)", Hint: "make sure every awaited promise is resolved, e.g. call resolve() in new Promise(...)"}
		}
		pause := time.Duration(due-a.elapsed) * time.Millisecond
		if a.delivery <= a.req.ReplayCalls {
			pause = 0 // replaying: the original run already waited
		}
		t := time.NewTimer(pause)
		if e := a.wait(t.C); e != nil {
			t.Stop()
			return e
		}
		delete(a.timers, id)
		a.elapsed = max(a.elapsed, due)
		if e := a.enter(func() error {
			msg := fmt.Sprintf(`{"timer":%d,"due":%d}`, id, due)
			return a.v.invoke(a.v.deliver, a.v.rt.Context().NewString(msg))
		}); e != nil {
			return e
		}
	}
}

func (a *attempt) nextTimer() (id int, due int64, ok bool) {
	for i, d := range a.timers {
		if !ok || d < due || (d == due && i < id) {
			id, due, ok = i, d, true
		}
	}
	return id, due, ok
}

// wait blocks until a call finishes, timer fires, or the guest must stop,
// giving its compute turn back meanwhile.
func (a *attempt) wait(timer <-chan time.Time) *Error {
	a.d.doneComputing(a.req.Key)
	a.cpu = false
	select {
	case r := <-a.done:
		a.settle(r)
	case <-timer:
	case <-a.v.ks.Done():
		return classifyTrap(a.v.ks.Cause(), nil, nil)
	}
	if !a.d.compute(a.req.Key, true, a.v.ks.Done()) {
		return classifyTrap(a.v.ks.Cause(), nil, nil)
	}
	a.cpu, a.turnAt = true, time.Now()
	return nil
}

// computeSlice is how long a computing attempt keeps its compute turn
// while another key waits for one under its cap.
const computeSlice = 10 * time.Millisecond

// yield is called at the guest's ticks (interrupt.go): once the attempt
// has computed for computeSlice while another key waits for a compute turn,
// it gives its turn to that key and waits, in the guest's tick, for
// another (asking again: before its key's attempts that have not started).
// So a key's infinite loops, held to MaxComputingPerKey turns, cannot keep
// the other keys from computing, however many keys flood; a key alone (a
// Driver one hub owns) is never stopped. Waiting costs the guest no
// compute time (its thread is idle). When the attempt is stopped while it
// waits, the tick ends the guest as a tripped switch does.
func (a *attempt) yield() {
	if !a.cpu || a.d.cpu.waiting.Load() == 0 || time.Since(a.turnAt) < computeSlice {
		return
	}
	if !a.d.cpu.othersWait(a.req.Key) {
		a.turnAt = time.Now() // look again in a slice
		return
	}
	a.d.doneComputing(a.req.Key)
	a.cpu = false
	if !a.d.compute(a.req.Key, true, a.v.ks.Done()) {
		panic(errInterrupted)
	}
	a.cpu, a.turnAt = true, time.Now()
}

func (a *attempt) settle(r callDone) {
	a.inflight--
	a.results[r.seq] = r.res
}

// dispatch starts queued calls while there is room; also while the attempt
// pauses, so that every call the guest issued reaches the host.
func (a *attempt) dispatch() {
	for len(a.queue) > 0 && a.inflight < a.lim.MaxConcurrent {
		call := a.queue[0]
		a.queue = a.queue[1:]
		a.inflight++
		a.wg.Add(1)
		go func() {
			defer a.wg.Done()
			ctx := a.callCtx
			if a.lim.UpstreamTimeoutMs > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, time.Duration(a.lim.UpstreamTimeoutMs)*time.Millisecond)
				defer cancel()
			}
			a.done <- callDone{seq: call.Seq, res: callHost(ctx, a.req.Host, call)}
		}()
	}
}

// callHost calls the host; a missing or panicking host becomes a ToolError.
func callHost(ctx context.Context, h Host, call Call) (res CallResult) {
	defer func() {
		if r := recover(); r != nil {
			res = CallResult{Error: &ToolError{Code: CodeInternal, Message: fmt.Sprintf("the host failed on %s: %v", call.Address, r)}}
		}
	}()
	if h == nil {
		return CallResult{Error: &ToolError{Code: CodeInternal, Message: "no host is configured to answer tool calls"}}
	}
	return h.CallTool(ctx, call)
}

// deliverResult hands one settled call to the guest, as one message (each
// value passed into the runtime costs several calls into wasm).
func (a *attempt) deliverResult(seq int, res CallResult) error {
	msg := append(strconv.AppendInt([]byte(`{"id":`), int64(seq), 10), `,"r":`...)
	if res.Error == nil && nestedDeeper(res.Value, MaxResultDepth) {
		// QuickJS parses JSON recursively on its small C stack: a result
		// nested a few thousand levels deep (an upstream's choice, not the
		// code's) ended the run as stack_overflow, blaming the code's
		// recursion, with nothing it could catch.
		res = CallResult{Error: &ToolError{Code: CodeResultTooDeep, Message: fmt.Sprintf("the result is JSON nested more than %d levels deep, more than the sandbox reads", MaxResultDepth), Hint: "ask the tool for a flatter result"}}
	}
	if res.Error != nil {
		payload, _ := json.Marshal(map[string]any{"ok": false, "error": res.Error})
		msg = append(msg, payload...)
	} else {
		value := res.Value
		if len(value) == 0 || !json.Valid(value) {
			value = json.RawMessage("null")
		}
		msg = append(append(append(msg, `{"ok":true,"value":`...), value...), '}')
	}
	msg = append(msg, '}')
	return a.v.invoke(a.v.deliver, a.v.rt.Context().NewString(string(msg)))
}

// MaxResultDepth is how deeply a tool result's JSON may nest for the code
// to get it (QuickJS parsed 3,000 levels and overflowed its stack at 4,000;
// the code must still be able to walk and return what it gets).
const MaxResultDepth = 1000

// nestedDeeper reports whether the JSON value b nests arrays and objects
// more than max levels deep.
func nestedDeeper(b []byte, max int) bool {
	if len(b) <= max { // too short to open max+1 brackets: most results
		return false
	}
	depth, inString := 0, false
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case inString:
			if c == '\\' {
				i++
			} else if c == '"' {
				inString = false
			}
		case c == '"':
			inString = true
		case c == '[' || c == '{':
			if depth++; depth > max {
				return true
			}
		case c == ']' || c == '}':
			depth--
		}
	}
	return false
}

// enter runs f inside the guest, counting compute time, stopping the guest
// when compute time runs out, and turning a trap into an Error.
func (a *attempt) enter(f func() error) (e *Error) {
	w := startWatchdog(time.Duration(a.lim.ComputeMs)*time.Millisecond-a.compute, func() { a.v.ks.trip(errComputeTimeout) })
	defer func() {
		a.compute += w.stop()
		if r := recover(); r != nil {
			a.trapped = true
			e = classifyTrap(a.v.ks.Cause(), r, a.v.mem)
		}
	}()
	if err := f(); err != nil {
		if cause := a.v.ks.Cause(); cause != nil {
			return classifyTrap(cause, nil, a.v.mem)
		}
		return a.runtimeError(errorInfo{Name: "Error", Message: err.Error()})
	}
	if checkMemory(a.v.rt, a.lim.MemoryBytes) != nil {
		return memoryError()
	}
	return nil
}

// watchdog calls trip once the guest has used budget of CPU time (see
// guestClock). Its timer runs on wall time, which is never less than the CPU
// time used meanwhile, so when it fires it re-arms for what is left.
type watchdog struct {
	clock  *guestClock
	budget time.Duration
	trip   func()

	mu      sync.Mutex
	t       *time.Timer
	stopped bool
}

func startWatchdog(budget time.Duration, trip func()) *watchdog {
	w := &watchdog{clock: startGuestClock(), budget: budget, trip: trip}
	w.mu.Lock()
	w.t = time.AfterFunc(budget, w.fire)
	w.mu.Unlock()
	return w
}

func (w *watchdog) fire() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return
	}
	if left := w.budget - w.clock.used(); left > 0 {
		w.t.Reset(left)
		return
	}
	w.trip()
}

// stop ends the watch and returns the CPU time the guest used.
func (w *watchdog) stop() time.Duration {
	w.mu.Lock()
	w.stopped = true
	w.t.Stop()
	w.mu.Unlock()
	return w.clock.stop()
}

// onHost handles __cap_host(op, payload). It returns a Seq for "call", else -1.
func (a *attempt) onHost(op, payload string) (int, error) {
	switch op {
	case "call":
		var c struct {
			Address    string          `json:"address"`
			Connection string          `json:"connection"`
			Args       json.RawMessage `json:"args"`
		}
		if err := json.Unmarshal([]byte(payload), &c); err != nil {
			return -1, fmt.Errorf("bridge: decoding call: %w", err)
		}
		if !a.known(c.Address) {
			return -1, fmt.Errorf("bridge: %s is not a tool of this run", c.Address)
		}
		if a.pausing {
			return -1, fmt.Errorf("bridge: the run is pausing")
		}
		if a.nextSeq >= a.lim.MaxCalls {
			a.fail = &Error{Code: CodeTooManyCalls, Message: fmt.Sprintf("the code made more than %d tool calls in one run", a.lim.MaxCalls), Hint: "batch the work: fewer calls per run, or use tools that return many items at once"}
			return -1, errors.New(a.fail.Message)
		}
		a.nextSeq++
		a.queue = append(a.queue, Call{Seq: a.nextSeq, Address: c.Address, Args: c.Args, Connection: c.Connection})
		// The call goes out now, while the guest runs on to its next await,
		// not after: its upstream round trip is most of a run's time.
		a.dispatch()
		return a.nextSeq, nil
	case "log":
		a.logs = append(a.logs, payload)
	case "timer", "cleartimer":
		idText, dueText, _ := strings.Cut(payload, ":")
		id, err := strconv.Atoi(idText)
		if err != nil {
			return -1, fmt.Errorf("bridge: bad timer %q", payload)
		}
		if op == "cleartimer" {
			delete(a.timers, id)
			break
		}
		due, err := strconv.ParseInt(dueText, 10, 64)
		if err != nil {
			return -1, fmt.Errorf("bridge: bad timer %q", payload)
		}
		a.timers[id] = due
	case "done":
		a.finished, a.result = true, payload
	case "fail":
		if a.fail != nil {
			break // keep the first failure (e.g. too_many_calls, rethrown by the code)
		}
		var info errorInfo
		if err := json.Unmarshal([]byte(payload), &info); err != nil {
			info = errorInfo{Name: "Error", Message: payload}
		}
		a.fail = a.runtimeError(info)
	default:
		return -1, fmt.Errorf("bridge: unknown op %q", op)
	}
	return -1, nil
}

func (a *attempt) known(address string) bool {
	if address == AddressSearch || address == AddressDescribe || address == AddressRead {
		return true
	}
	ns, tool, ok := strings.Cut(address, ".")
	return ok && a.nss.Has(ns, tool)
}

// toolsOf answers the guest's __cap_host("tools", namespace): the
// namespace's tools as a JSON array, read the first time the code touches
// the namespace.
func (a *attempt) toolsOf(ns string) (string, error) {
	tools, ok := a.nss.lists[ns]
	if !ok {
		return "", fmt.Errorf("bridge: %s is not a namespace of this run", ns)
	}
	return tools, nil
}

// errorInfo is what the prelude reports for a thrown value.
type errorInfo struct {
	Name      string `json:"name"`
	Message   string `json:"message"`
	Stack     string `json:"stack"`
	Code      string `json:"code"`
	Address   string `json:"address"`
	Status    int    `json:"status"`
	Hint      string `json:"hint"`
	Retryable bool   `json:"retryable"`
}

var codeLocation = regexp.MustCompile(`code\.js:(\d+)(?::(\d+))?`)

func (a *attempt) runtimeError(info errorInfo) *Error {
	msg := info.Message
	if info.Name != "" && info.Name != "Thrown" {
		msg = info.Name + ": " + msg
	} else if info.Name == "Thrown" {
		msg = "uncaught value: " + msg
	}
	e := &Error{Code: CodeRuntime, Message: msg}
	if strings.Contains(msg, "out of memory") {
		return memoryError()
	}
	if strings.Contains(msg, "stack overflow") || strings.Contains(msg, "call stack size") {
		return &Error{Code: CodeStackOverflow, Message: msg, Hint: "rewrite deep recursion as a loop with an explicit stack"}
	}
	if info.Name == "ToolError" {
		e.Code = CodeTool
		e.Tool = &ToolError{Code: info.Code, Message: info.Message, Hint: info.Hint, Status: info.Status, Retryable: info.Retryable}
		e.Message = fmt.Sprintf("uncaught ToolError from %s (%s): %s", info.Address, info.Code, info.Message)
		e.Hint = info.Hint
		if e.Hint == "" {
			e.Hint = "wrap the call in try/catch to handle the error"
		}
	}
	a.locate(e, info.Stack)
	return e
}

func (a *attempt) compileError(err error) *Error {
	text := err.Error()
	e := &Error{Code: CodeSyntax, Message: firstLine(text), Hint: "fix the syntax at the line shown"}
	if strings.Contains(firstLine(text), "import") {
		e.Code = CodeImport
		e.Message = importMessage + " (" + e.Message + ")"
		e.Hint = importHint
	}
	a.locate(e, text)
	return e
}

// locate adds the first location in the model's code to e.
func (a *attempt) locate(e *Error, stack string) {
	m := codeLocation.FindStringSubmatch(stack)
	if m == nil || (m[1] == "1" && m[2] == "1") {
		return // 1:1 is the wrapper itself: QuickJS did not record the position
	}
	e.Line, _ = strconv.Atoi(m[1])
	if m[2] != "" {
		e.Column, _ = strconv.Atoi(m[2])
		if e.Line == 1 {
			// QuickJS counts the first line's columns from 0, the others
			// from 1; the wrapper's prefix comes first on line 1.
			e.Column = max(1, e.Column-len(wrapperPrefix)+1)
		}
	}
	where := fmt.Sprintf("line %d", e.Line)
	if e.Column > 0 {
		where += fmt.Sprintf(", column %d", e.Column)
	}
	lines := strings.Split(a.req.JS, "\n")
	if e.Line >= 1 && e.Line <= len(lines) {
		where += ": " + strings.TrimSpace(truncate(lines[e.Line-1], 200))
	}
	e.Message += " (" + where + ")"
}

// outcome assembles the Outcome, applying the inline budget to result and logs.
func (a *attempt) outcome(e *Error) Outcome {
	var out Outcome
	switch {
	case e != nil && e.Code == CodeCancelled:
		out.Status, out.Error = StatusCancelled, e
	case e != nil:
		out.Status, out.Error = StatusFailed, e
	case a.fail != nil:
		out.Status, out.Error = StatusFailed, a.fail
	case a.pausing:
		out.Status = StatusPaused
	default:
		out.Status = StatusCompleted
		out.Result = json.RawMessage(a.result)
	}
	budget := a.lim.InlineResultBytes
	if len(out.Result) > budget {
		preview, _ := json.Marshal(truncate(string(out.Result), budget/2))
		out.Full = out.Result
		out.Result, out.ResultTruncated = preview, true
	}
	budget -= len(out.Result)
	for _, line := range a.logs {
		if len(line)+1 > budget {
			out.LogsTruncated = true
			if budget > 1 {
				out.Logs = append(out.Logs, truncate(line, budget-1))
			}
			break
		}
		budget -= len(line) + 1
		out.Logs = append(out.Logs, line)
	}
	return out
}

func failed(e *Error) Outcome { return Outcome{Status: StatusFailed, Error: e} }

// truncate cuts s to at most n bytes on a rune boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := max(0, n-3)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// seedWords expands the seed into the four words of the guest's PRNG (splitmix64).
func seedWords(seed int64) [4]uint32 {
	x := uint64(seed)
	var w [4]uint32
	for i := 0; i < 4; i += 2 {
		x += 0x9e3779b97f4a7c15
		z := x
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		z ^= z >> 31
		w[i], w[i+1] = uint32(z), uint32(z>>32)
	}
	return w
}

func clockMs(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}
