package mcpserver

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// HealthPath answers 200 while the process is alive; ReadyPath answers 200
// when it is ready to serve (Serving.Ready) and 503 with a reason
// otherwise, and while it drains. Both answer without the bearer token and
// whatever the Host (a load balancer probes a backend by its address), and
// both say nothing but ok or why not.
const (
	HealthPath = "/healthz"
	ReadyPath  = "/readyz"
)

// DefaultDrainTimeout bounds a drain (Serving.DrainTimeout).
const DefaultDrainTimeout = 30 * time.Second

// Serving is how Serve serves the HTTP endpoint.
type Serving struct {
	// Token is the bearer token every MCP request must send.
	Token string
	// Limits bound what the endpoint holds at once.
	Limits HTTPLimits
	// PublicURL, when set, is the address agents use (a reverse proxy in
	// front, or this process's own TLS name): its host is accepted in the
	// Host header and its origin in Origin, besides loopback ones.
	PublicURL *url.URL
	// TLS, when set, serves HTTPS with it.
	TLS *tls.Config
	// Ready, when set, says whether the hub can serve (its store readable,
	// its sandbox warm); its error's text is /readyz's reason, so it must
	// hold nothing secret.
	Ready func(context.Context) error
	// Drain, once closed, starts a graceful drain: /readyz answers 503, the
	// listener closes (new connections are refused), a new request on an
	// open connection is answered 503 with Retry-After, and the requests
	// under way (an execute and its run) finish; then Serve returns nil.
	// Requests still under way after DrainTimeout are cut.
	Drain        <-chan struct{}
	DrainTimeout time.Duration
}

// ServeHTTP serves the MCP endpoint (HTTPHandler) on ln until ctx is done,
// then shuts down, giving open requests up to 5 s. It also answers the
// stdio shim's challenge (ProofPath) with token.
func (s *Server) ServeHTTP(ctx context.Context, ln net.Listener, token string, lim HTTPLimits) error {
	return s.ServeHTTPWith(ctx, ln, Serving{Token: token, Limits: lim})
}

// ServeHTTPWith serves the MCP endpoint on ln as o says, until ctx is done (then
// open requests get up to 5 s) or o.Drain is closed (then they get
// o.DrainTimeout).
func (s *Server) ServeHTTPWith(ctx context.Context, ln net.Listener, o Serving) error {
	lim := o.Limits.withDefaults()
	if o.DrainTimeout <= 0 {
		o.DrainTimeout = DefaultDrainTimeout
	}
	cl := newConnLimiter(ln, lim.MaxConns, lim.SlowAfter)
	adm := newAdmission(lim.MaxRequests, lim.MaxWaiting, s.opts.Logger)
	d := &drainer{ready: o.Ready, idle: make(chan struct{})}
	mcpH := proveHub(func() string { return o.Token }, adm.wrap(s.httpHandler(o.Token, o.PublicURL)))
	hs := &http.Server{
		Handler:           d.wrap(mcpH),
		ReadHeaderTimeout: lim.ReadHeaderTimeout,
		ReadTimeout:       lim.ReadTimeout,
		IdleTimeout:       lim.IdleTimeout,
		MaxHeaderBytes:    64 << 10,
		ConnState:         cl.state,
		TLSConfig:         o.TLS,
	}
	// With TLS, ServeTLS sets up HTTP/2 beside HTTP/1.1 and offers both
	// (a listener wrapped here would offer h2 and then not speak it).
	serve := func() error { return hs.Serve(cl) }
	if o.TLS != nil {
		hs.TLSConfig = o.TLS.Clone()
		serve = func() error { return hs.ServeTLS(cl, "", "") }
	}
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		select {
		case <-ctx.Done():
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := hs.Shutdown(sctx); err != nil {
				hs.Close()
			}
		case <-o.Drain:
			s.drain(ctx, hs, d, o.DrainTimeout)
		case <-done:
		}
	}()
	err := serve()
	close(done)
	<-stopped
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving over HTTP: %w", err)
	}
	return nil
}

// drain stops hs gracefully: no new connection, no new request, the ones
// under way given up to timeout (or until ctx is done: stop at once).
func (s *Server) drain(ctx context.Context, hs *http.Server, d *drainer, timeout time.Duration) {
	log := s.opts.Logger
	start := time.Now()
	n := d.begin()
	if log != nil {
		log.Info("draining: refusing new requests, finishing the ones under way", "under_way", n, "timeout", timeout)
	}
	dctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	// Shutdown closes the listener and the idle connections at once; it
	// returns when every connection is idle, which an event stream (GET)
	// never is: the requests that count are waited for apart.
	shut := make(chan struct{})
	go func() { _ = hs.Shutdown(dctx); close(shut) }()
	select {
	case <-d.idle:
		if log != nil {
			log.Info("drained: every request under way has finished", "took", time.Since(start).Round(time.Millisecond))
		}
		// A handler that returned may not have flushed its answer yet:
		// Shutdown waits for its connection to go idle. Only event
		// streams keep it waiting, so it gets a moment, not the drain.
		select {
		case <-shut:
		case <-time.After(drainFlush):
		case <-dctx.Done():
		}
	case <-ctx.Done():
		if log != nil {
			log.Warn("drain cut short: stopping now", "under_way", d.inFlight())
		}
	case <-dctx.Done():
		if log != nil {
			log.Warn("drain timed out: cutting the requests still under way (a run waiting for a person stays recorded and resumes on the next start)", "under_way", d.inFlight(), "timeout", timeout)
		}
	}
	hs.Close()
}

// drainFlush bounds the wait, once every request under way has
// returned, for their answers to reach the wire before the connections
// left (event streams) are closed.
const drainFlush = time.Second

// drainer answers the health and readiness probes, counts the requests
// under way, and refuses new ones once a drain has begun.
type drainer struct {
	ready func(context.Context) error

	mu       sync.Mutex
	draining bool
	n        int           // requests under way (not event streams)
	idle     chan struct{} // closed when draining and n is 0
}

func (d *drainer) begin() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.draining = true
	if d.n == 0 {
		close(d.idle)
	}
	return d.n
}

func (d *drainer) inFlight() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.n
}

// enter counts a request in, unless a drain has begun.
func (d *drainer) enter() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.draining {
		return false
	}
	d.n++
	return true
}

func (d *drainer) leave() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.n--
	if d.draining && d.n == 0 {
		close(d.idle)
	}
}

func (d *drainer) isDraining() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.draining
}

// drainRetryAfter is the Retry-After, in seconds, of a request refused
// during a drain: another process (behind the same proxy) or this one's
// successor serves it.
const drainRetryAfter = 1

func (d *drainer) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case HealthPath:
			probe(w, r, func() (int, string) { return http.StatusOK, "ok" })
			return
		case ReadyPath:
			probe(w, r, func() (int, string) {
				if d.isDraining() {
					return http.StatusServiceUnavailable, "not ready: draining (shutting down)"
				}
				if d.ready != nil {
					ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
					defer cancel()
					if err := d.ready(ctx); err != nil {
						return http.StatusServiceUnavailable, "not ready: " + err.Error()
					}
				}
				return http.StatusOK, "ok"
			})
			return
		}
		// An event stream (GET) lasts as long as its session: it is not
		// waited for, and is closed when the drain ends.
		if r.Method == http.MethodGet {
			if d.isDraining() {
				refuseDraining(w)
				return
			}
			next.ServeHTTP(w, r)
			return
		}
		if !d.enter() {
			refuseDraining(w)
			return
		}
		defer d.leave()
		next.ServeHTTP(w, r)
	})
}

func refuseDraining(w http.ResponseWriter) {
	w.Header().Set("Retry-After", strconv.Itoa(drainRetryAfter))
	w.Header().Set("Connection", "close")
	deny(w, http.StatusServiceUnavailable, fmt.Sprintf("the hub is shutting down: nothing of this request was served; send it again after %d s (another hub process, or this one restarted, serves it)", drainRetryAfter))
}

// probe answers a health or readiness probe: GET or HEAD, plain text.
func probe(w http.ResponseWriter, r *http.Request, answer func() (int, string)) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		deny(w, http.StatusMethodNotAllowed, "method not allowed: "+r.URL.Path+" answers GET")
		return
	}
	code, msg := answer()
	w.Header().Set("Cache-Control", "no-store")
	deny(w, code, msg)
}

// publicHost reports whether a Host header names the public URL's host
// (its port, or the scheme's default port when it names none).
func publicHost(pub *url.URL, hostport string) bool {
	if pub == nil {
		return false
	}
	return strings.EqualFold(canonicalHostPort(pub.Scheme, hostport), canonicalHostPort(pub.Scheme, pub.Host))
}

// publicOrigin reports whether an Origin is the public URL's origin.
func publicOrigin(pub *url.URL, origin string) bool {
	if pub == nil {
		return false
	}
	u, err := url.Parse(origin)
	if err != nil || !strings.EqualFold(u.Scheme, pub.Scheme) || u.Path != "" && u.Path != "/" {
		return false
	}
	return strings.EqualFold(canonicalHostPort(pub.Scheme, u.Host), canonicalHostPort(pub.Scheme, pub.Host))
}

// canonicalHostPort writes host:port with the scheme's default port when
// hostport names none.
func canonicalHostPort(scheme, hostport string) string {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		host, port = strings.Trim(hostport, "[]"), ""
	}
	if port == "" {
		port = "80"
		if strings.EqualFold(scheme, "https") {
			port = "443"
		}
	}
	return net.JoinHostPort(strings.TrimSuffix(host, "."), port)
}

// ParsePublicURL checks a --public-url: an absolute http(s) URL naming a
// host, with no user, query or fragment.
func ParsePublicURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%q is not a URL: %w", raw, err)
	}
	if u.Scheme != "https" && u.Scheme != "http" {
		return nil, fmt.Errorf("%q: write an http(s) URL, such as https://hub.example.com", raw)
	}
	if u.Host == "" || u.Hostname() == "" {
		return nil, fmt.Errorf("%q names no host: write it as https://hub.example.com", raw)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("%q: write only the scheme, host and port (and path), no user, query or fragment", raw)
	}
	return u, nil
}
