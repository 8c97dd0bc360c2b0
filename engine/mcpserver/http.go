package mcpserver

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxBodyBytes bounds an HTTP request body: the largest execute (64 KB of
// code, escaped) fits with room to spare.
const MaxBodyBytes = 1 << 20

// HTTPHandler serves the MCP endpoint at /mcp for every client era (the
// 2026-07-28 stateless requests and older stateful sessions), behind the
// checks a loopback service needs: the bearer token (compared in constant
// time), a loopback Host and Origin (DNS rebinding), and a body limit.
//
// Each other profile is served at /mcp/<profile> (/mcp is this server's,
// the default profile's), by a server made on the profile's first request.
// AlivePath, behind the same checks, answers that the process serves.
func (s *Server) HTTPHandler(token string) http.Handler {
	return s.httpHandler(token, nil)
}

// httpHandler is HTTPHandler that also accepts the Host and Origin of
// public, the address agents use when it is not loopback (Serving.PublicURL).
func (s *Server) httpHandler(token string, public *url.URL) http.Handler {
	return s.checkedHandler(public, func(w http.ResponseWriter, r *http.Request) bool {
		// The scheme is case-insensitive (RFC 9110 §11.1): "bearer" is one.
		auth := r.Header.Get("Authorization")
		scheme, got, ok := strings.Cut(auth, " ")
		if auth == "" || !ok || !strings.EqualFold(scheme, "Bearer") {
			w.Header().Set("WWW-Authenticate", `Bearer realm="capabilities"`)
			deny(w, http.StatusUnauthorized, "missing bearer token: send Authorization: Bearer <token>, the token `capabilities hub http-token` prints")
			return false
		}
		if subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), []byte(token)) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="capabilities", error="invalid_token"`)
			deny(w, http.StatusUnauthorized, "wrong bearer token: use the token `capabilities hub http-token` prints")
			return false
		}
		return true
	})
}

// HostedHandler is HTTPHandler for one tenant of a hosted hub
// (engine/hosted), whose caller has authorized every request already (an
// OAuth access token for this tenant, checked before this handler): the
// hub's own bearer token is not asked for. Host and Origin are checked as
// HTTPHandler checks them, with public's accepted.
func (s *Server) HostedHandler(public *url.URL) http.Handler {
	return s.checkedHandler(public, func(http.ResponseWriter, *http.Request) bool { return true })
}

// checkedHandler is the MCP endpoint behind the Host and Origin checks and
// authorized, which answers the request itself when it returns false.
func (s *Server) checkedHandler(public *url.URL, authorized func(http.ResponseWriter, *http.Request) bool) http.Handler {
	stateful, stateless := s.streamHandlers()
	badHost := func(h string) string {
		if public == nil {
			return fmt.Sprintf("Host %q is not a loopback address; this endpoint answers only 127.0.0.1, localhost or [::1] (DNS rebinding protection)", h)
		}
		return fmt.Sprintf("Host %q is not a loopback address nor the public URL's host %s (DNS rebinding protection)", h, public.Host)
	}
	badOrigin := func(o string) string {
		if public == nil {
			return fmt.Sprintf("Origin %q is not a loopback origin; browsers on other sites may not call this endpoint", o)
		}
		return fmt.Sprintf("Origin %q is not a loopback origin nor the public URL's %s://%s; browsers on other sites may not call this endpoint", o, public.Scheme, public.Host)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !loopbackHost(r.Host) && !publicHost(public, r.Host) {
			deny(w, http.StatusForbidden, badHost(r.Host))
			return
		}
		if o := r.Header.Get("Origin"); o != "" && !loopbackOrigin(o) && !publicOrigin(public, o) {
			deny(w, http.StatusForbidden, badOrigin(o))
			return
		}
		if !authorized(w, r) {
			return
		}
		if r.URL.Path == AlivePath {
			serveAlive(w, r)
			return
		}
		stateful, stateless, srv := stateful, stateless, s
		if name, ok := strings.CutPrefix(r.URL.Path, "/mcp/"); ok && name != "" && name != s.name {
			ps, err := s.forProfile(r.Context(), name)
			if err != nil {
				deny(w, http.StatusNotFound, fmt.Sprintf("not found: %v", err))
				return
			}
			stateful, stateless, srv = ps.stateful, ps.stateless, ps.srv
		} else if r.URL.Path != "/mcp" && r.URL.Path != "/mcp/" && r.URL.Path != "/mcp/"+s.name {
			deny(w, http.StatusNotFound, "not found: the MCP endpoint is /mcp, and /mcp/<profile> for each profile")
			return
		}
		if r.ContentLength > MaxBodyBytes {
			deny(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body of %d bytes is over the limit of %d", r.ContentLength, MaxBodyBytes))
			return
		}
		body := http.MaxBytesReader(w, r.Body, MaxBodyBytes)
		arrived := s.anticipate
		if r.Method == http.MethodPost && acceptsJSON(r) {
			// A reply that comes alone goes back as application/json.
			jr := &jsonReply{w: w}
			defer jr.finish()
			arrived = func(p []byte) {
				jr.sawBody(p)
				s.anticipate(p)
			}
			w = jr
		}
		r.Body = &arrivingBody{ReadCloser: body, arrived: arrived}
		if modernRequest(r) {
			if srv.fastCall(w, r) {
				return
			}
			stateless.ServeHTTP(w, r)
			return
		}
		stateful.ServeHTTP(w, r)
	})
}

// streamHandlers makes the server's two go-sdk handlers. go-sdk serves
// 2026-07-28 only from a stateless handler and rejects it
// (UnsupportedProtocolVersion) from a stateful one, while older clients
// need a stateful session (server-to-client elicitation): each request is
// routed by the protocol version it declares.
// SessionIdle is how long an HTTP session may go unused before it is
// closed.
const SessionIdle = time.Hour

// MaxSessions caps the HTTP sessions one server keeps open (each holds about
// 17 KB): a new one past it closes the session used least recently, whose
// client gets 404 on its next request and opens another, as the protocol
// says (the stdio shim does so by itself).
const MaxSessions = 1000

func (s *Server) streamHandlers() (stateful, stateless http.Handler) {
	getServer := func(*http.Request) *mcp.Server { return s.mcp }
	// The handlers are reached only through httpHandler, which has checked
	// Host already (a loopback name, or the public URL's host): go-sdk's
	// own check, loopback only, would refuse the public URL's.
	stateful = s.limitSessions(MaxSessions, s.sessionFast(mcp.NewStreamableHTTPHandler(getServer, &mcp.StreamableHTTPOptions{
		Logger:              s.opts.Logger,
		MaxRequestBodyBytes: MaxBodyBytes,
		// A session no request used for this long is closed (a client
		// that comes back starts another, as the protocol says): without
		// it, every initialize a client never ends kept its memory.
		SessionTimeout:             SessionIdle,
		DisableLocalhostProtection: true,
	})))
	stateless = mcp.NewStreamableHTTPHandler(getServer, &mcp.StreamableHTTPOptions{
		Logger:                     s.opts.Logger,
		MaxRequestBodyBytes:        MaxBodyBytes,
		Stateless:                  true,
		DisableLocalhostProtection: true,
	})
	return stateful, stateless
}

// limitSessions serves next, keeping at most limit of the server's sessions
// open: before a request opens a new one, the least recently used sessions
// are closed to make room.
func (s *Server) limitSessions(limit int, next http.Handler) http.Handler {
	var (
		mu      sync.Mutex
		used    = map[string]time.Time{} // session id → last request
		opening int                      // requests that may open a session, under way
	)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if sid := r.Header.Get("Mcp-Session-Id"); sid != "" {
			mu.Lock()
			if _, ok := used[sid]; ok {
				used[sid] = time.Now()
			}
			mu.Unlock()
			next.ServeHTTP(w, r)
			return
		}
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		// A session opened by a request under way counts before it is
		// known: initializes arriving together would each see room.
		mu.Lock()
		if len(used)+opening >= limit {
			s.evictSessions(used, max(limit-1-opening, 0))
		}
		opening++
		mu.Unlock()
		next.ServeHTTP(w, r)
		mu.Lock()
		opening--
		if sid := w.Header().Get("Mcp-Session-Id"); sid != "" {
			used[sid] = time.Now()
		}
		mu.Unlock()
	})
}

// evictSessions forgets the sessions that are gone, then closes the least
// recently used ones until at most keep remain.
func (s *Server) evictSessions(used map[string]time.Time, keep int) {
	open := map[string]*mcp.ServerSession{}
	for ss := range s.mcp.Sessions() {
		open[ss.ID()] = ss
	}
	for sid := range used {
		if open[sid] == nil {
			delete(used, sid)
		}
	}
	if len(used) <= keep {
		return
	}
	ids := make([]string, 0, len(used))
	for sid := range used {
		ids = append(ids, sid)
	}
	slices.SortFunc(ids, func(a, b string) int { return used[a].Compare(used[b]) })
	for _, sid := range ids[:len(ids)-keep] {
		delete(used, sid)
		s.opts.Logger.Info("closing the HTTP session used least recently: too many open", "session", sid, "max", keep+1)
		_ = open[sid].Close()
	}
}

// sessionIDs makes the HTTP session ids of a process named node:
// "<node>.<26 random base32 characters>" (128 bits, go-sdk's own), so that
// a reverse proxy in front of several processes sends a session's requests
// to the one that holds it (deploy/nginx/capabilities.conf maps the part
// before the dot to an upstream). A process that gets a session it does
// not hold answers 404, and the client starts a new session, as the
// protocol says. nil (node empty) keeps go-sdk's ids.
func sessionIDs(node string) func() string {
	if node == "" {
		return nil
	}
	return func() string { return node + "." + rand.Text() }
}

// NodeOf returns the node an HTTP session id names ("" when it names none).
func NodeOf(sessionID string) string {
	node, _, ok := strings.Cut(sessionID, ".")
	if !ok {
		return ""
	}
	return node
}

// ValidNode checks a process's node name: 1 to 63 ASCII letters, digits,
// '-' or '_', starting with a letter or digit (a session id's prefix, and a
// key of a proxy's map).
func ValidNode(node string) error {
	if node == "" || len(node) > 63 {
		return fmt.Errorf("node name %q: use 1 to 63 characters", node)
	}
	for i, c := range node {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case (c == '-' || c == '_') && i > 0:
		default:
			return fmt.Errorf("node name %q: character %q at %d; use ASCII letters, digits, '-' and '_' (no dot: the node ends at the session id's first dot), starting with a letter or digit", node, c, i+1)
		}
	}
	return nil
}

// DefaultNode is the node name of a process that was given none: the
// machine's host name (its first label, lower case, other characters made
// '-') and the port it listens on, such as "web-1-4790": unique among the
// hub's processes as long as no two machines share a host name.
func DefaultNode(hostname string, port int) string {
	host, _, _ := strings.Cut(strings.ToLower(hostname), ".")
	b := []byte(host)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			b[i] = '-'
		}
	}
	host = strings.Trim(string(b), "-_")
	if host == "" {
		host = "hub"
	}
	suffix := "-" + strconv.Itoa(port)
	if len(host)+len(suffix) > 63 {
		host = strings.TrimRight(host[:63-len(suffix)], "-_")
	}
	return host + suffix
}

// profileServer is another profile's server and its handlers.
type profileServer struct {
	srv                 *Server
	mode                string
	stateful, stateless http.Handler
}

// forProfile returns the server of a profile, made on first use and made
// again when the profile's mode changed.
func (s *Server) forProfile(ctx context.Context, name string) (*profileServer, error) {
	p, err := s.hub.Profile(ctx, name)
	if err != nil {
		return nil, err
	}
	s.subsMu.Lock()
	defer s.subsMu.Unlock()
	if ps := s.subs[name]; ps != nil && ps.mode == p.Mode {
		return ps, nil
	} else if ps != nil {
		ps.srv.Close()
	}
	opts := s.opts
	opts.Profile = p
	ps := &profileServer{srv: New(s.hub, opts), mode: p.Mode}
	ps.stateful, ps.stateless = ps.srv.streamHandlers()
	if s.subs == nil {
		s.subs = map[string]*profileServer{}
	}
	s.subs[name] = ps
	return ps, nil
}

// modernRequest reports whether a request speaks protocol 2026-07-28 or
// later, which names its version in the MCP-Protocol-Version header on every
// request (versions are dates, so they compare as strings).
func modernRequest(r *http.Request) bool {
	return r.Header.Get("Mcp-Protocol-Version") >= modernProtocol
}

const modernProtocol = "2026-07-28"

// AlivePath is the hub's liveness probe: a GET there is answered at once,
// by the HTTP server alone, with {"pid": N}. The stdio shim asks it while a
// relayed request is outstanding, so that it can tell a hub at work on a
// long request (an execute waiting for a person, a slow tool) from one that
// is stopped or stuck (Shim.Liveness). It proves only that the process
// serves: it touches no session and no engine state.
const AlivePath = "/alive"

func serveAlive(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		deny(w, http.StatusMethodNotAllowed, "method not allowed: "+AlivePath+" answers GET")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	fmt.Fprintf(w, "{\"pid\":%d}\n", os.Getpid())
}

func deny(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	fmt.Fprintln(w, msg)
}

// loopbackHost reports whether a Host header names this machine.
func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func loopbackOrigin(origin string) bool {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	return loopbackHost(u.Host)
}

// arrivingBody shows the first bytes read of a request's body to arrived
// (Server.anticipate), as the SDK starts reading it.
type arrivingBody struct {
	io.ReadCloser
	arrived func([]byte)
	seen    bool
}

func (b *arrivingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if !b.seen && n > 0 {
		b.seen = true
		b.arrived(p[:n])
	}
	return n, err
}
