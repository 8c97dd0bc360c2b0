package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Direct mode: each tool the profile shows is an MCP tool of its own, named
// namespace__tool, with its upstream schema and annotations. A call is a
// one-call run (hub.DirectCall): policy, approvals, secrets, scrubbing and
// the journal are those of execute.

const directInstructions = `Each tool here is a tool of the person's capability hub, named namespace__tool. Reads run; a write may need the person's approval: the call then says so, and the same call made again with the same arguments once they decided returns its result.`

// DirectName is the MCP tool name of a tool address in direct mode.
func DirectName(address string) string { return strings.Replace(address, ".", "__", 1) }

// direct holds a direct-mode server's state.
type direct struct {
	mu    sync.Mutex
	shown map[string]string // MCP tool name → contract, as registered
	stop  func()
	// removed is set when the profile's record was removed: it shows no
	// tool any more.
	removed bool
}

// syncDirect registers the profile's visible tools, replacing those whose
// contract changed and removing those no longer visible; go-sdk sends
// notifications/tools/list_changed when the set changes.
func (s *Server) syncDirect(ctx context.Context) error {
	s.direct.mu.Lock()
	p, removed := s.profile, s.direct.removed
	s.direct.mu.Unlock()
	var tools []model.Tool
	if !removed {
		var err error
		if tools, err = s.hub.VisibleTools(ctx, p); err != nil {
			return fmt.Errorf("listing the profile's tools: %w", err)
		}
	}
	s.direct.mu.Lock()
	defer s.direct.mu.Unlock()
	want := map[string]bool{}
	for _, t := range tools {
		name := DirectName(t.Address)
		want[name] = true
		if s.direct.shown[name] == t.Contract {
			continue
		}
		if err := s.addDirect(t); err != nil {
			s.opts.Logger.Warn("a tool is left out of the direct-mode profile", "profile", s.name, "tool", t.Address, "err", err)
			continue
		}
		s.direct.shown[name] = t.Contract
	}
	var gone []string
	for name := range s.direct.shown {
		if !want[name] {
			gone = append(gone, name)
			delete(s.direct.shown, name)
		}
	}
	if len(gone) > 0 {
		slices.Sort(gone)
		s.mcp.RemoveTools(gone...)
	}
	return nil
}

// addDirect registers one tool. go-sdk panics on a schema it cannot serve
// (not an object); that tool is left out with an error.
func (s *Server) addDirect(t model.Tool) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("registering %s: %v", t.Address, r)
		}
	}()
	in := t.InputSchema
	if len(in) == 0 {
		in = json.RawMessage(`{"type":"object"}`)
	}
	mt := &mcp.Tool{
		Name:        DirectName(t.Address),
		Title:       t.Title,
		Description: t.Description,
		InputSchema: in,
	}
	if len(t.OutputSchema) > 0 {
		mt.OutputSchema = t.OutputSchema
	}
	if a := t.Annotations; a != nil {
		mt.Annotations = &mcp.ToolAnnotations{Title: a.Title, DestructiveHint: a.DestructiveHint, OpenWorldHint: a.OpenWorldHint}
		if a.ReadOnlyHint != nil {
			mt.Annotations.ReadOnlyHint = *a.ReadOnlyHint
		}
		if a.IdempotentHint != nil {
			mt.Annotations.IdempotentHint = *a.IdempotentHint
		}
	}
	s.mcp.AddTool(mt, s.callDirect(t.Address, len(t.OutputSchema) > 0))
	return nil
}

// watchDirect keeps the registered tools in step with the hub: a source,
// manifest or profile change (serve's store watcher, or a refresh in this
// process) syncs them again.
func (s *Server) watchDirect() {
	name := s.name
	s.direct.stop = s.hub.OnChange(func() {
		ctx := context.Background()
		p, err := s.hub.Profile(ctx, name)
		s.direct.mu.Lock()
		switch {
		case err == nil:
			s.profile, s.direct.removed = p, false
		case errors.Is(err, hub.ErrUnknownProfile):
			s.direct.removed = true
		}
		s.direct.mu.Unlock()
		if err := s.syncDirect(ctx); err != nil {
			s.opts.Logger.Warn("refreshing the direct-mode tools", "profile", name, "err", err)
		}
	})
}

// callDirect is one direct tool's handler.
func (s *Server) callDirect(address string, structured bool) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var (
			env *hub.Envelope
			err error
		)
		args := req.Params.Arguments
		if len(args) == 0 {
			args = json.RawMessage(`{}`)
		}
		switch {
		case req.Params.RequestState != "" || len(req.Params.InputResponses) > 0:
			// The person answered the client's form: record it and go on
			// with the run the signed state names.
			if s.opts.Signer == nil {
				return toolError("%s: this server does not take approvals through the client", DirectName(address)), nil
			}
			st, verr := s.opts.Signer.Verify(req.Params.RequestState)
			if verr != nil {
				return toolError("%s: the approval was refused: %v", DirectName(address), verr), nil
			}
			if env, err = s.resume(ctx, req, st.Run); err == nil {
				s.hub.NoteDirect(ctx, address, args, env)
			}
		default:
			// A new call, or the same call again: it continues the run
			// that waited for a person (hub.DirectCall).
			env, err = s.hub.DirectCall(ctx, address, args)
		}
		if err != nil {
			return toolError("%s: %s", DirectName(address), s.hub.Scrub(err.Error())), nil
		}
		env = env.Scrubbed(s.hub.Scrubber())
		if env.Status == "awaiting_approval" && req.Params.RequestState == "" && s.canElicit(req) {
			if res := s.askClient(env); res.RequestState != "" {
				return res, nil
			}
		}
		if env.Status == "awaiting_approval" && s.opts.Pages != nil {
			return s.directPage(ctx, address, env), nil
		}
		return directResult(address, env, structured), nil
	}
}

// directPage opens the approval page for a waiting direct call.
func (s *Server) directPage(ctx context.Context, address string, env *hub.Envelope) *mcp.CallToolResult {
	var ids []string
	for _, p := range env.Pending {
		if p.Kind == model.PendingApproval || p.Kind == model.PendingInFlight {
			ids = append(ids, p.ID)
		}
	}
	page, err := s.opts.Pages.Open(ctx, env.RunID, ids)
	if err != nil {
		s.opts.Logger.Warn("could not open the approval page; the person can run hub approve", "run", env.RunID, "err", err)
		page = Page{Why: "it could not be opened"}
	}
	where := "No page opened on the person's screen (" + page.Why + "): tell the person to run `" + approveCommand(env.RunID) + "` in a terminal"
	if page.Shown {
		where = page.Where
		if where == "" {
			where = "a page opened on the person's screen"
		}
		if page.Only {
			where = upperFirst(where) + " to decide it: tell the person"
		} else {
			where = upperFirst(where) + " to decide it: tell the person (or they run `" + approveCommand(env.RunID) + "`)"
		}
	}
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf(
		"awaiting_approval: %s needs a person's decision; it has not run. %s. Once they decided, call %s again with the same arguments for its result (run %s).",
		address, where, DirectName(address), env.RunID)}}}
}

// directResult renders a one-call run's envelope as that tool's result.
// handleError is the error for a result the hub kept as a handle (too large
// to hand over in one result), which only code mode can read; nil when raw
// is not one of the hub's handles.
func handleError(name string, raw json.RawMessage) *mcp.CallToolResult {
	var handle struct {
		Handle  string          `json:"handle"`
		Size    int64           `json:"size"`
		Preview json.RawMessage `json:"preview"`
	}
	if json.Unmarshal(raw, &handle) != nil || !strings.HasPrefix(handle.Handle, "handle-") || handle.Size <= 0 {
		return nil
	}
	return toolError("%s: the result is %d bytes, more than the hub hands over in one result; it starts: %s. Through a code-mode profile, execute can read it in parts: hub.read(%q, {offset, length}).", name, handle.Size, handle.Preview, handle.Handle)
}

func directResult(address string, env *hub.Envelope, structured bool) *mcp.CallToolResult {
	name := DirectName(address)
	switch env.Status {
	case "completed":
		if env.Truncated != nil && env.Truncated.Result {
			return toolError("%s: the result is larger than the hub's limit for one result; call the tool through code mode's execute and return the parts you need", name)
		}
		if te := handleError(name, env.Result); te != nil {
			return te // the run's result was too large for the envelope
		}
		var out struct {
			Value     json.RawMessage `json:"value"`
			ToolError *struct {
				Code    string `json:"code"`
				Message string `json:"message"`
				Hint    string `json:"hint"`
			} `json:"toolError"`
		}
		if err := json.Unmarshal(env.Result, &out); err != nil {
			return toolError("%s: the hub could not read the call's result: %v", name, err)
		}
		if te := out.ToolError; te != nil {
			if te.Code == "tool_error" {
				return toolError("%s", te.Message)
			}
			msg := te.Code + ": " + te.Message
			if h := directHint(name, te.Code, te.Hint); h != "" {
				msg += " (" + h + ")"
			}
			return toolError("%s", msg)
		}
		if te := handleError(name, out.Value); te != nil {
			return te // the tool's result was too large for the run
		}
		res := &mcp.CallToolResult{}
		raw := out.Value
		if len(raw) == 0 {
			raw = json.RawMessage("null")
		}
		var v any
		_ = json.Unmarshal(raw, &v)
		if s, ok := v.(string); ok {
			res.Content = []mcp.Content{&mcp.TextContent{Text: s}}
		} else {
			res.Content = []mcp.Content{&mcp.TextContent{Text: string(raw)}}
		}
		if obj, ok := v.(map[string]any); ok && structured {
			res.StructuredContent = obj
		}
		return res
	case "awaiting_approval":
		var what []string
		for _, p := range env.Pending {
			what = append(what, p.Address)
		}
		return toolError("awaiting_approval: %s needs a person's decision; it has not run. Tell the person to run `%s` in a terminal; once they decided, call %s again with the same arguments for its result.", strings.Join(what, ", "), approveCommand(env.RunID), name)
	case "awaiting_connection":
		var what []string
		for _, p := range env.Pending {
			what = append(what, p.Message)
		}
		return toolError("awaiting_connection: %s Then call %s again with the same arguments.", strings.Join(what, " "), name)
	}
	if e := env.Error; e != nil {
		if e.Code == "tool_error" { // the tool's own error: its text
			return toolError("%s", e.Message)
		}
		msg := fmt.Sprintf("%s: %s", e.Code, e.Message)
		if h := directHint(name, e.Code, e.Hint); h != "" {
			msg += " (" + h + ")"
		}
		return toolError("%s", msg)
	}
	return toolError("%s: the call ended %s", name, env.Status)
}

// directHint is an error's hint as a direct-mode client can follow it: the
// hub's hint for refused arguments points at code mode's hub.describe,
// which a direct-mode client does not have.
func directHint(name, code, hint string) string {
	if code == "invalid_arguments" && strings.Contains(hint, "hub.describe(") {
		return "the input schema of " + name + " in tools/list shows the exact input"
	}
	return hint
}
