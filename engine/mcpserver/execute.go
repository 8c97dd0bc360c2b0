package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/capabilities-sh/capabilities/store"
	"strings"

	"github.com/capabilities-sh/capabilities/engine/code"
	"github.com/capabilities-sh/capabilities/engine/elicit"
	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/run"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func (s *Server) execute(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var in struct {
		Code   *string `json:"code"`
		Resume *string `json:"resume"`
	}
	if err := decode(req, &in); err != nil {
		return toolError("execute: %v. Pass exactly one of {code: string} or {resume: runId}.", err), nil
	}
	var (
		env *hub.Envelope
		err error
	)
	// A retry that carries a person's answers resumes the run the signed
	// state names, whatever the (repeated) arguments say.
	if req.Params.RequestState != "" || len(req.Params.InputResponses) > 0 {
		if s.opts.Signer == nil {
			return toolError("execute: this server does not take approvals through the client"), nil
		}
		st, verr := s.opts.Signer.Verify(req.Params.RequestState)
		if verr != nil {
			return toolError("execute: the approval was refused: %v", verr), nil
		}
		env, err = s.resume(ctx, req, st.Run)
		if err != nil {
			return toolError("execute: %s", s.hub.Scrub(err.Error())), nil
		}
		env = env.Scrubbed(s.hub.Scrubber())
		// One form per tools/call: a run still waiting after the answers
		// (the person cancelled the form, or the run reached another call
		// that asks) returns the pending envelope. Asking again here would
		// hand a pre-2026 client, served through go-sdk's one-retry
		// middleware, a result with neither content nor structured content.
		// execute({resume}) asks through the form again.
		return envelopeResult(env), nil
	}
	switch {
	case in.Code != nil && in.Resume != nil:
		return toolError("execute: pass code or resume, not both: code starts a new run, resume continues run %q", *in.Resume), nil
	case in.Code == nil && in.Resume == nil:
		return toolError("execute: pass {code: \"…\"} to run code, or {resume: runId} to continue a run awaiting approval"), nil
	case in.Code != nil:
		if len(*in.Code) > code.MaxBytes {
			return toolError("execute: the code is %d bytes; the limit is %d (64 KB): send less code, or split the work across runs", len(*in.Code), code.MaxBytes), nil
		}
		env, err = s.hub.Execute(ctx, *in.Code)
	default:
		env, err = s.resume(ctx, req, *in.Resume)
	}
	if err != nil {
		return toolError("execute: %s", s.hub.Scrub(err.Error())), nil
	}
	// The run scrubbed its envelope; this is the last exit, scrubbed again
	// of every secret this process resolved.
	env = env.Scrubbed(s.hub.Scrubber())
	if env.Status == "awaiting_approval" && s.canElicit(req) {
		return s.askClient(env), nil
	}
	if env.Status == "awaiting_approval" && s.opts.Pages != nil {
		return s.showPage(ctx, env), nil
	}
	return envelopeResult(env), nil
}

// showPage opens the approval page for a pending envelope and says so in
// its text line, with `hub approve` as the fallback. The page's address
// never reaches the model.
func (s *Server) showPage(ctx context.Context, env *hub.Envelope) *mcp.CallToolResult {
	var ids []string
	for _, p := range env.Pending {
		if p.Kind == model.PendingApproval || p.Kind == model.PendingInFlight {
			ids = append(ids, p.ID)
		}
	}
	if len(ids) == 0 {
		return envelopeResult(env)
	}
	page, err := s.opts.Pages.Open(ctx, env.RunID, ids)
	if err != nil {
		s.opts.Logger.Warn("could not open the approval page; the person can run hub approve", "run", env.RunID, "err", err)
		page = Page{Why: "it could not be opened"}
	}
	res := envelopeResult(env)
	res.Content = []mcp.Content{&mcp.TextContent{Text: pageSummary(env, page)}}
	return res
}

// pageSummary is the awaiting_approval line when the hub tried to open the
// approval page.
func pageSummary(env *hub.Envelope, page Page) string {
	what := asking(env.Pending)
	if page.Shown {
		where := page.Where
		if where == "" {
			where = "a page opened on the person's screen"
		}
		if page.Only {
			return fmt.Sprintf("awaiting_approval: %s a person's decision. %s to decide: tell the person, then call execute({resume: %q}).", what, upperFirst(where), env.RunID)
		}
		return fmt.Sprintf("awaiting_approval: %s a person's decision. %s to decide: tell the person (if they cannot use it, they run `%s` in a terminal), then call execute({resume: %q}).", what, upperFirst(where), approveCommand(env.RunID), env.RunID)
	}
	why := page.Why
	if why == "" {
		why = "it could not be opened"
	}
	return fmt.Sprintf("awaiting_approval: %s a person's decision. No page opened on the person's screen: %s. Tell the person to run `%s` in a terminal, then call execute({resume: %q}).", what, why, approveCommand(env.RunID), env.RunID)
}

// resume continues a run. A person's answers to the client's form, with the
// state the hub signed, are recorded first. A run that finished meanwhile
// (`hub approve` resumes it itself) returns its final envelope once more and
// runs nothing: the model was told to resume after the person decided.
func (s *Server) resume(ctx context.Context, req *mcp.CallToolRequest, runID string) (*hub.Envelope, error) {
	if state := req.Params.RequestState; state != "" || len(req.Params.InputResponses) > 0 {
		if s.opts.Signer == nil {
			return nil, errors.New("this server does not take approvals through the client")
		}
		answers := map[string]elicit.Answer{}
		for id, r := range req.Params.InputResponses {
			er, ok := r.(*mcp.ElicitResult)
			if !ok {
				return nil, fmt.Errorf("input response %q is not an elicitation result", id)
			}
			a := elicit.Answer{Action: er.Action}
			if c, ok := er.Content["choice"].(string); ok {
				a.Choice = c
			}
			answers[id] = a
		}
		if _, err := elicit.Record(ctx, s.store, s.opts.Signer, state, answers); err != nil {
			return nil, fmt.Errorf("the approval was refused: %w", err)
		}
	}
	return s.hub.ResumeWaiting(ctx, runID)
}

// canElicit reports whether the client declared form elicitation.
func (s *Server) canElicit(req *mcp.CallToolRequest) bool {
	if s.opts.Signer == nil {
		return false
	}
	caps := req.ClientCapabilities()
	return caps != nil && caps.Elicitation != nil
}

// askClient turns a pending envelope into input requests the client shows
// to the person, with a signed state bound to these calls.
func (s *Server) askClient(env *hub.Envelope) *mcp.CallToolResult {
	reqs := mcp.InputRequestMap{}
	var calls []string
	for _, p := range env.Pending {
		if p.Kind != model.PendingApproval {
			continue
		}
		calls = append(calls, p.ID)
		reqs[p.ID] = &mcp.ElicitParams{
			Mode:    "form",
			Message: approvalMessage(env.RunID, p, s.hub.Scrub),
			RequestedSchema: map[string]any{
				"type": "object",
				"properties": map[string]any{
					"choice": map[string]any{
						"type":        "string",
						"title":       "Allow this call?",
						"enum":        []string{"once", "run", "always", "deny"},
						"enumNames":   []string{"Allow once", "Allow this tool for the rest of the run", "Always allow this version of the tool", "Deny"},
						"description": "once: this call · run: this tool for the rest of the run · always: a rule for this version of the tool · deny: the call fails",
					},
				},
				"required": []string{"choice"},
			},
		}
	}
	if len(calls) == 0 {
		return envelopeResult(env)
	}
	// A follow-up call carries the answers and the state; the run id must
	// be in its arguments, so the retry resumes this run.
	return &mcp.CallToolResult{
		InputRequests: reqs,
		RequestState:  s.opts.Signer.Sign(env.RunID, calls, s.opts.ElicitTTL),
	}
}

// approvalMessage is what the person reads in the client's form: the
// address, the connection, what the tool does, why it asks and the
// arguments (secrets scrubbed, capped at 4 KB by the run).
func approvalMessage(runID string, p run.PendingInfo, scrub func(string) string) string {
	conn := p.Connection
	if conn == "" {
		conn = "default"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "An agent's code (run %s) wants to call %s (connection: %s).\n%s\nWhy it asks: %s", runID, p.Address, conn, p.Summary, p.Message)
	if len(p.Args) > 0 {
		fmt.Fprintf(&b, "\nArguments: %s", scrub(string(p.Args)))
	}
	return b.String()
}

// envelopeResult is the envelope as structured content plus one compact
// line of text.
func envelopeResult(env *hub.Envelope) *mcp.CallToolResult {
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: summary(env)}},
		StructuredContent: env,
		IsError:           env.Status == "failed",
	}
}

// summary is the envelope in one line for clients that read only text.
func summary(env *hub.Envelope) string {
	switch env.Status {
	case "completed":
		res := string(env.Result)
		if res == "" {
			res = "null"
		}
		n := len(env.Calls)
		if env.Truncated != nil {
			n += env.Truncated.Calls
		}
		calls := "calls"
		if n == 1 {
			calls = "call"
		}
		line := fmt.Sprintf("completed (%d %s): %s", n, calls, res)
		if len(env.Logs) > 0 {
			b, _ := json.Marshal(env.Logs)
			line += " logs: " + string(b)
		}
		return line
	case "awaiting_approval":
		return fmt.Sprintf("awaiting_approval: %s a person's decision. Tell the person to run `%s` in a terminal, then call execute({resume: %q}).", asking(env.Pending), approveCommand(env.RunID), env.RunID)
	case "awaiting_connection":
		var what []string
		for _, p := range env.Pending {
			what = append(what, p.Message)
		}
		return fmt.Sprintf("awaiting_connection: %s Then call execute({resume: %q}).", strings.Join(what, " "), env.RunID)
	}
	if env.Error != nil {
		s := fmt.Sprintf("%s: %s: %s", env.Status, env.Error.Code, env.Error.Message)
		if env.Error.Hint != "" {
			s += " (" + env.Error.Hint + ")"
		}
		return s
	}
	return env.Status
}

// upperFirst starts a clause as a sentence.
func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// asking says which calls wait for a person, with the verb: "github.x
// needs", or for calls made together "3 calls (github.x ×2, github.y)
// need", each tool once, in the order the calls came.
func asking(pending []run.PendingInfo) string {
	switch len(pending) {
	case 0:
		return "a call needs"
	case 1:
		return pending[0].Address + " needs"
	}
	var order []string
	n := map[string]int{}
	for _, p := range pending {
		if n[p.Address] == 0 {
			order = append(order, p.Address)
		}
		n[p.Address]++
	}
	for i, a := range order {
		if n[a] > 1 {
			order[i] = fmt.Sprintf("%s ×%d", a, n[a])
		}
	}
	return fmt.Sprintf("%d calls (%s) need", len(pending), strings.Join(order, ", "))
}

// approveCommand is what the person types to decide on run id, in any
// terminal: it names the hub's home when that is not the default place
// (store.OtherHome), where a plain `capabilities hub approve` would find
// another hub, or none.
func approveCommand(id string) string {
	cmd := "capabilities hub approve " + id
	if home, err := store.OtherHome(); err == nil && home != "" {
		cmd = "CAPABILITIES_HOME=" + model.QuoteCommand([]string{home}) + " " + cmd
	}
	return cmd
}
