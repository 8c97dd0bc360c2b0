// Package mcpserver is the hub's MCP surface: exactly three tools — search,
// describe and execute — over stdio or streamable HTTP. No tool adds
// sources, changes connections, edits policy or records a decision (I8);
// a person's answer to the client's own elicitation form is checked against
// the state the hub signed (engine/elicit).
package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/capabilities-sh/capabilities/engine/elicit"
	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/index"
	"github.com/capabilities-sh/capabilities/engine/typegen"
	"github.com/capabilities-sh/capabilities/store"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Version is reported in serverInfo.
const Version = "0.1.0"

// serverName is the name in serverInfo, by which the stdio shim knows a hub.
const serverName = "capabilities"

// Options configure the server. The zero value is useful.
type Options struct {
	Logger *slog.Logger
	// Signer signs approval states for elicitation; nil disables the
	// elicitation path (every client gets awaiting_approval).
	Signer *elicit.Signer
	// ElicitTTL is how long a signed approval state stays valid (10 min).
	ElicitTTL time.Duration
	// Pages opens the approval page on the person's screen when a run
	// waits for a decision and the client cannot elicit; nil: the envelope
	// names only `hub approve`.
	Pages PageOpener
	// Profile is the view served; nil is the default profile (code mode,
	// every tool). A direct-mode profile serves each visible tool as an MCP
	// tool of its own instead of search, describe and execute.
	Profile *hub.Profile
	// Unavailable, when it returns an error, answers every request that
	// would reach the hub with it instead (a tool call as a tool error, a
	// resource read or a prompt as an error), before anything runs: the
	// desktop app whose hub folder was deleted under it says so, instead of
	// each call failing on a file that is gone. Its text reaches the model.
	Unavailable func() error
	// Listed, when set, is called once, after the first tools/list is
	// answered.
	Listed func()
	// Node names this process among the hub's processes: each HTTP
	// session id begins with it and a dot, so that a load balancer routes a
	// session's requests to the process that holds it (NodeOf). Empty: ids
	// name no process.
	Node string
}

// Server serves the hub over MCP.
type Server struct {
	hub   *hub.Hub
	store store.Store
	opts  Options
	mcp   *mcp.Server

	profile *hub.Profile // guarded by direct.mu once serving
	name    string       // the profile's name
	direct  direct
	skills  skillServing

	// impl and calls are a code-mode server's serverInfo and its three
	// tools' handlers, for the requests fastCall answers (nil otherwise).
	impl  *mcp.Implementation
	calls map[string]mcp.ToolHandler

	subsMu sync.Mutex
	subs   map[string]*profileServer // other profiles served over HTTP, by name
}

// New builds the MCP server for h.
func New(h *hub.Hub, opts Options) *Server {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.ElicitTTL <= 0 {
		opts.ElicitTTL = 10 * time.Minute
	}
	if opts.Profile == nil {
		opts.Profile = &hub.Profile{Name: hub.DefaultProfile, Mode: hub.ModeCode}
	}
	s := &Server{hub: h, store: h.Store(), opts: opts, profile: opts.Profile, name: opts.Profile.Name}
	if s.profile.Mode == hub.ModeDirect {
		s.mcp = mcp.NewServer(&mcp.Implementation{Name: serverName, Title: "capabilities hub (" + s.name + ")", Version: Version}, &mcp.ServerOptions{
			Instructions: directInstructions,
			Logger:       opts.Logger,
			GetSessionID: sessionIDs(opts.Node),
			// Tools come and go with the hub's sources and the profile.
			Capabilities: withSkills(&mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}}),
		})
		s.gate()
		s.onListed()
		s.direct.shown = map[string]string{}
		if err := s.syncDirect(context.Background()); err != nil {
			opts.Logger.Warn("the direct-mode profile starts with no tools", "profile", s.name, "err", err)
		}
		s.watchDirect()
		s.serveSkills()
		return s
	}
	s.impl = &mcp.Implementation{Name: serverName, Title: "capabilities hub", Version: Version}
	s.mcp = mcp.NewServer(s.impl, &mcp.ServerOptions{
		Instructions: instructions + profileInstructions(s.profile),
		Logger:       opts.Logger,
		GetSessionID: sessionIDs(opts.Node),
		Capabilities: codeCapabilities(),
	})
	s.gate()
	s.onListed()
	yes, no := true, false
	// The same handlers answer the HTTP requests the hub takes itself
	// (fastCall).
	s.calls = map[string]mcp.ToolHandler{
		"search":   s.inProfile(s.search),
		"describe": s.inProfile(s.describe),
		"execute":  s.inProfile(s.execute),
	}
	s.mcp.AddTool(&mcp.Tool{
		Name:        "search",
		Description: searchDescription,
		InputSchema: searchSchema,
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: &no},
	}, s.calls["search"])
	s.mcp.AddTool(&mcp.Tool{
		Name:        "describe",
		Description: describeDescription,
		InputSchema: describeSchema,
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: &no},
	}, s.calls["describe"])
	s.mcp.AddTool(&mcp.Tool{
		Name:         "execute",
		Description:  executeDescription,
		InputSchema:  executeSchema,
		OutputSchema: envelopeSchema,
		Annotations:  &mcp.ToolAnnotations{ReadOnlyHint: false, DestructiveHint: &yes, OpenWorldHint: &yes},
	}, s.calls["execute"])
	s.serveSkills()
	return s
}

// onListed calls Options.Listed after the first tools/list is answered.
func (s *Server) onListed() {
	listed := s.opts.Listed
	if listed == nil {
		return
	}
	var once sync.Once
	s.mcp.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if method == "tools/list" {
				once.Do(listed)
			}
			return res, err
		}
	})
}

// gate answers the requests that reach the hub with Options.Unavailable's
// error while it returns one.
func (s *Server) gate() {
	unavailable := s.opts.Unavailable
	if unavailable == nil {
		return
	}
	s.mcp.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			switch method {
			case "tools/call", "resources/read", "prompts/get":
			default:
				return next(ctx, method, req)
			}
			err := unavailable()
			switch {
			case err == nil:
				return next(ctx, method, req)
			case method == "tools/call":
				return toolError("%s", err.Error()), nil
			default:
				return nil, err
			}
		}
	})
}

// Close stops following the hub's changes (direct mode) and closes the
// servers of other profiles made for HTTP.
func (s *Server) Close() {
	if s.direct.stop != nil {
		s.direct.stop()
	}
	s.stopSkills()
	s.subsMu.Lock()
	defer s.subsMu.Unlock()
	for _, ps := range s.subs {
		ps.srv.Close()
	}
	s.subs = nil
}

// ProfileName is the name of the profile this server serves.
func (s *Server) ProfileName() string { return s.name }

// MCP is the underlying go-sdk server.
func (s *Server) MCP() *mcp.Server { return s.mcp }

func toolError(format string, args ...any) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf(format, args...)}}}
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// decode reads the arguments strictly: unknown fields are errors.
func decode(req *mcp.CallToolRequest, v any) error {
	raw := req.Params.Arguments
	if len(raw) == 0 {
		raw = json.RawMessage(`{}`)
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("invalid arguments: %v", err)
	}
	return nil
}

func (s *Server) search(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var in struct {
		Query     string `json:"query"`
		Namespace string `json:"namespace"`
		Limit     *int   `json:"limit"`
	}
	if err := decode(req, &in); err != nil {
		return toolError("search: %v. Pass {query: string (1-200 chars), namespace?: string, limit?: 1-25}.", err), nil
	}
	q := hub.SearchQuery{Text: in.Query, Namespace: in.Namespace, Limit: index.DefaultLimit}
	if in.Limit != nil {
		if *in.Limit < 1 || *in.Limit > index.MaxLimit {
			return toolError("search: limit %d is out of range: pass 1 to %d (default %d)", *in.Limit, index.MaxLimit, index.DefaultLimit), nil
		}
		q.Limit = *in.Limit
	}
	if n := utf8.RuneCountInString(in.Query); n > index.MaxQueryLen {
		return toolError("search: query is %d characters long; the limit is %d", n, index.MaxQueryLen), nil
	}
	res, err := s.hub.Search(ctx, q)
	if err != nil {
		return toolError("%v", err), nil
	}
	return text(res.Text()), nil
}

func (s *Server) describe(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var in struct {
		Targets []string `json:"targets"`
	}
	if err := decode(req, &in); err != nil {
		return toolError("describe: %v. Pass {targets: string[]} with 1 to 10 addresses, namespaces or type names.", err), nil
	}
	if len(in.Targets) < 1 || len(in.Targets) > typegen.MaxTargets {
		return toolError("describe: pass 1 to %d targets (got %d)", typegen.MaxTargets, len(in.Targets)), nil
	}
	out, err := s.hub.Describe(ctx, in.Targets, 0)
	if err != nil {
		return toolError("%v", err), nil
	}
	return text(out), nil
}
