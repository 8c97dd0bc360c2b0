// Package source is the hub's MCP client to upstream servers: a local stdio
// command or a remote streamable-HTTP URL.
//
// Connecting tries protocol 2026-07-28 (server/discover) first and falls
// back to 2025-11-25 when the upstream does not answer; a stdio upstream runs
// in its own process group with a minimal environment, its stray stdout lines
// are dropped, and it is reaped when the session closes. Pool starts
// sessions lazily, on the first call that needs one.
package source

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/scrub"
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
	// (DefaultConnectTimeout).
	ConnectTimeout time.Duration
	// DiscoverTimeout bounds the wait for an answer to server/discover
	// before falling back to the 2025-11-25 handshake (a third of the
	// connect timeout: 10 s by default). It counts from the upstream's start.
	DiscoverTimeout time.Duration
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
}

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
	src    model.Source // as started (with the credential in its env)
	orig   model.Source // as configured, to notice a changed source
	secret string       // the credential's value, to notice a changed secret
	cs     *mcp.ClientSession
	proc   *process // nil for HTTP
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
	orig, secretValue := src, ""
	if cred != nil {
		secretValue = cred.Value
	}
	if cred != nil && cred.Value != "" && src.Kind == model.KindStdio {
		if src.SecretEnv == "" {
			return nil, fmt.Errorf("connecting to %s: the source has no variable for its credential; set one with `capabilities hub auth %s --env VAR`", src.Namespace, src.Namespace)
		}
		env := make(map[string]string, len(src.Env)+1)
		for k, v := range src.Env {
			env[k] = v
		}
		env[src.SecretEnv] = cred.Value
		src.Env = env
	}
	if src.Kind == model.KindHTTP && opts.HTTPClient == nil {
		value := ""
		if cred != nil {
			value = cred.Value
		}
		hc, err := newGuardedClient(src.URL, src.SecretHeader, value)
		if err != nil {
			return nil, fmt.Errorf("connecting to %s: %w", src.Namespace, err)
		}
		opts.HTTPClient = hc
	}
	s, err := negotiate(ctx, src, opts)
	if err != nil {
		return nil, err
	}
	s.orig, s.secret = orig, secretValue
	return s, nil
}

// negotiate connects with 2026-07-28 first and falls back to 2025-11-25
// when server/discover gets no answer in time.
func negotiate(ctx context.Context, src model.Source, opts Options) (*Session, error) {
	ctx, cancel := context.WithTimeout(ctx, opts.connectTimeout())
	defer cancel()
	if opts.Protocol != "" && opts.Protocol < ProtocolLatest {
		return connect(ctx, src, opts, opts.Protocol)
	}
	dctx, dcancel := context.WithTimeout(ctx, opts.discoverTimeout())
	s, err := connect(dctx, src, opts, ProtocolLatest)
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
	return connect(ctx, src, opts, ProtocolLegacy)
}

func connect(ctx context.Context, src model.Source, opts Options, version string) (*Session, error) {
	s := &Session{src: src}
	var transport mcp.Transport
	switch src.Kind {
	case model.KindStdio:
		p, err := startProcess(&src, opts.logger())
		if err != nil {
			return nil, err
		}
		s.proc = p
		transport = &mcp.IOTransport{Reader: p.stdout, Writer: p.stdin, MaxLineLength: 64 << 20}
	case model.KindHTTP:
		transport = &mcp.StreamableClientTransport{Endpoint: src.URL, HTTPClient: opts.HTTPClient, MaxRetries: -1}
	default:
		return nil, fmt.Errorf("connecting to %s: unknown source kind %q (want stdio or http)", src.Namespace, src.Kind)
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
	go func() {
		cs, err := client.Connect(ctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: version})
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
	if r.err != nil {
		if r.cs != nil {
			_ = r.cs.Close()
		}
		return nil, s.startError(ctx, r.err)
	}
	s.cs = r.cs
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
		where = s.src.CommandLine()
		s.proc.stop()
		status := s.proc.exitText()
		stderr := s.Stderr(stderrLines)
		switch {
		case ctx.Err() != nil && !s.proc.exited() || errors.Is(err, context.DeadlineExceeded):
			err = fmt.Errorf("the server did not answer the MCP handshake in time (is it an MCP server speaking stdio? one that starts slowly gets more time with `capabilities hub add --timeout` or CAPABILITIES_CONNECT_TIMEOUT)")
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
	} else if msg := err.Error(); strings.Contains(msg, "401") || strings.Contains(msg, "Unauthorized") || strings.Contains(msg, "403") {
		err = fmt.Errorf("%w; the server wants a credential: give it with --auth when adding (and --secret-header NAME when it is not Authorization: Bearer), or `capabilities hub auth %s`", err, s.src.Namespace)
	}
	return fmt.Errorf("connecting to %s (%s): %w", s.src.Namespace, where, err)
}

// Protocol is the negotiated protocol version.
func (s *Session) Protocol() string { return s.cs.InitializeResult().ProtocolVersion }

// Alive reports whether the session can still be used.
func (s *Session) Alive() bool { return s.proc == nil || !s.proc.exited() }

// stderrLines is how many lines of an upstream's stderr an error shows.
const stderrLines = 5

// Stderr returns the last informative lines the upstream wrote on stderr
// (stdio only), with the session's credential scrubbed.
func (s *Session) Stderr(lines int) string {
	if s.proc == nil {
		return ""
	}
	text := s.proc.stderr.Lines(lines)
	if s.src.SecretEnv != "" {
		text = scrub.New(s.src.Env[s.src.SecretEnv]).String(text)
	}
	return text
}

// ListTools reads the upstream's whole tool list, following pagination, and
// returns it as a manifest with addresses and contracts.
func (s *Session) ListTools(ctx context.Context) (*model.Manifest, error) {
	var upstream []model.UpstreamTool
	cursor := ""
	seen := map[string]bool{}
	for page := 0; ; page++ {
		if page >= 1000 {
			return nil, fmt.Errorf("listing tools of %s: more than 1000 pages; the server's pagination does not end", s.src.Namespace)
		}
		res, err := s.cs.ListTools(ctx, &mcp.ListToolsParams{Cursor: cursor})
		if err != nil {
			return nil, fmt.Errorf("listing tools of %s: %w", s.src.Namespace, s.explain(err))
		}
		for _, t := range res.Tools {
			u, err := upstreamTool(t)
			if err != nil {
				return nil, fmt.Errorf("listing tools of %s: %w", s.src.Namespace, err)
			}
			upstream = append(upstream, u)
		}
		if res.NextCursor == "" {
			break
		}
		if seen[res.NextCursor] {
			return nil, fmt.Errorf("listing tools of %s: the server repeated cursor %q", s.src.Namespace, res.NextCursor)
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
		Tools:        model.NewTools(s.src.Namespace, upstream),
	}
	if init.ServerInfo != nil {
		m.ServerName, m.ServerVersion = init.ServerInfo.Name, init.ServerInfo.Version
	}
	return m, nil
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

// CallTool calls the upstream tool by its upstream name.
func (s *Session) CallTool(ctx context.Context, name string, args json.RawMessage) (*mcp.CallToolResult, error) {
	var arguments any = map[string]any{}
	if len(args) > 0 {
		arguments = args
	}
	res, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: arguments})
	if err != nil {
		return nil, fmt.Errorf("calling %s on %s: %w", name, s.src.Namespace, s.explain(err))
	}
	return res, nil
}

// explain adds the upstream's fate to an error from a dead session.
func (s *Session) explain(err error) error {
	if s.proc != nil && s.proc.exited() {
		msg := fmt.Sprintf("the server %s", s.proc.exitText())
		if tail := s.Stderr(stderrLines); tail != "" {
			msg += "; its stderr ends with:\n" + indent(tail)
		}
		return fmt.Errorf("%w (%s)", err, msg)
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
