package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/capabilities-sh/capabilities/internal/peer"
	"github.com/capabilities-sh/capabilities/store"
	"github.com/gofrs/flock"
)

// A long-running hub (`serve --http`, later the desktop app) announces
// itself in the store so that each agent's `serve --stdio` can relay its
// session there instead of starting an engine and every upstream of its own.

// Endpoint is the announcement, kept in hub/endpoint.json (mode 600). The
// bearer token stays in hub/http-token.
type Endpoint struct {
	URL       string    `json:"url"`
	PID       int       `json:"pid"`
	StartedAt time.Time `json:"startedAt"`
}

const endpointFile = "endpoint.json"

// Announce writes this process's endpoint into the store directory dir; the
// returned func removes it (only while it is still this process's: a later
// hub's announcement stays). One hub serves a store at a time: while it
// runs it holds hub/endpoint.lock (freed when its process ends, however it
// ends), and a second hub's Announce fails naming the first.
func Announce(dir, endpointURL string) (remove func(), err error) {
	p := filepath.Join(dir, endpointFile)
	lk := flock.New(filepath.Join(dir, "endpoint.lock"), flock.SetPermissions(0o600))
	ok, err := lk.TryLock()
	if err != nil {
		return nil, fmt.Errorf("announcing the hub: %w", err)
	}
	if !ok {
		other := "another hub"
		if ep, err := readEndpoint(dir); err == nil {
			other = fmt.Sprintf("the hub at %s (pid %d)", ep.URL, ep.PID)
		}
		return nil, fmt.Errorf("announcing the hub: %s already serves %s, and agents relay to it: stop it first, or serve another hub (CAPABILITIES_HOME)", other, filepath.Dir(dir))
	}
	b, _ := json.Marshal(Endpoint{URL: endpointURL, PID: os.Getpid(), StartedAt: time.Now().UTC()})
	if err := store.WriteFileAtomic(p, append(b, '\n')); err != nil {
		_ = lk.Unlock()
		return nil, fmt.Errorf("announcing the hub: %w", err)
	}
	return func() {
		if ep, err := readEndpoint(dir); err == nil && ep.PID == os.Getpid() {
			_ = os.Remove(p)
		}
		_ = lk.Unlock()
	}, nil
}

func readEndpoint(dir string) (Endpoint, error) {
	var ep Endpoint
	b, err := os.ReadFile(filepath.Join(dir, endpointFile))
	if err != nil {
		return ep, err
	}
	if err := json.Unmarshal(b, &ep); err != nil {
		return ep, fmt.Errorf("reading %s: %w", endpointFile, err)
	}
	return ep, nil
}

// FindHub returns the running hub announced in dir and its bearer token.
// ok is false when there is none, or the announcement is stale (its process
// is gone, or nothing answers at its address); why says which.
func FindHub(ctx context.Context, dir string) (ep Endpoint, token string, ok bool, why string) {
	ep, err := readEndpoint(dir)
	if errors.Is(err, os.ErrNotExist) {
		return ep, "", false, "no long-running hub is announced"
	}
	if err != nil {
		return ep, "", false, err.Error()
	}
	if ep.PID <= 0 || !pidAlive(ep.PID) {
		return ep, "", false, fmt.Sprintf("the announced hub (pid %d) is not running", ep.PID)
	}
	u, err := url.Parse(ep.URL)
	if err != nil || u.Scheme != "http" || !loopbackHost(u.Host) {
		return ep, "", false, fmt.Sprintf("the announced hub address %q is not a loopback HTTP URL", ep.URL)
	}
	d := net.Dialer{Timeout: 2 * time.Second}
	c, err := dialOwn(ctx, &d, u.Host)
	if err != nil {
		return ep, "", false, fmt.Sprintf("the announced hub at %s does not answer: %v", ep.URL, err)
	}
	defer c.Close()
	b, err := os.ReadFile(filepath.Join(dir, TokenFile))
	if err != nil {
		return ep, "", false, fmt.Sprintf("reading the hub's token: %v", err)
	}
	token = strings.TrimSpace(string(b))
	// The token goes only to a listener that proves it holds it already
	// (relay_proof.go): endpoint.json may name anyone's port.
	if _, err := proveConn(ctx, c, u.Host, func() string { return token }, nil); err != nil {
		return ep, "", false, fmt.Sprintf("the announced hub at %s: %v", ep.URL, err)
	}
	return ep, token, true, ""
}

// dialOwn connects to a hub's loopback address, and refuses a listener
// that belongs to another user of this machine (where that is known:
// internal/peer), who could have taken a dead hub's port to be sent the
// bearer token.
func dialOwn(ctx context.Context, d *net.Dialer, addr string) (net.Conn, error) {
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if uid, err := peer.UID(c); err == nil && uid != os.Getuid() {
		c.Close()
		return nil, fmt.Errorf("the process listening at %s belongs to another user (uid %d), not this user's hub", addr, uid)
	}
	return c, nil
}

// Shim relays one stdio client to a long-running hub's HTTP endpoint,
// message by message in both directions (the hub's requests, such as
// elicitation, and its notifications too). It runs no engine while the hub
// answers. When the hub stops, the request that finds out is answered with
// an error saying so, and every later one is served by this process's own
// engine (Local, started then), given the client's initialize again.
type Shim struct {
	Endpoint Endpoint
	Token    string
	// TokenPath is the file the token was read from: read again when the
	// hub refuses the token (a hub restarted with a new one).
	TokenPath string
	Logger    *slog.Logger
	// Local starts this process's own engine; done releases it.
	Local func(ctx context.Context) (srv *Server, done func(), err error)
	// Remote says the hub is on another machine (serve --stdio --hub URL):
	// the connection is a plain one (TLS for https), with no proof of the
	// token (the URL, given by the person, names the hub) and no local
	// engine to fall back to: a hub that does not answer, or refuses the
	// token, is an error for each request, saying so (relay_remote.go).
	Remote bool
	// Liveness is how long the hub may leave the liveness probe unanswered,
	// while a message relayed to it is outstanding, before that message is
	// given up on (relay_alive.go); zero means DefaultLiveness.
	Liveness time.Duration

	client      *http.Client
	probeClient *http.Client
	out         *lineWriter

	renewMu sync.Mutex // one session renewal at a time
	alive   liveness

	mu        sync.Mutex
	sessionID string
	version   string          // negotiated by initialize
	initReq   json.RawMessage // the client's initialize params, given again to the local engine
	listening bool
	fallen    bool // the hub stopped; the rest goes to the local engine
	owed      bool // the next request gets the "hub stopped" error
	reason    string
	stop      hubStop // how the hub stopped, once it did mid-session

	local    chan struct{} // closed once the local engine is up (or failed)
	localIn  *io.PipeWriter
	localErr error
	localIDs map[string]bool // ids of the local server's requests to the client
	localEnd chan struct{}
}

const shimInitID = `"capabilities-shim-initialize"`

// shimMsg is what the shim reads of a JSON-RPC message.
type shimMsg struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
}

func (m shimMsg) isRequest() bool { return m.Method != "" && len(m.ID) > 0 && string(m.ID) != "null" }

// Serve relays in to the hub and the hub's messages to out until in ends.
func (s *Shim) Serve(ctx context.Context, in io.Reader, out io.Writer) error {
	if s.Logger == nil {
		s.Logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.out = &lineWriter{w: out}
	// Messages share at most maxHubConns connections (more wait for one);
	// the liveness probe has its own, so that it is never queued behind
	// them.
	s.client = &http.Client{Transport: &http.Transport{
		Proxy:               nil,
		DialContext:         s.dial,
		MaxIdleConnsPerHost: 16,
		MaxConnsPerHost:     maxHubConns,
	}}
	s.probeClient = &http.Client{Transport: &http.Transport{
		Proxy:               nil,
		DialContext:         s.dial,
		MaxIdleConnsPerHost: 1,
	}}
	if s.Remote {
		s.client, s.probeClient = remoteClient(maxHubConns), remoteClient(1)
	}
	s.local = make(chan struct{})
	s.localIDs = map[string]bool{}
	var wg sync.WaitGroup
	br := bufio.NewReaderSize(in, 64<<10)
	var readErr error
	for {
		line, err := br.ReadBytes('\n')
		if t := bytes.TrimSpace(line); len(t) > 0 {
			if reply := check(t); reply != nil {
				s.write(reply)
			} else {
				s.handle(ctx, &wg, t)
			}
		}
		if err != nil {
			readErr = err
			break
		}
	}
	s.mu.Lock()
	fallen, sid := s.fallen, s.sessionID
	s.mu.Unlock()
	if fallen {
		<-s.local
		if s.localIn != nil {
			s.localIn.Close()
			<-s.localEnd
		}
	} else if sid != "" {
		dctx, dcancel := context.WithTimeout(ctx, 2*time.Second)
		if req, err := http.NewRequestWithContext(dctx, http.MethodDelete, s.Endpoint.URL, nil); err == nil {
			s.headers(req, "", false)
			if resp, err := s.client.Do(req); err == nil {
				resp.Body.Close()
			}
		}
		dcancel()
	}
	cancel()
	wg.Wait()
	if errors.Is(readErr, io.EOF) {
		return nil
	}
	return readErr
}

// maxHubConns is how many connections the shim opens to the hub at most.
const maxHubConns = 64

// dial connects to the hub's address, and gives the connection to HTTP
// only once the listener there proved that it is the hub (proveConn): the
// hub killed, whatever listens at its port, or at the one a rewritten
// endpoint.json names, is never sent the token.
func (s *Shim) dial(ctx context.Context, _, addr string) (net.Conn, error) {
	c, err := dialOwn(ctx, &net.Dialer{Timeout: 5 * time.Second}, addr)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	cur := s.Token
	s.mu.Unlock()
	reread := func() string {
		if s.TokenPath == "" {
			return ""
		}
		b, err := os.ReadFile(s.TokenPath)
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(b))
	}
	tok, err := proveConn(ctx, c, addr, func() string { return cur }, reread)
	if err != nil {
		c.Close()
		return nil, err
	}
	if tok != cur {
		// A hub restarted with a new token proved it holds that one.
		s.mu.Lock()
		s.Token = tok
		s.mu.Unlock()
	}
	return c, nil
}

func (s *Shim) write(v any) {
	b, _ := json.Marshal(v)
	_, _ = s.out.Write(append(b, '\n'))
}

// handle sends one message from the client on its way.
func (s *Shim) handle(ctx context.Context, wg *sync.WaitGroup, line []byte) {
	var m shimMsg
	if line[0] == '{' {
		_ = json.Unmarshal(line, &m)
	}
	s.mu.Lock()
	fallen := s.fallen
	if !fallen && m.Method == "initialize" && m.isRequest() {
		s.initReq = m.Params
	}
	s.mu.Unlock()
	if fallen {
		s.toLocal(ctx, line, m)
		return
	}
	if m.isRequest() || line[0] == '[' {
		// Requests run concurrently: a tools/call that waits on the
		// person must not hold back the answer to the hub's question.
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.post(ctx, wg, line, m)
		}()
		return
	}
	// Notifications and answers go in order.
	s.post(ctx, wg, line, m)
}

// headers sets what every request to the hub carries.
func (s *Shim) headers(req *http.Request, modern string, isInit bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	req.Header.Set("Authorization", "Bearer "+s.Token)
	switch {
	case modern != "":
		req.Header.Set("Mcp-Protocol-Version", modern)
	case !isInit:
		if s.sessionID != "" {
			req.Header.Set("Mcp-Session-Id", s.sessionID)
		}
		if s.version != "" {
			req.Header.Set("Mcp-Protocol-Version", s.version)
		}
	}
}

// newPost is a message posted to the hub with what every request carries;
// method, when set, goes in Mcp-Method too (2026-07-28 wants the method in
// a header as well).
func (s *Shim) newPost(ctx context.Context, body io.Reader, method, modern string, isInit bool) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.Endpoint.URL, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if method != "" {
		req.Header.Set("Mcp-Method", method)
	}
	s.headers(req, modern, isInit)
	return req, nil
}

// modernVersion is the protocol version a 2026-07-28 request names in its
// _meta, or "".
func modernVersion(m shimMsg) string {
	var p struct {
		Meta struct {
			Version string `json:"io.modelcontextprotocol/protocolVersion"`
		} `json:"_meta"`
	}
	if len(m.Params) == 0 || json.Unmarshal(m.Params, &p) != nil || p.Meta.Version < modernProtocol {
		return ""
	}
	return p.Meta.Version
}

// post sends one message to the hub and relays what comes back.
func (s *Shim) post(ctx context.Context, wg *sync.WaitGroup, line []byte, m shimMsg) {
	s.send(ctx, wg, line, m, 2)
}

// send is post; retries is how many more times the message may be sent
// after the hub refused it unserved (a session it does not know, a token
// it does not take).
func (s *Shim) send(ctx context.Context, wg *sync.WaitGroup, line []byte, m shimMsg, retries int) {
	isInit := m.Method == "initialize" && m.isRequest()
	// A message is given up on if the hub stops answering meanwhile (its
	// liveness probe, relay_alive.go), not after a fixed time: a busy hub
	// answers the probe and is waited for. Anything but the handshake is
	// not sent while the hub is known to be frozen, unless it answers again;
	// a handshake the hub does not answer goes to this process's own engine,
	// nothing being under way yet.
	if !isInit && s.stillFrozen(ctx) {
		s.answerFrozen(m, false)
		return
	}
	rctx, done := s.track(ctx, wg)
	defer done()
	req, resp, err := s.do(rctx, func() (*http.Request, error) {
		req, err := s.newPost(rctx, bytes.NewReader(line), m.Method, modernVersion(m), isInit)
		if err != nil {
			return nil, err
		}
		if m.Method != "" {
			var p struct {
				Name string `json:"name"`
				URI  string `json:"uri"`
			}
			_ = json.Unmarshal(m.Params, &p)
			if n := p.Name + p.URI; n != "" && (m.Method == "tools/call" || m.Method == "prompts/get" || m.Method == "resources/read") {
				req.Header.Set("Mcp-Name", n)
			}
		}
		return req, nil
	})
	if err != nil {
		frozen := errors.Is(context.Cause(rctx), errHubFrozen)
		switch {
		case req == nil:
			s.fail(ctx, line, m, err)
		case ctx.Err() != nil:
		case frozen && isInit:
			s.fail(ctx, line, m, errHubFrozen)
		case frozen:
			s.answerFrozen(m, true)
		case isInit:
			s.fail(ctx, line, m, err)
		default:
			s.broken(ctx, line, m, err)
		}
		return
	}
	defer resp.Body.Close()
	if isInit {
		if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
			s.mu.Lock()
			s.sessionID = sid
			s.mu.Unlock()
		}
	}
	switch {
	case resp.StatusCode == http.StatusNotFound && req.Header.Get("Mcp-Session-Id") != "":
		// The session is gone, and nothing of this message was served: the
		// hub closed it (unused for SessionIdle), or another hub answers at
		// that address now. The session is opened again with the client's
		// initialize, and a request is sent again, once.
		resp.Body.Close()
		if retries > 0 {
			err := s.renew(ctx, wg, req.Header.Get("Mcp-Session-Id"))
			if err == nil {
				if m.isRequest() {
					s.send(ctx, wg, line, m, retries-1)
				}
				return
			}
			s.Logger.Warn("opening the session with the hub again", "url", s.Endpoint.URL, "err", err)
		}
		s.fail(ctx, line, m, errSessionGone)
		return
	case resp.StatusCode == http.StatusUnauthorized && !isInit:
		// The token is refused before anything is served: a hub restarted
		// with a new token. Read it again and send again; else this
		// process's own engine takes over.
		resp.Body.Close()
		if retries > 0 && s.reloadToken(req.Header.Get("Authorization")) {
			s.send(ctx, wg, line, m, retries-1)
			return
		}
		s.fail(ctx, line, m, errTokenRefused)
		return
	case resp.StatusCode == http.StatusAccepted:
		// A notification's answer: notifications/initialized opens the
		// event stream.
		s.listenAfter(ctx, wg, m)
		return
	case s.Remote && resp.StatusCode == http.StatusUnauthorized:
		resp.Body.Close()
		s.remoteFailed(m, errTokenRefused)
		return
	case resp.StatusCode >= 300:
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		var r shimMsg
		if m.isRequest() && json.Unmarshal(body, &r) == nil && string(r.ID) == string(m.ID) && r.Method == "" {
			// The hub's own JSON-RPC error: the client reads it as it is.
			var c bytes.Buffer
			if json.Compact(&c, bytes.TrimSpace(body)) == nil {
				_, _ = s.out.Write(append(c.Bytes(), '\n'))
				return
			}
		}
		if isInit {
			// Not a hub this process can use (a wrong token, another
			// server at that port): serve on the own engine instead.
			s.fail(ctx, line, m, fmt.Errorf("HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(body))))
			return
		}
		s.Logger.Warn("the hub refused a relayed message", "status", resp.StatusCode, "body", strings.TrimSpace(string(body)))
		if m.isRequest() {
			s.write(errorReply(m.ID, -32603, "the hub at %s refused the request (HTTP %d): %s", s.Endpoint.URL, resp.StatusCode, strings.TrimSpace(string(body))))
		}
		return
	}
	answered := false
	var notHub error
	relay := func(msg []byte) {
		var r shimMsg
		_ = json.Unmarshal(msg, &r)
		if m.isRequest() && r.Method == "" && string(r.ID) == string(m.ID) {
			answered = true
			if isInit && len(r.Result) > 0 {
				var res struct {
					ProtocolVersion string `json:"protocolVersion"`
					ServerInfo      struct {
						Name string `json:"name"`
					} `json:"serverInfo"`
				}
				_ = json.Unmarshal(r.Result, &res)
				if res.ServerInfo.Name != serverName {
					// Not a hub (a stale announcement whose pid and
					// port other processes have now): the client is
					// not handed to it.
					notHub = fmt.Errorf("what answers there is not a capabilities hub (it calls itself %q)", res.ServerInfo.Name)
					return
				}
				s.mu.Lock()
				s.version = res.ProtocolVersion
				s.mu.Unlock()
			}
		}
		_, _ = s.out.Write(append(msg, '\n'))
	}
	ct := resp.Header.Get("Content-Type")
	if strings.HasPrefix(ct, "text/event-stream") {
		err = readSSE(resp.Body, relay)
	} else {
		var body []byte
		body, err = io.ReadAll(io.LimitReader(resp.Body, 64<<20))
		if t := bytes.TrimSpace(body); err == nil && len(t) > 0 {
			var c bytes.Buffer
			if json.Compact(&c, t) == nil {
				relay(c.Bytes())
			}
		}
	}
	if notHub != nil {
		s.fail(ctx, line, m, notHub)
		return
	}
	if m.isRequest() && !answered && errors.Is(context.Cause(rctx), errHubFrozen) {
		if isInit {
			s.fail(ctx, line, m, errHubFrozen)
		} else {
			s.answerFrozen(m, true)
		}
		return
	}
	if m.isRequest() && !answered && ctx.Err() == nil {
		if err == nil {
			err = errors.New("the hub closed the response without an answer")
		}
		if isInit {
			s.fail(ctx, line, m, err)
		} else {
			s.broken(ctx, line, m, err)
		}
		return
	}
	s.listenAfter(ctx, wg, m)
}

// do sends the request newReq makes, and sends it again, made anew, each
// time the hub answers 503 with Retry-After (its admission queue is full:
// nothing of the request was served) once the time it asks for has passed.
// req is the last request made (nil if newReq failed).
func (s *Shim) do(ctx context.Context, newReq func() (*http.Request, error)) (req *http.Request, resp *http.Response, err error) {
	for {
		req, err = newReq()
		if err != nil {
			return nil, nil, err
		}
		resp, err = s.client.Do(req)
		if err != nil || resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
			return req, resp, err
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
		resp.Body.Close()
		wait := retryWait(resp.Header.Get("Retry-After"))
		s.Logger.Debug("the hub is busy: sending again", "after", wait, "url", s.Endpoint.URL)
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return req, nil, fmt.Errorf("waiting to send again to the busy hub: %w", context.Cause(ctx))
		}
	}
}

// retryWait is how long to wait for a Retry-After of whole seconds (1 s if
// it is not one; 30 s at most), plus up to a quarter more, so that the
// requests the hub turned away together do not all come back together.
func retryWait(v string) time.Duration {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 0 {
		n = 1
	}
	d := min(time.Duration(n)*time.Second, 30*time.Second)
	return d + rand.N(d/4+time.Millisecond)
}

// broken handles a message whose exchange with the hub failed midway (its
// connection refused, cut, or made with something else than the hub). The
// hub is taken for stopped only when its liveness probe says so: nothing
// accepts at its address any more, or what does is not the hub. A hub that
// answers the probe is alive (busy, or it dropped one connection): the
// request is answered with an error and the session stays with the hub;
// one that is silent is frozen (relay_alive.go).
func (s *Shim) broken(ctx context.Context, line []byte, m shimMsg, cause error) {
	if s.Remote {
		s.remoteFailed(m, cause)
		return
	}
	err := s.probe(ctx, s.window()/2)
	switch {
	case ctx.Err() != nil:
	case err == nil:
		s.Logger.Warn("a message to the hub was cut; the hub still answers, and the session stays with it", "method", m.Method, "url", s.Endpoint.URL, "err", cause)
		if m.isRequest() {
			s.write(hubCutReply(m.ID, s.Endpoint, cause, wasSent(cause)))
		}
	case isSilent(err):
		s.answerFrozen(m, wasSent(cause))
	default:
		s.fail(ctx, line, m, cause)
	}
}

// wasSent reports whether a message that failed with cause may have reached
// the hub: a connection refused, not made, or not proved to be the hub's
// carried nothing, and the hub's 404 and 401 served nothing.
func wasSent(cause error) bool {
	var op *net.OpError
	return !(errors.As(cause, &op) && op.Op == "dial") && !errors.Is(cause, errNotTheHub) && !errors.Is(cause, errSessionGone) && !errors.Is(cause, errTokenRefused)
}

func hubCutReply(id json.RawMessage, ep Endpoint, cause error, sent bool) *rpcError {
	what := fmt.Sprintf("the connection to the hub at %s (pid %d) was cut (%v), but the hub still answers", ep.URL, ep.PID, cause)
	if !sent {
		return errorReply(id, -32603, "%s; this request was not sent to it, so nothing of it happened: send it again.", what)
	}
	return errorReply(id, -32603, "%s; this request's outcome is unknown (`capabilities hub runs` lists the runs). The next request goes to the hub again.", what)
}

// errTokenRefused is the hub's 401 to the token it was sent, read again.
var errTokenRefused = errors.New("the hub refuses this session's bearer token (hub/http-token changed?)")

// reloadToken reads the token again from TokenPath and reports whether it
// is another than the one the refused request carried (auth).
func (s *Shim) reloadToken(auth string) bool {
	if s.TokenPath == "" {
		return false
	}
	b, err := os.ReadFile(s.TokenPath)
	if err != nil {
		return false
	}
	tok := strings.TrimSpace(string(b))
	s.mu.Lock()
	defer s.mu.Unlock()
	if tok == "" || "Bearer "+tok == auth {
		return false
	}
	s.Token = tok
	return true
}

// errSessionGone is the hub's 404 to a session it does not know: the
// message was not served.
var errSessionGone = errors.New("the hub no longer knows this session")

// renew opens a new session with the hub in place of old, which the hub no
// longer knows: the client's initialize is given again (its answer kept from
// the client), then notifications/initialized, and the event stream is
// opened again. A session another request renewed meanwhile is kept.
func (s *Shim) renew(ctx context.Context, wg *sync.WaitGroup, old string) error {
	s.renewMu.Lock()
	defer s.renewMu.Unlock()
	s.mu.Lock()
	cur, params, listening := s.sessionID, s.initReq, s.listening
	s.mu.Unlock()
	if cur != old {
		return nil
	}
	if params == nil {
		return errors.New("no initialize to give again")
	}
	rctx, cancel := context.WithTimeout(ctx, initTimeout)
	defer cancel()
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"initialize","params":%s}`, shimInitID, params)
	_, resp, err := s.do(rctx, func() (*http.Request, error) {
		return s.newPost(rctx, strings.NewReader(body), "initialize", "", true)
	})
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || sid == "" {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		return fmt.Errorf("initialize: HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(b)))
	}
	var version string
	answered := false
	take := func(msg []byte) {
		var r shimMsg
		if json.Unmarshal(msg, &r) != nil || r.Method != "" || string(r.ID) != shimInitID || len(r.Result) == 0 {
			return
		}
		var res struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		_ = json.Unmarshal(r.Result, &res)
		version, answered = res.ProtocolVersion, true
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		err = readSSE(resp.Body, take)
	} else {
		var b []byte
		if b, err = io.ReadAll(io.LimitReader(resp.Body, 1<<20)); err == nil {
			take(b)
		}
	}
	if !answered {
		return fmt.Errorf("initialize: no answer (%v)", err)
	}
	s.mu.Lock()
	s.sessionID, s.version = sid, version
	s.mu.Unlock()
	_, nresp, err := s.do(rctx, func() (*http.Request, error) {
		return s.newPost(rctx, strings.NewReader(`{"jsonrpc":"2.0","method":"notifications/initialized"}`), "notifications/initialized", "", false)
	})
	if err != nil {
		return err
	}
	nresp.Body.Close()
	if nresp.StatusCode >= 300 {
		return fmt.Errorf("notifications/initialized: HTTP %d", nresp.StatusCode)
	}
	s.Logger.Info("the hub had closed this session; opened another", "url", s.Endpoint.URL)
	if listening {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.listen(ctx)
		}()
	}
	return nil
}

// listenAfter opens the session's event stream once the client sent
// notifications/initialized (a session of a revision before 2026-07-28).
func (s *Shim) listenAfter(ctx context.Context, wg *sync.WaitGroup, m shimMsg) {
	if m.Method == "notifications/initialized" && modernVersion(m) == "" {
		s.mu.Lock()
		start := !s.listening && s.version != "" && s.version < modernProtocol
		s.listening = s.listening || start
		s.mu.Unlock()
		if start {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s.listen(ctx)
			}()
		}
	}
}

// listen relays the hub's messages outside any request (list_changed and
// the like) from the session's event stream.
func (s *Shim) listen(ctx context.Context) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.Endpoint.URL, nil)
	if err != nil {
		return
	}
	req.Header.Set("Accept", "text/event-stream")
	s.headers(req, "", false)
	resp, err := s.client.Do(req)
	if err != nil {
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return
	}
	_ = readSSE(resp.Body, func(msg []byte) {
		s.mu.Lock()
		fallen := s.fallen
		s.mu.Unlock()
		if !fallen {
			_, _ = s.out.Write(append(msg, '\n'))
		}
	})
}

// readSSE calls fn with the data of each event of an event stream.
func readSSE(r io.Reader, fn func([]byte)) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var data bytes.Buffer
	for {
		line, err := br.ReadBytes('\n')
		l := bytes.TrimRight(line, "\r\n")
		if len(line) > 0 && len(l) == 0 {
			if t := bytes.TrimSpace(data.Bytes()); len(t) > 0 {
				var c bytes.Buffer
				if json.Compact(&c, t) == nil {
					fn(c.Bytes())
				}
			}
			data.Reset()
		} else if v, ok := bytes.CutPrefix(l, []byte("data:")); ok {
			if data.Len() > 0 {
				data.WriteByte('\n')
			}
			data.Write(bytes.TrimPrefix(v, []byte(" ")))
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// initTimeout bounds the wait for the hub's answer to the initialize a
// session renewal gives again.
const initTimeout = 15 * time.Second

// fail handles a message the hub did not take. An initialize the hub did
// not answer goes to this process's own engine, as if no hub were running;
// anything else means the hub stopped mid-session.
func (s *Shim) fail(ctx context.Context, line []byte, m shimMsg, cause error) {
	if s.Remote {
		s.remoteFailed(m, cause)
		return
	}
	if m.Method == "initialize" && m.isRequest() {
		s.mu.Lock()
		first := !s.fallen
		if first {
			s.fallen, s.initReq = true, nil
			s.reason = fmt.Sprintf("the hub at %s (pid %d) did not answer initialize: %v", s.Endpoint.URL, s.Endpoint.PID, cause)
		}
		s.mu.Unlock()
		if first {
			s.Logger.Warn("the long-running hub did not answer; serving with this process's own engine", "url", s.Endpoint.URL, "err", cause)
			go s.startLocal(ctx)
			s.toLocal(ctx, line, m)
			return
		}
	}
	s.stopped(ctx, m, cause)
}

// stopped records that the hub stopped answering: m, if a request, is
// answered with an error saying so, or else the next request will be. The
// local engine starts now, in the background.
func (s *Shim) stopped(ctx context.Context, m shimMsg, cause error) {
	if s.Remote {
		s.remoteFailed(m, cause)
		return
	}
	s.mu.Lock()
	first := !s.fallen
	if first {
		s.fallen, s.owed = true, true
		s.stop = newHubStop(s.Endpoint, cause)
		s.reason = s.stop.String()
	}
	owe := m.isRequest()
	if owe {
		s.owed = false
	}
	stop := s.stop
	s.mu.Unlock()
	if first {
		s.Logger.Warn("the long-running hub stopped; serving with this process's own engine from now on", "url", s.Endpoint.URL, "err", cause)
		go s.startLocal(ctx)
	}
	if owe {
		// A connection refused, or not made, sent nothing: that request
		// did not happen, which the person and the model may rely on.
		s.write(hubStoppedReply(m.ID, stop, wasSent(cause)))
	}
}

// startLocal starts the local engine and gives it the client's initialize.
func (s *Shim) startLocal(ctx context.Context) {
	defer close(s.local)
	srv, done, err := s.Local(ctx)
	if err != nil {
		s.localErr = fmt.Errorf("starting this process's own engine: %w", err)
		s.Logger.Error("the long-running hub stopped and this process's own engine did not start", "err", err)
		return
	}
	pr, pw := io.Pipe()
	initDone := make(chan struct{})
	lo := &localOut{s: s, initDone: initDone}
	s.localIn, s.localEnd = pw, make(chan struct{})
	go func() {
		defer close(s.localEnd)
		defer done()
		if err := srv.Serve(ctx, pr, lo); err != nil && !errors.Is(err, context.Canceled) && !strings.Contains(err.Error(), "EOF") {
			s.Logger.Warn("serving over stdio", "err", err)
		}
	}()
	s.mu.Lock()
	params := s.initReq
	s.mu.Unlock()
	if params != nil {
		_, _ = fmt.Fprintf(pw, `{"jsonrpc":"2.0","id":%s,"method":"initialize","params":%s}`+"\n", shimInitID, params)
		select {
		case <-initDone:
		case <-ctx.Done():
			return
		}
		_, _ = io.WriteString(pw, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	}
}

// toLocal serves a message once the hub has stopped.
func (s *Shim) toLocal(ctx context.Context, line []byte, m shimMsg) {
	s.mu.Lock()
	owe := m.isRequest() && s.owed
	if owe {
		s.owed = false
	}
	stop := s.stop
	s.mu.Unlock()
	if owe {
		s.write(hubStoppedReply(m.ID, stop, false)) // it was never sent
		return
	}
	if m.Method == "" && line[0] == '{' {
		s.mu.Lock()
		mine := s.localIDs[string(m.ID)]
		s.mu.Unlock()
		if !mine {
			return // an answer to the stopped hub's question
		}
	}
	select {
	case <-s.local:
	case <-ctx.Done():
		return
	}
	if s.localErr != nil {
		if m.isRequest() {
			s.write(noEngineReply(m.ID, s.reason, s.localErr))
		}
		return
	}
	_, _ = s.localIn.Write(append(line, '\n'))
}

// localOut takes the local engine's output: the answer to the initialize
// the shim gave it is kept back, the rest goes to the client.
type localOut struct {
	s        *Shim
	initDone chan struct{}
	buf      []byte
	once     sync.Once
}

func (o *localOut) Write(p []byte) (int, error) {
	o.buf = append(o.buf, p...)
	for {
		i := bytes.IndexByte(o.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := o.buf[:i+1]
		var m shimMsg
		_ = json.Unmarshal(line, &m)
		switch {
		case m.Method == "" && string(m.ID) == shimInitID:
			o.once.Do(func() { close(o.initDone) })
		default:
			if m.isRequest() {
				o.s.mu.Lock()
				o.s.localIDs[string(m.ID)] = true
				o.s.mu.Unlock()
			}
			if _, err := o.s.out.Write(line); err != nil {
				return 0, err
			}
		}
		o.buf = o.buf[i+1:]
	}
}
