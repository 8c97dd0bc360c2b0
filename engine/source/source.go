// Package source is the hub's MCP client to upstream servers: a local stdio
// command or a remote streamable-HTTP URL.
//
// Connecting tries protocol 2026-07-28 (server/discover) first and falls
// back to 2025-11-25 when the upstream refuses it or does not answer; a
// stdio upstream runs in its own process group with a minimal environment,
// its stray stdout lines are dropped, and it is reaped when the session
// closes. Pool starts
// sessions lazily, on the first call that needs one.
package source

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/capabilities-sh/capabilities/engine/egress"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/oauth"
	"github.com/capabilities-sh/capabilities/engine/openapi"
	"github.com/capabilities-sh/capabilities/engine/scrub"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Protocol versions the hub speaks to upstreams, newest first.
const (
	ProtocolLatest = "2026-07-28"
	ProtocolLegacy = "2025-11-25"
)

// Options configure connections to upstreams. The zero value is useful.
type Options struct {
	// ConnectTimeout bounds starting an upstream and the handshake
	// (DefaultConnectTimeout). A stdio upstream still showing signs of
	// work (output, CPU time) gets more, up to DefaultStartCap.
	ConnectTimeout time.Duration
	// DiscoverTimeout bounds the wait for an answer to server/discover
	// before falling back to the 2025-11-25 handshake (a third of the
	// connect timeout: 10 s by default). It counts from when a stdio
	// upstream read the request (on Linux; elsewhere from its start).
	DiscoverTimeout time.Duration
	// OnStart, when set, is told how the start of a stdio upstream is
	// going, about every second while it lasts (never after Connect
	// returned).
	OnStart func(StartStatus)
	// Protocol, when set, is the version to use directly (the one a
	// previous connection negotiated), skipping discovery.
	Protocol string
	// Logger receives diagnostics; nil discards them.
	Logger *slog.Logger
	// OnToolsChanged is called when the upstream announces that its tool
	// list changed.
	OnToolsChanged func(namespace string)
	// HTTPClient is used for streamable-HTTP sources (a client with sane
	// timeouts by default).
	HTTPClient *http.Client
	// Egress, when set, checks every connection to a remote source (an
	// MCP server, an OpenAPI document, the documents it refers to, its
	// calls) and each redirect: a hosted hub reaches only public addresses
	// and the operator's allowed ranges. nil: no such check (a local hub).
	// It applies when HTTPClient is nil.
	Egress *egress.Guard
	// CallTimeout bounds each request to an upstream once it is connected
	// (a tool call, a listing of its tools) for a source without its own
	// CallTimeoutMs (DefaultCallTimeout).
	CallTimeout time.Duration
	// RemoteOnly refuses stdio sources (ErrStdioRefused) before anything
	// starts: a hosted hub runs no upstream process of its own.
	RemoteOnly bool
}

// ErrStdioRefused is why a hub with Options.RemoteOnly (a hosted hub)
// refuses a stdio source.
var ErrStdioRefused = errors.New("stdio sources cannot run on a hosted hub; add a remote (streamable HTTP) or OpenAPI source")

// DefaultCallTimeout bounds each call to an upstream: an upstream that
// hangs, answers under another request id or prints only garbage fails the
// call with a *TimeoutError instead of holding it forever.
const DefaultCallTimeout = 60 * time.Second

// callTimeout is the deadline of src's calls.
func (o *Options) callTimeout(src *model.Source) time.Duration {
	switch {
	case src.CallTimeoutMs > 0:
		return time.Duration(src.CallTimeoutMs) * time.Millisecond
	case o.CallTimeout > 0:
		return o.CallTimeout
	}
	return DefaultCallTimeout
}

// ErrCallTimeout is matched (errors.Is) by a *TimeoutError.
var ErrCallTimeout = errors.New("the upstream did not answer in time")

// TimeoutError is a request the upstream did not answer before its
// deadline.
type TimeoutError struct {
	Namespace string
	Method    string // "tools/call" or "tools/list"
	Tool      string // the upstream tool's name, for tools/call
	Timeout   time.Duration
	Strays    int // non-protocol lines the upstream wrote meanwhile
}

func (e *TimeoutError) Error() string {
	what := "listing tools of " + e.Namespace
	if e.Tool != "" {
		what = fmt.Sprintf("calling %s on %s", e.Tool, e.Namespace)
	}
	msg := fmt.Sprintf("%s: the server did not answer within %s", what, Seconds(e.Timeout))
	if e.Strays > 0 {
		msg += fmt.Sprintf(" (meanwhile it wrote %d non-protocol lines on stdout)", e.Strays)
	}
	return msg
}

// Is makes errors.Is(err, ErrCallTimeout) true.
func (e *TimeoutError) Is(target error) bool { return target == ErrCallTimeout }

// Seconds writes d for a person: "60 s", "1.5 s".
func Seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + " s"
}

// errDeadline is the cause of a call's context when its own deadline ends it.
var errDeadline = errors.New("the call's deadline passed")

// DefaultConnectTimeout bounds starting an upstream and its handshake. It is
// generous: server-everything answers in 0.5 s on an idle 2-core machine and
// took 8 s at a load average of 30, and a slow start must neither fail nor,
// through the discover timeout, fall back to the older protocol.
const DefaultConnectTimeout = 30 * time.Second

func (o *Options) connectTimeout() time.Duration {
	if o.ConnectTimeout > 0 {
		return o.ConnectTimeout
	}
	return DefaultConnectTimeout
}

func (o *Options) discoverTimeout() time.Duration {
	if o.DiscoverTimeout > 0 {
		return o.DiscoverTimeout
	}
	return o.connectTimeout() / 3
}

func (o *Options) logger() *slog.Logger {
	if o.Logger != nil {
		return o.Logger
	}
	return slog.New(slog.DiscardHandler)
}

// Session is a live MCP session with one upstream.
type Session struct {
	src      model.Source // as started (with the credential in its env)
	orig     model.Source // as configured, to notice a changed source
	secret   string       // the credential's value, to notice a changed secret
	cred     *Credential  // what ListTools scrubs from the upstream's self-description
	log      *slog.Logger
	cs       *mcp.ClientSession
	proc     *process        // nil for HTTP
	refusal  *statusRecorder // an HTTP source's error status while connecting
	api      *openapi.API    // an openapi source's document; cs is nil then
	apiMu    sync.Mutex      // guards api, replaced when the document is read again
	apiFresh atomic.Bool     // api was just read: the first ListTools uses it
	oauth    *oauth.Source   // an openapi source signed in with OAuth
	egress   *egress.Guard   // checks an openapi source's connections (nil: none)

	callTimeout time.Duration
	ended       chan struct{} // closed when the MCP connection ended
	broken      atomic.Bool   // a call found the connection gone
	wake        waking
}

// Connect starts (for stdio) and connects to the source, with no credential.
func Connect(ctx context.Context, src model.Source, opts Options) (*Session, error) {
	return ConnectWith(ctx, src, nil, opts)
}

// ConnectWith connects with a resolved credential (nil for none).
func ConnectWith(ctx context.Context, src model.Source, cred *Credential, opts Options) (*Session, error) {
	// The source as configured, before the credential joins its
	// environment: Pool compares it with the next call's source, and a
	// difference would restart the upstream on every call.
	if opts.RemoteOnly && src.Kind == model.KindStdio {
		return nil, fmt.Errorf("connecting to %s: %w", nameOf(&src), ErrStdioRefused)
	}
	orig, secretValue := src, cred.key()
	if cred != nil && cred.Value != "" && src.Kind == model.KindStdio {
		if src.SecretEnv == "" {
			return nil, fmt.Errorf("connecting to %s: the source has no variable for its credential; set one with `capabilities hub auth %s --env VAR`", nameOf(&src), src.Namespace)
		}
		env := make(map[string]string, len(src.Env)+1)
		for k, v := range src.Env {
			env[k] = v
		}
		env[src.SecretEnv] = cred.Value
		src.Env = env
	}
	if src.Kind == model.KindOpenAPI {
		return connectOpenAPI(ctx, src, orig, cred, opts)
	}
	if src.Kind == model.KindHTTP && opts.HTTPClient == nil {
		value := ""
		var base http.RoundTripper = http.DefaultTransport
		if opts.Egress != nil {
			base = opts.Egress.Transport(nameOf(&src))
		}
		if cred != nil && cred.OAuth != nil {
			o, err := oauth.OriginOf(src.URL)
			if err != nil {
				return nil, fmt.Errorf("connecting to %s: %w", nameOf(&src), err)
			}
			base = &oauth.Transport{Base: base, Source: cred.OAuth, Origin: o, Challenge: cred.Challenge}
		} else if cred != nil {
			value = cred.Value
		}
		hc, err := newGuardedClientOver(src.URL, src.SecretHeader, value, src.Headers, base)
		if err != nil {
			return nil, fmt.Errorf("connecting to %s: %w", nameOf(&src), err)
		}
		opts.HTTPClient = hc
	}
	s, err := negotiate(ctx, src, opts)
	if err != nil {
		return nil, err
	}
	s.orig, s.secret, s.cred = orig, secretValue, cred
	return s, nil
}

// negotiate connects with 2026-07-28 first and falls back to 2025-11-25
// when server/discover gets no answer in time. A server that answers it
// without 2026-07-28 among its versions (a stateful go-sdk server) or
// refuses it (an error, HTTP 400) gets initialize 2025-11-25 from go-sdk's
// Client.Connect itself, in the same attempt: the session then reports
// 2025-11-25, which is what the manifest records.
func negotiate(ctx context.Context, src model.Source, opts Options) (*Session, error) {
	if src.Kind == model.KindStdio {
		return negotiateStdio(ctx, src, opts)
	}
	ctx, cancel := context.WithTimeout(ctx, opts.connectTimeout())
	defer cancel()
	if opts.Protocol != "" && opts.Protocol < ProtocolLatest {
		return connect(ctx, src, opts, opts.Protocol, nil)
	}
	dctx, dcancel := context.WithTimeout(ctx, opts.discoverTimeout())
	s, err := connect(dctx, src, opts, ProtocolLatest, nil)
	timedOut := dctx.Err() != nil
	dcancel()
	if err == nil {
		return s, nil
	}
	if ctx.Err() != nil || !timedOut {
		return nil, err
	}
	// The upstream did not answer server/discover in time: a legacy server
	// that ignores unknown methods. Start over with the 2025-11-25 handshake.
	opts.logger().Info("upstream did not answer server/discover; falling back", "namespace", src.Namespace, "protocol", ProtocolLegacy)
	return connect(ctx, src, opts, ProtocolLegacy, nil)
}

// negotiateStdio is negotiate for a stdio upstream, whose start a
// startWatch governs instead of fixed deadlines: server/discover gets its
// time once the server read it, and a start goes on past the connect
// timeout while the server shows signs of work.
func negotiateStdio(ctx context.Context, src model.Source, opts Options) (*Session, error) {
	w := newStartWatch(&opts)
	if opts.Protocol != "" && opts.Protocol < ProtocolLatest {
		return connect(ctx, src, opts, opts.Protocol, w)
	}
	s, err := connect(ctx, src, opts, ProtocolLatest, w)
	if !errors.Is(err, errNoDiscover) {
		return s, err
	}
	opts.logger().Info("upstream did not answer server/discover; falling back", "namespace", src.Namespace, "protocol", ProtocolLegacy)
	return connect(ctx, src, opts, ProtocolLegacy, w)
}

// connect makes one attempt at a session; w governs a stdio upstream's
// start (nil: ctx alone bounds it).
func connect(ctx context.Context, src model.Source, opts Options, version string, w *startWatch) (*Session, error) {
	s := &Session{src: src, log: opts.logger()}
	var transport mcp.Transport
	switch src.Kind {
	case model.KindStdio:
		p, err := startProcess(&src, opts.logger())
		if err != nil {
			return nil, err
		}
		s.proc = p
		transport = lineTransport{r: p.stdout, w: p.stdin}
	case model.KindHTTP:
		hc := http.DefaultClient
		if opts.HTTPClient != nil {
			hc = opts.HTTPClient
		}
		s.refusal = &statusRecorder{base: hc.Transport}
		if s.refusal.base == nil {
			s.refusal.base = http.DefaultTransport
		}
		recording := *hc
		recording.Transport = s.refusal
		transport = &mcp.StreamableClientTransport{Endpoint: src.URL, HTTPClient: &recording, MaxRetries: -1}
	default:
		return nil, fmt.Errorf("connecting to %s: unknown source kind %q (want stdio or http)", nameOf(&src), src.Kind)
	}
	copts := &mcp.ClientOptions{
		Logger:       opts.Logger,
		Capabilities: &mcp.ClientCapabilities{},
	}
	if opts.OnToolsChanged != nil {
		ns := src.Namespace
		copts.ToolListChangedHandler = func(context.Context, *mcp.ToolListChangedRequest) { opts.OnToolsChanged(ns) }
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "capabilities", Version: "0.1.0"}, copts)
	type result struct {
		cs  *mcp.ClientSession
		err error
	}
	ch := make(chan result, 1)
	hctx := ctx
	stopWatch := func() {}
	if w != nil && s.proc != nil {
		var cancel context.CancelCauseFunc
		hctx, cancel = context.WithCancelCause(ctx)
		defer cancel(nil)
		stopWatch = w.watch(s, version == ProtocolLatest, cancel)
	}
	go func() {
		cs, err := client.Connect(hctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: version})
		ch <- result{cs, err}
	}()
	var r result
	select {
	case r = <-ch:
	case <-exitedChan(s.proc):
		// The server died during start; give the SDK a moment to notice.
		select {
		case r = <-ch:
		case <-time.After(200 * time.Millisecond):
			r.err = errExited
		}
	}
	stopWatch()
	if r.err != nil {
		if r.cs != nil {
			_ = r.cs.Close()
		}
		if ctx.Err() == nil && errors.Is(context.Cause(hctx), errNoDiscover) {
			s.proc.stop()
			return nil, errNoDiscover
		}
		return nil, s.startError(hctx, r.err)
	}
	s.cs = r.cs
	s.callTimeout = opts.callTimeout(&src)
	s.ended = make(chan struct{})
	go func() {
		_ = s.cs.Wait()
		close(s.ended)
	}()
	return s, nil
}

func exitedChan(p *process) <-chan struct{} {
	if p == nil {
		return nil
	}
	return p.done
}

// startError closes the session's process and explains why starting failed.
func (s *Session) startError(ctx context.Context, err error) error {
	where := s.src.URL
	if s.proc != nil {
		where = s.src.ShownCommandLine()
		running := !s.proc.exited()
		s.proc.stop()
		status := s.proc.exitText()
		stderr := s.Stderr(stderrLines)
		switch {
		case ctx.Err() != nil && running || errors.Is(err, context.DeadlineExceeded):
			why := ""
			if st := (*stalled)(nil); errors.As(context.Cause(ctx), &st) {
				why = ": " + st.Error()
			}
			err = fmt.Errorf("the server did not answer the MCP handshake in time%s (is it an MCP server speaking stdio? one that starts slowly gets more time with `capabilities hub add --timeout` or CAPABILITIES_CONNECT_TIMEOUT)", why)
		default:
			err = fmt.Errorf("the server %s during start", status)
		}
		if s.proc.strays > 0 {
			err = fmt.Errorf("%w; it wrote %d non-protocol lines on stdout", err, s.proc.strays)
		}
		if stderr != "" {
			err = fmt.Errorf("%w; its stderr ends with:\n%s", err, indent(stderr))
		}
	} else if errors.Is(err, context.DeadlineExceeded) {
		err = fmt.Errorf("no MCP answer in time (is the URL an MCP streamable-HTTP endpoint?): %w", err)
	} else if msg := err.Error(); s.src.Auth == model.AuthOAuth && (strings.Contains(msg, "401") || strings.Contains(msg, "Unauthorized")) {
		err = fmt.Errorf("%w; the server wants a sign-in: `capabilities hub auth %s`", err, s.src.Namespace)
	} else if strings.Contains(msg, "401") || strings.Contains(msg, "Unauthorized") || strings.Contains(msg, "403") {
		hint := "give it with --auth when adding (and --secret-header NAME when it is not Authorization: Bearer)"
		if s.src.Namespace != "" {
			hint += ", or `capabilities hub auth " + s.src.Namespace + "`"
		}
		err = fmt.Errorf("%w; the server wants a credential: %s", err, hint)
	} else if errors.Is(err, syscall.ECONNREFUSED) {
		err = fmt.Errorf("%w; nothing is listening at %s: is the server running?", err, s.src.URL)
	} else if code := s.refusal.code(); code != 0 && !errors.As(err, new(*jsonrpc.Error)) {
		// An HTTP error with no JSON-RPC answer in its body: most likely
		// not an MCP endpoint (a JSON-RPC error is the server's own word).
		err = fmt.Errorf("%w; the server answered HTTP %d: is this the URL of an MCP endpoint (streamable HTTP)?", err, code)
	}
	if s.src.Namespace == "" { // a source being added: named by what was typed
		return fmt.Errorf("connecting to %s: %w", where, err)
	}
	return fmt.Errorf("connecting to %s (%s): %w", s.src.Namespace, where, err)
}

// nameOf names src in errors: its namespace, or, for a source being added
// (it has none yet), what the person typed: its command line, URL or
// document.
func nameOf(src *model.Source) string {
	switch {
	case src.Namespace != "":
		return src.Namespace
	case src.Kind == model.KindStdio:
		return src.ShownCommandLine()
	case src.Kind == model.KindOpenAPI:
		return src.Document
	}
	return src.URL
}

// statusRecorder remembers the status of the first POST an HTTP upstream
// answered with an error status (400 and up), to explain a failed
// connection: the SDK's error carries only its text ("Not Implemented").
type statusRecorder struct {
	base   http.RoundTripper
	status atomic.Int32
}

func (r *statusRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.base.RoundTrip(req)
	if err == nil && req.Method == http.MethodPost && resp.StatusCode >= 400 {
		r.status.CompareAndSwap(0, int32(resp.StatusCode))
	}
	if err == nil && !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		// go-sdk reads a JSON answer whole (its event streams have a
		// per-event bound): the same bound as a stdio upstream's line.
		if resp.ContentLength > MaxMessageBytes {
			resp.Body.Close()
			return nil, fmt.Errorf("the upstream's answer is %d bytes, over the limit of %d (64 MB)", resp.ContentLength, MaxMessageBytes)
		}
		resp.Body = &limitedBody{ReadCloser: resp.Body, left: MaxMessageBytes}
	}
	return resp, err
}

// MaxMessageBytes bounds one message from an upstream: a stdio line, or an
// HTTP answer that is not an event stream.
const MaxMessageBytes = 64 << 20

// limitedBody fails a read past left bytes, so that an answer is not held
// whole when it is over the bound.
type limitedBody struct {
	io.ReadCloser
	left int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, errTooBig
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.ReadCloser.Read(p)
	if int64(n) > b.left {
		b.left = -1
		return 0, errTooBig
	}
	b.left -= int64(n)
	return n, err
}

var errTooBig = fmt.Errorf("the upstream's answer is over the limit of %d bytes (64 MB)", int64(MaxMessageBytes))

// code is the recorded status, 0 for none (or no recorder).
func (r *statusRecorder) code() int {
	if r == nil {
		return 0
	}
	return int(r.status.Load())
}

// Protocol is the negotiated protocol version.
func (s *Session) Protocol() string {
	if s.src.Kind == model.KindOpenAPI {
		return ""
	}
	return s.cs.InitializeResult().ProtocolVersion
}

// Alive reports whether the session can still be used: its process runs
// and its connection is open (an upstream that closed its stdout is as
// good as gone).
func (s *Session) Alive() bool {
	if s.broken.Load() || (s.proc != nil && s.proc.exited()) {
		return false
	}
	select {
	case <-s.ended:
		return false
	default:
		return true
	}
}

// withDeadline bounds one request to the upstream by the source's call
// timeout.
func (s *Session) withDeadline(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(ctx, s.callTimeout, errDeadline)
}

// failed turns a request's error into the session's verdict: a
// *TimeoutError when the request's own deadline passed (not its caller's),
// else err explained; a connection that is gone (or an HTTP session the
// server no longer knows) marks the session dead, so the pool starts the
// upstream again, or connects anew, on the next call.
func (s *Session) failed(ctx, rctx context.Context, err error, method, tool string, strays int) error {
	if ctx.Err() == nil && errors.Is(context.Cause(rctx), errDeadline) {
		return &TimeoutError{Namespace: nameOf(&s.src), Method: method, Tool: tool, Timeout: s.callTimeout, Strays: s.strays() - strays}
	}
	if ctx.Err() == nil && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, mcp.ErrConnectionClosed) ||
		errors.Is(err, mcp.ErrSessionMissing)) { // an HTTP server that restarted forgot the session (404)
		s.broken.Store(true)
	}
	return s.explain(err)
}

func (s *Session) strays() int {
	if s.proc == nil {
		return 0
	}
	s.proc.mu.Lock()
	defer s.proc.mu.Unlock()
	return s.proc.strays
}

// stderrLines is how many lines of an upstream's stderr an error shows.
const stderrLines = 5

// Stderr returns the last informative lines the upstream wrote on stderr
// (stdio only), with the session's credential scrubbed.
func (s *Session) Stderr(lines int) string {
	if s.proc == nil {
		return ""
	}
	text := s.proc.stderr.Lines(lines)
	v := s.secrets()
	if s.src.SecretEnv != "" {
		v = append(v, s.src.Env[s.src.SecretEnv])
	}
	return scrub.New(v...).String(text)
}

// ListTools reads the upstream's whole tool list, following pagination, and
// returns it as a manifest with addresses and contracts. Each page is
// bounded by the source's call timeout.
func (s *Session) ListTools(ctx context.Context) (*model.Manifest, error) {
	if s.src.Kind == model.KindOpenAPI {
		return s.apiManifest(ctx)
	}
	var upstream []model.UpstreamTool
	cursor := ""
	seen := map[string]bool{}
	for page := 0; ; page++ {
		if page >= 1000 {
			return nil, fmt.Errorf("listing tools of %s: more than 1000 pages; the server's pagination does not end", nameOf(&s.src))
		}
		res, err := s.listPage(ctx, cursor)
		if err != nil {
			return nil, err
		}
		for _, t := range res.Tools {
			u, err := upstreamTool(t)
			if err != nil {
				return nil, fmt.Errorf("listing tools of %s: %w", nameOf(&s.src), err)
			}
			upstream = append(upstream, u)
		}
		if res.NextCursor == "" {
			break
		}
		if seen[res.NextCursor] {
			return nil, fmt.Errorf("listing tools of %s: the server repeated cursor %q", nameOf(&s.src), res.NextCursor)
		}
		seen[res.NextCursor] = true
		cursor = res.NextCursor
	}
	init := s.cs.InitializeResult()
	m := &model.Manifest{
		Namespace:    s.src.Namespace,
		Protocol:     init.ProtocolVersion,
		Instructions: init.Instructions,
		FetchedAt:    time.Now().UTC(),
	}
	if init.ServerInfo != nil {
		m.ServerName, m.ServerVersion = init.ServerInfo.Name, init.ServerInfo.Version
	}
	return s.withTools(m, upstream), nil
}

// secrets is every credential the session holds: its connection's, and
// those written in plain text in the source's environment or headers.
func (s *Session) secrets() []string {
	return append(s.cred.values(), s.src.PlainCredentials()...)
}

// withTools gives m the tools of upstream, with the session's credential
// scrubbed from all the upstream says of itself. A server handed its
// credential (in its environment, a header or a token) can write it into
// its name, instructions, a description or a schema, and search, describe
// and the review show those: to the model too (I1). A tool whose name holds
// the credential is left out, since its address would show it.
func (s *Session) withTools(m *model.Manifest, upstream []model.UpstreamTool) *model.Manifest {
	sc := scrub.New(s.secrets()...)
	if sc.Len() > 0 {
		m.ServerName, m.ServerVersion = sc.String(m.ServerName), sc.String(m.ServerVersion)
		m.Instructions = sc.String(m.Instructions)
		kept := make([]model.UpstreamTool, 0, len(upstream))
		for _, u := range upstream {
			if sc.Contains(u.Name) {
				from := s.src.URL
				if s.src.Kind == model.KindStdio {
					from = s.src.ShownCommandLine()
				}
				s.log.Warn("leaving out a tool whose name holds the source's credential", "source", sc.String(from))
				continue
			}
			u.Title, u.Description = sc.String(u.Title), sc.String(u.Description)
			if len(u.InputSchema) > 0 {
				u.InputSchema = sc.JSON(u.InputSchema)
			}
			if len(u.OutputSchema) > 0 {
				u.OutputSchema = sc.JSON(u.OutputSchema)
			}
			if a := u.Annotations; a != nil && a.Title != "" {
				c := *a
				c.Title = sc.String(c.Title)
				u.Annotations = &c
			}
			kept = append(kept, u)
		}
		upstream = kept
	}
	m.Tools = model.NewTools(s.src.Namespace, upstream)
	return m
}

func (s *Session) listPage(ctx context.Context, cursor string) (*mcp.ListToolsResult, error) {
	rctx, cancel := s.withDeadline(ctx)
	defer cancel()
	strays := s.strays()
	res, err := s.cs.ListTools(rctx, &mcp.ListToolsParams{Cursor: cursor})
	if err != nil {
		err = s.failed(ctx, rctx, err, "tools/list", "", strays)
		var te *TimeoutError
		if errors.As(err, &te) {
			return nil, err
		}
		return nil, fmt.Errorf("listing tools of %s: %w", nameOf(&s.src), err)
	}
	return res, nil
}

func upstreamTool(t *mcp.Tool) (model.UpstreamTool, error) {
	u := model.UpstreamTool{Name: t.Name, Title: t.Title, Description: t.Description}
	var err error
	if t.InputSchema != nil {
		if u.InputSchema, err = json.Marshal(t.InputSchema); err != nil {
			return u, fmt.Errorf("encoding the input schema of %q: %w", t.Name, err)
		}
	}
	if t.OutputSchema != nil {
		if u.OutputSchema, err = json.Marshal(t.OutputSchema); err != nil {
			return u, fmt.Errorf("encoding the output schema of %q: %w", t.Name, err)
		}
	}
	if a := t.Annotations; a != nil {
		ro, idem := a.ReadOnlyHint, a.IdempotentHint
		u.Annotations = &model.Annotations{
			Title:           a.Title,
			ReadOnlyHint:    &ro,
			DestructiveHint: a.DestructiveHint,
			IdempotentHint:  &idem,
			OpenWorldHint:   a.OpenWorldHint,
		}
	}
	return u, nil
}

// CallTool calls the upstream tool by its upstream name. Every call has a
// deadline, the source's call timeout: an upstream that does not answer by
// then fails the call with a *TimeoutError.
func (s *Session) CallTool(ctx context.Context, name string, args json.RawMessage) (*mcp.CallToolResult, error) {
	if s.src.Kind == model.KindOpenAPI {
		return s.callAPI(ctx, name, args)
	}
	var arguments any = map[string]any{}
	if len(args) > 0 {
		arguments = args
	}
	rctx, cancel := s.withDeadline(ctx)
	defer cancel()
	strays := s.strays()
	res, err := s.cs.CallTool(rctx, &mcp.CallToolParams{Name: name, Arguments: arguments})
	s.wake.lastCall.Store(time.Now().UnixNano())
	if err != nil {
		err = s.failed(ctx, rctx, err, "tools/call", name, strays)
		var te *TimeoutError
		if errors.As(err, &te) {
			return nil, err
		}
		return nil, fmt.Errorf("calling %s on %s: %w", name, nameOf(&s.src), err)
	}
	return res, nil
}

// CallTimeout is the deadline of each of the session's calls.
func (s *Session) CallTimeout() time.Duration { return s.callTimeout }

// explain adds the upstream's fate to an error from a dead session.
func (s *Session) explain(err error) error {
	if s.proc != nil && s.proc.exited() {
		msg := fmt.Sprintf("the server %s", s.proc.exitText())
		if tail := s.Stderr(stderrLines); tail != "" {
			msg += "; its stderr ends with:\n" + indent(tail)
		}
		return fmt.Errorf("%w (%s; the next call starts it again)", err, msg)
	}
	if s.proc != nil && s.broken.Load() {
		return fmt.Errorf("%w (the server closed its stdout; the next call starts it again)", err)
	}
	return err
}

// Close ends the session and reaps a stdio upstream's process group.
func (s *Session) Close() error {
	var err error
	if s.cs != nil {
		err = s.cs.Close()
	}
	if s.proc != nil {
		s.proc.stop()
	}
	return err
}

func indent(s string) string {
	out := "  "
	for _, r := range s {
		out += string(r)
		if r == '\n' {
			out += "  "
		}
	}
	return out
}

// Pid is the process id of a stdio upstream (0 for HTTP).
func (s *Session) Pid() int {
	if s.proc == nil {
		return 0
	}
	return s.proc.cmd.Process.Pid
}
