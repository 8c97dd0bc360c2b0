package hub

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/capabilities-sh/capabilities/engine/code"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/sandbox"
)

// oneCallRun runs code that is one tool call whose value it returns
// (code.OneCall: `return await github.getIssue({number: 7})`, the commonest
// code a model sends) without starting JavaScript. The call goes to the
// run's host as the sandbox would send it (sequence 1, the same argument
// bytes, no connection), so policy, approval, the journal and scrubbing are
// the same, and the outcome is the sandbox's: the value as JSON.stringify
// writes it (code.Restringify), or the uncaught ToolError. ok is false for
// any other code, a tool the code could not reach, and an outcome it
// cannot be sure to give as the sandbox would (a value Restringify does
// not read, one the envelope would cut, an error text the sandbox reads
// otherwise): the sandbox runs the code then, and its call 1, settled
// already, is answered from the attempt's journal, so the upstream is not
// called twice. TestOneCallAsTheSandboxRunsIt runs each case both ways.
func oneCallRun(ctx context.Context, req sandbox.Request) (sandbox.Outcome, bool) {
	if oneCallOff.Load() {
		return sandbox.Outcome{}, false
	}
	ns, tool, args, ok := code.OneCall(req.JS)
	if !ok || req.Host == nil || model.ShadowsGlobal(ns) || !reaches(req, ns, tool) {
		return sandbox.Outcome{}, false
	}
	address := ns + "." + tool
	res, out, ok := callOnce(ctx, req, address, args)
	switch {
	case !ok:
		return sandbox.Outcome{}, false
	case out.Status != "": // the attempt's wall time
	case res.Pause:
		out.Status = sandbox.StatusPaused
	case res.Error != nil:
		// As the guest's ToolError fills in what is missing, and the
		// sandbox reads the uncaught error (attempt.runtimeError).
		e := *res.Error
		if e.Code == "" {
			e.Code = "tool_error"
		}
		if e.Message == "" {
			e.Message = "tool call failed"
		}
		for _, m := range []string{"out of memory", "stack overflow", "call stack size"} {
			if strings.Contains(e.Message, m) {
				return sandbox.Outcome{}, false // read as the runtime's own error there
			}
		}
		hint := e.Hint
		if hint == "" {
			hint = "wrap the call in try/catch to handle the error"
		}
		out.Status = sandbox.StatusFailed
		out.Error = &sandbox.Error{Code: sandbox.CodeTool, Tool: &e, Message: fmt.Sprintf("uncaught ToolError from %s (%s): %s", address, e.Code, e.Message), Hint: hint}
	default:
		v := res.Value
		if len(v) == 0 || !json.Valid(v) {
			v = json.RawMessage("null")
		}
		result, ok := code.Restringify(v)
		if !ok || len(result) > inlineLimit(req.Limits) {
			return sandbox.Outcome{}, false
		}
		out.Status, out.Result = sandbox.StatusCompleted, result
	}
	oneCallRuns.Add(1)
	return out, true
}

// oneCallRuns counts the attempts oneCallRun made (tests read it).
var oneCallRuns atomic.Int64

// oneCallOff is set only in tests that run such code in the sandbox, to
// compare (SetOneCall).
var oneCallOff atomic.Bool

// callOnce makes a run's one call to its host as an attempt would:
// sequence 1, bounded by the upstream timeout, and cut short by the
// attempt's wall time, which ends it as the sandbox does (out's Status and
// Error set). out counts the call and the time; ok is false when ctx ended
// meanwhile: the sandbox says how (cancelled, the run's deadline), at once,
// the call settled or not.
func callOnce(ctx context.Context, req sandbox.Request, address string, args json.RawMessage) (res sandbox.CallResult, out sandbox.Outcome, ok bool) {
	callCtx, stop := context.WithCancel(ctx)
	defer stop()
	wall := req.Limits.WallMs
	if wall <= 0 {
		wall = 90_000
	}
	var overWall atomic.Bool
	timer := time.AfterFunc(time.Duration(wall)*time.Millisecond, func() { overWall.Store(true); stop() })
	defer timer.Stop()
	if ms := req.Limits.UpstreamTimeoutMs; ms > 0 {
		var cancel context.CancelFunc
		callCtx, cancel = context.WithTimeout(callCtx, time.Duration(ms)*time.Millisecond)
		defer cancel()
	}
	start := time.Now()
	res = req.Host.CallTool(callCtx, sandbox.Call{Seq: 1, Address: address, Args: args})
	out = sandbox.Outcome{Calls: 1, Wall: time.Since(start)}
	if ctx.Err() != nil {
		return res, out, false
	}
	if overWall.Load() {
		out.Status, out.Error = sandbox.StatusFailed, sandbox.WallTimeoutError()
	}
	return res, out, true
}

// inlineLimit is the envelope's budget for a result (sandbox.Limits'
// default where l leaves it out).
func inlineLimit(l sandbox.Limits) int {
	if l.InlineResultBytes > 0 {
		return l.InlineResultBytes
	}
	return 24 << 10
}

// reaches says whether the run's namespaces have ns.tool.
func reaches(req sandbox.Request, ns, tool string) bool {
	if req.NamespaceSet != nil {
		return req.NamespaceSet.Has(ns, tool)
	}
	for _, t := range req.Namespaces[ns] {
		if t == tool {
			return true
		}
	}
	return false
}
