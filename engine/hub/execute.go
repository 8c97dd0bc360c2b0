package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/capabilities-sh/capabilities/engine/code"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/openapi"
	"github.com/capabilities-sh/capabilities/engine/policy"
	"github.com/capabilities-sh/capabilities/engine/run"
	"github.com/capabilities-sh/capabilities/engine/sandbox"
	"github.com/capabilities-sh/capabilities/engine/scrub"
	"github.com/capabilities-sh/capabilities/engine/source"
	"github.com/capabilities-sh/capabilities/store"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Envelope is what execute returns.
type Envelope = run.Envelope

// runs is the run engine, made on first use, and its sandbox, built only
// when code runs: building it compiles QuickJS (0.6 s of CPU), which
// listing, showing or cancelling runs does not need.
type runs struct {
	once   sync.Once
	engine *run.Engine

	sbOnce sync.Once
	driver atomic.Pointer[sandbox.Driver] // once built (Anticipate reads it unsynchronized)
	err    error

	// executed is closed when the first execute has ended (Prepare waits
	// for it before reading the catalog, when runs have kept namespaces).
	executedOnce, executedMade sync.Once
	executed                   chan struct{}
}

func (r *runs) executedChan() chan struct{} {
	r.executedMade.Do(func() { r.executed = make(chan struct{}) })
	return r.executed
}

// catalogDelay is how long Prepare waits for the first execute before it
// reads the catalog anyway.
const catalogDelay = 2 * time.Second

func (h *Hub) runEngine() *run.Engine {
	h.runs.once.Do(func() {
		h.runs.engine = run.New(h.store, lazySandbox{h}, tools{h}, run.Options{Logger: h.log, Limits: h.opts.Run, Sandbox: h.opts.Sandbox, Retention: h.autoRetention})
	})
	return h.runs.engine
}

// Prepare builds, on goroutines of its own, what the first execute needs:
// the sandbox (QuickJS loaded from the compiled-code cache, or compiled and
// stored there, and runtimes warmed with the hub's namespaces) and the
// catalog of tools. serve calls
// it at start, so the agent's first execute finds them ready while listing
// tools never waits for them. Close waits for them.
//
// With the namespaces kept from the last start (nscache.go), an execute
// needs only the sandbox until its code calls a tool: the catalog is read
// once the first execute has ended (or after catalogDelay), not beside it,
// so that on a small machine the first execute does not share the CPU (and
// the garbage collector) with decoding every manifest. A search, a describe
// or a tool call before then reads it at once.
func (h *Hub) Prepare(ctx context.Context) {
	catalogTurn := make(chan struct{})
	h.preparing.Add(2)
	go func() {
		defer h.preparing.Done()
		kept := h.quickNamespaces(ctx)
		if kept == nil {
			close(catalogTurn)
		} else {
			defer func() {
				t := time.NewTimer(catalogDelay)
				defer t.Stop()
				select {
				case <-h.runs.executedChan():
				case <-t.C:
				case <-ctx.Done():
				}
				close(catalogTurn)
			}()
		}
		d, err := h.sandbox()
		if err != nil {
			h.log.Warn("preparing the sandbox", "err", err)
			return
		}
		// Until the catalog is read, ready runtimes get the kept namespaces
		// (a shared Driver's serve other hubs too: each run says its own).
		if kept != nil && h.catalog.Load() == nil && h.opts.Driver == nil {
			d.Expect(kept)
		}
	}()
	go func() {
		defer h.preparing.Done()
		select {
		case <-catalogTurn:
		case <-ctx.Done():
		}
		c, err := h.loadCatalog(ctx)
		if err != nil {
			h.log.Warn("preparing the catalog", "err", err)
			return
		}
		// Ready runtimes get the hub's namespaces installed (waits for the
		// sandbox, being built beside).
		if d, err := h.sandbox(); err == nil && h.opts.Driver == nil {
			d.Expect(c.namespaces())
		}
		h.saveNamespaces(c)
		done := h.busy()
		c.search() // then the first search's index
		trimHeap()
		done() // trimmed again once idle
	}()
}

// PrepareWhen is Prepare started once ready is closed or wait has passed,
// whichever comes first; not at all when ctx ends before. serve --stdio
// prepares once the agent has listed the tools. Close waits for it.
func (h *Hub) PrepareWhen(ctx context.Context, ready <-chan struct{}, wait time.Duration) {
	h.preparing.Add(1)
	go func() {
		defer h.preparing.Done()
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-ready:
		case <-t.C:
		case <-ctx.Done():
			return
		}
		h.Prepare(ctx)
	}()
}

// trimHeap gives the heap back to the system when what Prepare built left
// much of it unused: a machine's first start compiles QuickJS (then
// cached), some 60 MB that a process running all day (the desktop app,
// serve --http) would otherwise keep in its RSS for minutes (92 MB idle,
// not 40). After a start from the cache there is too little to bother.
func trimHeap() {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if ms.HeapIdle-ms.HeapReleased > trimAbove {
		debug.FreeOSMemory()
	}
}

// trimAbove is the idle heap, not yet given back, worth giving back at once.
const trimAbove = 32 << 20

// sandbox builds the sandbox once, or takes the shared one
// (Options.Driver).
func (h *Hub) sandbox() (*sandbox.Driver, error) {
	h.runs.sbOnce.Do(func() {
		if h.opts.Driver != nil {
			h.runs.driver.Store(h.opts.Driver)
			return
		}
		d, err := sandbox.New(sandbox.Options{CacheDir: sandbox.DefaultCacheDir()})
		if err != nil {
			h.runs.err = fmt.Errorf("starting the sandbox: %w", err)
			return
		}
		h.runs.driver.Store(d)
	})
	return h.runs.driver.Load(), h.runs.err
}

// Anticipate says an execute is on its way (its request arrived and is
// being decoded; js is its code when known): an idle sandbox warms itself
// up meanwhile (sandbox.Driver.Anticipate), unless the code is one call the
// hub makes without it (code.OneCall), and so do the local upstreams the
// runs of the last minutes called whose namespace the code names
// (source.Pool.Wake): the others see no traffic from this run. A sandbox
// not built yet is left alone.
func (h *Hub) Anticipate(js string) {
	if d := h.runs.driver.Load(); d != nil {
		if _, _, _, one := code.OneCall(js); !one {
			d.Anticipate()
		}
	}
	h.pool.Wake(func(ns string) bool { return strings.Contains(js, ns) })
}

// lazySandbox is the run engine's sandbox, built by its first attempt.
type lazySandbox struct{ h *Hub }

func (l lazySandbox) Run(ctx context.Context, req sandbox.Request) sandbox.Outcome {
	if out, ok := directRun(ctx, req); ok { // a direct call: no runtime needed
		return directFailed(req.JS, out)
	}
	if out, ok := oneCallRun(ctx, req); ok { // nor for one call returned
		return out
	}
	d, err := l.h.sandbox()
	if err != nil {
		return sandbox.Outcome{Status: sandbox.StatusFailed, Error: &sandbox.Error{Code: sandbox.CodeInternal, Message: err.Error()}}
	}
	req.Key = l.h.opts.Tenant
	return directFailed(req.JS, d.Run(ctx, req))
}

// Execute runs the model's code as a new run.
func (h *Hub) Execute(ctx context.Context, code string) (*Envelope, error) {
	defer h.busy()()
	h.current() // what another process wrote is there for this run
	if _, err := h.sandbox(); err != nil {
		return nil, err
	}
	env, err := h.runEngine().Execute(ctx, code)
	h.runs.executedOnce.Do(func() { close(h.runs.executedChan()) })
	h.explainOutside(ctx, env)
	return env, err
}

// Resume continues a run after a person decided (or returns its current
// envelope when nothing changed).
func (h *Hub) Resume(ctx context.Context, runID string) (*Envelope, error) {
	defer h.busy()()
	h.current()
	if _, err := h.sandbox(); err != nil {
		return nil, err
	}
	env, err := h.runEngine().Resume(ctx, runID)
	if errors.Is(err, run.ErrRunningElsewhere) {
		// This hub is going on with it since a person decided
		// (FinishDecided): the agent's resume gets how it ends.
		if done, ok := h.finishing.Load(runID); ok {
			select {
			case <-done.(chan struct{}):
				return h.runEngine().Resume(ctx, runID)
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
	}
	return env, err
}

// ResumeWaiting is Resume for an agent's execute({resume}): when another
// process holds a run a person decided (on a shared store, the one that
// heard the decision first), it waits a while (heldWait) for that process
// to let go, then gets how the run ends, instead of "running in another
// process". A run no one decided (live in its own process) is answered at
// once. A person's `hub approve` uses Resume, which says at once that the
// run goes on elsewhere.
func (h *Hub) ResumeWaiting(ctx context.Context, runID string) (*Envelope, error) {
	env, err := h.Resume(ctx, runID)
	if errors.Is(err, run.ErrRunningElsewhere) && h.decidedSome(ctx, runID) && h.awaitReleased(ctx, runID) {
		return h.Resume(ctx, runID)
	}
	return env, err
}

// heldWait bounds how long an agent's resume waits for a run another
// process holds; an MCP client gives a request a minute.
const heldWait = 30 * time.Second

// decidedSome reports whether a person decided one of run id's pending
// calls.
func (h *Hub) decidedSome(ctx context.Context, id string) bool {
	r, err := store.Get[model.Run](ctx, h.store, store.Runs, id)
	if err != nil {
		return false
	}
	for _, p := range r.Pending {
		if p.Decision != nil {
			return true
		}
	}
	return false
}

// awaitReleased waits, up to heldWait, until no process holds run id, and
// reports whether it was let go.
func (h *Hub) awaitReleased(ctx context.Context, id string) bool {
	ctx, cancel := context.WithTimeout(ctx, heldWait)
	defer cancel()
	pause := 20 * time.Millisecond
	for {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(pause):
		}
		held, err := h.store.Held(ctx, store.Runs, id)
		if err != nil {
			return false
		}
		if !held {
			return true
		}
		pause = min(2*pause, 500*time.Millisecond)
	}
}

// Runs gives the run engine for reading runs (list, show, cancel).
func (h *Hub) Runs() (*run.Engine, error) { return h.runEngine(), nil }

// tools adapts the hub to what a run needs.
type tools struct{ h *Hub }

func (t tools) Namespaces(ctx context.Context) (*sandbox.Namespaces, error) {
	if set := t.h.quickNamespaces(ctx); set != nil { // the catalog is being read
		return set, nil
	}
	c, err := t.h.loadCatalog(ctx)
	if err != nil {
		return nil, err
	}
	return t.h.runNamespaces(ctx, c)
}

func (t tools) Tool(ctx context.Context, address string) (*model.Tool, error) {
	c, err := t.h.loadCatalog(ctx)
	if err != nil {
		return nil, err
	}
	if err := t.h.outsideView(ctx, c, address); err != nil {
		return nil, err
	}
	if tl := c.byAddr[address]; tl != nil {
		cp := *tl
		return &cp, nil
	}
	return nil, fmt.Errorf("%w %q: it is not in the hub's manifests (was it removed?)", ErrUnknownTool, address)
}

func (t tools) Verdict(ctx context.Context, tl *model.Tool, conn string) (policy.Verdict, error) {
	return t.h.Verdict(ctx, tl, conn)
}

func (t tools) Search(ctx context.Context, query string) (string, error) {
	res, err := t.h.Search(ctx, SearchQuery{Text: query})
	if err != nil {
		return "", err
	}
	return res.Text(), nil
}

func (t tools) Describe(ctx context.Context, target string) (string, error) {
	return t.h.Describe(ctx, []string{target}, 0)
}

func (t tools) Check(ctx context.Context, tl *model.Tool, conn string, args json.RawMessage) *model.ToolError {
	c, err := t.h.loadCatalog(ctx)
	if err != nil {
		return &model.ToolError{Code: "internal_error", Message: err.Error()}
	}
	if err := c.validateArgs(tl, args); err != nil {
		return invalidArgs(tl, err)
	}
	return t.h.checkArgs(ctx, true, tl, conn, args)
}

func invalidArgs(tl *model.Tool, err error) *model.ToolError {
	return &model.ToolError{Code: "invalid_arguments", Message: err.Error(), Status: 400, Hint: "hub.describe(\"" + tl.Address + "\") shows the exact input type"}
}

func (t tools) Call(ctx context.Context, tl *model.Tool, conn string, args json.RawMessage) (json.RawMessage, *model.ToolError) {
	c, err := t.h.loadCatalog(ctx)
	if err != nil {
		return nil, &model.ToolError{Code: "internal_error", Message: err.Error()}
	}
	if err := c.validateArgs(tl, args); err != nil { // checked before asking too (Check); a policy may have changed since
		return nil, invalidArgs(tl, err)
	}
	src := c.sources[tl.Namespace()]
	if src == nil {
		return nil, &model.ToolError{Code: "unknown_tool", Message: fmt.Sprintf("the source of %s was removed", tl.Address)}
	}
	protocol := c.proto[tl.Namespace()]
	// The secret is resolved only now: after policy and approval.
	cred, err := t.h.credential(ctx, src, conn)
	if err == nil {
		err = readyToken(ctx, src.Namespace, cred)
	}
	var ce *ConnectionError
	if errors.As(err, &ce) {
		if ce.Unknown {
			return nil, &model.ToolError{Code: "unknown_connection", Message: ce.Error(), Status: 400, Hint: "call without the connection option to use the default"}
		}
		return nil, &model.ToolError{Code: run.CodeConnectionRequired, Message: ce.Error(), Hint: "capabilities hub auth " + ce.Namespace + " --connection " + ce.Connection}
	}
	if err != nil {
		return nil, &model.ToolError{Code: "connection_error", Message: err.Error(), Status: 500}
	}
	if cred == nil && tl.Secured {
		ce := missingCredential(src.Namespace, conn)
		return nil, &model.ToolError{Code: run.CodeConnectionRequired, Message: ce.Error(), Hint: "capabilities hub auth " + ce.Namespace + " --connection " + ce.Connection}
	}
	// Every credential the hub stores is read now (the call's own first,
	// just above): the arguments carry none of another origin's.
	if terr := t.h.checkArgs(ctx, false, tl, conn, args); terr != nil {
		return nil, terr
	}
	s, err := t.h.pool.Session(ctx, *src, protocol, cred)
	if ce := signInError(src.Namespace, cred, err); err != nil && ce != nil {
		return nil, connectionRequired(ce)
	}
	if err != nil {
		return nil, &model.ToolError{Code: "upstream_unavailable", Message: t.h.Scrub(err.Error()), Status: 503, Retryable: true, Hint: "a person can check it with `capabilities hub doctor`"}
	}
	// A write's intent is journaled now, right before the request goes out.
	if err := run.BeforeSend(ctx); err != nil {
		return nil, &model.ToolError{Code: "journal_failed", Message: "the hub could not record the call before making it: " + err.Error(), Status: 500}
	}
	if src.Kind == model.KindOpenAPI {
		connName := ""
		if cred != nil {
			connName = cred.Connection
		}
		ctx = openapi.WithCheck(ctx, func(parts ...string) error {
			if terr := t.h.checkOrigin(ctx, false, tl.Address, src.Namespace, connName, parts...); terr != nil {
				return &refusal{terr}
			}
			return nil
		})
	}
	res, err := s.CallTool(ctx, tl.Name, args)
	if r := (*refusal)(nil); errors.As(err, &r) {
		return nil, r.ToolError
	}
	t.h.knowEveryCredential(ctx)
	var te *source.TimeoutError
	if errors.As(err, &te) {
		return nil, &model.ToolError{Code: "upstream_timeout", Address: tl.Address, Message: tl.Address + ": " + timeoutText(te), Status: 504, Retryable: true, Hint: "the upstream may be stuck or slow: retry later, or do without this call; a person can check it with `capabilities hub doctor`"}
	}
	if ce := signInError(src.Namespace, cred, err); err != nil && ce != nil {
		return nil, connectionRequired(ce)
	}
	if err != nil {
		// A call cut short by its caller, or whose upstream died (the next
		// call starts it again), may be retried.
		retry := ctx.Err() != nil || !s.Alive()
		code := "upstream_error"
		if ctx.Err() != nil {
			code = "upstream_timeout"
		}
		return nil, &model.ToolError{Code: code, Message: t.h.Scrub(err.Error()), Status: 502, Retryable: retry}
	}
	v, terr := resultValue(t.h.scrubResult(res))
	if terr != nil {
		terr.Message = t.h.Scrub(terr.Message)
	}
	return v, terr
}

// connectionRequired is the ToolError of a call that waits for a person
// to store a credential or sign in again (awaiting_connection).
func connectionRequired(ce *ConnectionError) *model.ToolError {
	return &model.ToolError{Code: run.CodeConnectionRequired, Message: ce.Error(), Hint: "capabilities hub auth " + ce.Namespace + " --connection " + ce.Connection}
}

func (t tools) Scrubber(ctx context.Context, journal []model.JournalEntry) *scrub.Scrubber {
	return t.h.RunScrubber(ctx, journal)
}

func (t tools) ConnectionReady(ctx context.Context, address, conn string) bool {
	ns, _, _ := model.SplitAddress(address)
	return t.h.ConnectionReady(ctx, ns, conn)
}

// resultValue turns an MCP tool result into what the code receives: the
// structured content when there is some; else a lone text, parsed when it is
// a JSON object or array; else the content list. An error result becomes a
// ToolError carrying its text.
func resultValue(res *mcp.CallToolResult) (json.RawMessage, *model.ToolError) {
	var texts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			texts = append(texts, tc.Text)
		}
	}
	if res.IsError {
		msg := strings.Join(texts, "\n")
		if msg == "" {
			msg = "the tool reported an error"
		}
		te := &model.ToolError{Code: "tool_error", Message: msg}
		if h, ok := res.Meta[openapi.MetaHTTP].(map[string]any); ok {
			if n, ok := h["status"].(int); ok {
				te.Status = n
			} else if f, ok := h["status"].(float64); ok {
				te.Status = int(f)
			}
			te.Hint, _ = h["hint"].(string)
		}
		return nil, te
	}
	if res.StructuredContent != nil {
		b, err := json.Marshal(res.StructuredContent)
		if err == nil {
			return b, nil
		}
	}
	if len(res.Content) == 1 && len(texts) == 1 {
		s := strings.TrimSpace(texts[0])
		if (strings.HasPrefix(s, "{") || strings.HasPrefix(s, "[")) && json.Valid([]byte(s)) {
			return json.RawMessage(s), nil
		}
		b, _ := json.Marshal(texts[0])
		return b, nil
	}
	b, err := json.Marshal(res.Content)
	if err != nil {
		return nil, &model.ToolError{Code: "upstream_error", Message: "the result could not be encoded: " + err.Error()}
	}
	return b, nil
}
