package hub

import (
	"bytes"
	"context"
	"encoding/json"
	"regexp"

	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/sandbox"
)

// directForm matches the code DirectCode writes; directRun checks the match
// by writing the code again from its parts.
var directForm = regexp.MustCompile(`^try \{ return \{value: await ([A-Za-z_$][A-Za-z0-9_$]*)\[("(?:[^"\\]|\\.)*")\]\((\{.*\})\)\}; \} catch \(e\) \{`)

// directCall reads the address and arguments of a direct call's code
// (DirectCode, exactly); ok is false for any other code.
func directCall(code string) (address string, args json.RawMessage, ok bool) {
	m := directForm.FindStringSubmatch(code)
	if m == nil {
		return "", nil, false
	}
	var tool string
	if json.Unmarshal([]byte(m[2]), &tool) != nil {
		return "", nil, false
	}
	address, args = m[1]+"."+tool, json.RawMessage(m[3])
	if c, err := DirectCode(address, args); err != nil || c != code {
		return "", nil, false
	}
	return address, args, true
}

// directRun runs a direct call's code (DirectCode, exactly) without a
// JavaScript runtime: the one call goes to the run's host as the sandbox
// would send it (sequence 1, no connection), and the outcome is what the
// code returns, {value} or {toolError}. ok is false for any other code,
// for a tool the run's namespaces do not have, for a result the envelope
// would cut and for a run stopped from outside: the sandbox runs those (a
// settled call is answered from the attempt's journal, so the upstream is
// not called twice). A call over the attempt's wall time ends it as in the
// sandbox (callOnce).
func directRun(ctx context.Context, req sandbox.Request) (sandbox.Outcome, bool) {
	address, args, ok := directCall(req.JS)
	if !ok {
		return sandbox.Outcome{}, false
	}
	ns, tool, _ := model.SplitAddress(address)
	if !reaches(req, ns, tool) || req.Host == nil {
		return sandbox.Outcome{}, false
	}
	res, out, ok := callOnce(ctx, req, address, args)
	var result []byte
	switch {
	case !ok:
		return sandbox.Outcome{}, false
	case out.Status != "": // the attempt's wall time
		return out, true
	case res.Pause:
		out.Status = sandbox.StatusPaused
		return out, true
	case res.Error != nil:
		// The guest's ToolError has a hint, "" when there is none.
		te := map[string]string{"code": res.Error.Code, "message": res.Error.Message, "hint": res.Error.Hint}
		result, _ = json.Marshal(map[string]any{"toolError": te})
	default:
		var b bytes.Buffer
		v := res.Value
		if len(v) == 0 {
			v = json.RawMessage("null")
		}
		if json.Compact(&b, v) != nil {
			return sandbox.Outcome{}, false
		}
		result = append(append([]byte(`{"value":`), b.Bytes()...), '}')
	}
	if len(result) > inlineLimit(req.Limits) {
		return sandbox.Outcome{}, false
	}
	out.Status, out.Result = sandbox.StatusCompleted, result
	return out, true
}

// directFailed makes a direct call's run that caught its call's error (the
// {toolError} DirectCode returns) a failed run with that error, so the run
// reads as what happened (`hub runs --status failed`, the console) and the
// agent is told the tool's own message. Any other outcome is as it was.
func directFailed(js string, out sandbox.Outcome) sandbox.Outcome {
	if out.Status != sandbox.StatusCompleted || out.ResultTruncated || !bytes.HasPrefix(out.Result, []byte(`{"toolError":`)) {
		return out
	}
	if _, _, ok := directCall(js); !ok {
		return out
	}
	var r struct {
		ToolError *struct{ Code, Message, Hint string } `json:"toolError"`
	}
	if json.Unmarshal(out.Result, &r) != nil || r.ToolError == nil || r.ToolError.Code == "" {
		return out
	}
	te := r.ToolError
	out.Status, out.Result = sandbox.StatusFailed, nil
	out.Error = &sandbox.Error{Code: te.Code, Message: te.Message, Hint: te.Hint}
	return out
}
