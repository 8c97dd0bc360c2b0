// Package hosted is the hosted hub: one process (or several behind a proxy)
// serving many tenants, one per signed-in account, on one database.
//
// A Server keeps one hub.Hub per tenant, made on the tenant's first request
// over the tenant's own store (Config.Stores: a tenant view of the
// PostgreSQL store), with its secrets sealed in that store under the
// operator's key-encryption key (never an OS keychain), its upstream
// traffic through the egress guard, and stdio sources refused; a hub no
// request has used for Config.IdleTimeout is closed.
//
// Handler serves, on the public URL:
//
//   - /mcp (and /mcp/<profile>): the tenant's MCP endpoint, behind an OAuth
//     access token for the resource PublicURL+"/mcp" with scope "mcp"; the
//     tenant is the token's, never a request's parameter;
//   - the OAuth authorization server (engine/authserver): its metadata,
//     /register, /authorize, /token, /revoke;
//   - /signin, /signin/callback, /signout: the identity provider's sign-in
//     (engine/identity);
//   - /api/push/…, /api/status and /api/inbox…: the person's own API, behind
//     an access token with scope "hub" (go-sdk's auth.TokenInfo in the
//     request's context: UserID is the tenant);
//   - /healthz and /readyz; and "/" for the dashboard.
package hosted

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/capabilities-sh/capabilities/engine/authserver"
	"github.com/capabilities-sh/capabilities/engine/egress"
	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/identity"
	"github.com/capabilities-sh/capabilities/engine/mcpserver"
	"github.com/capabilities-sh/capabilities/engine/sandbox"
	"github.com/capabilities-sh/capabilities/engine/secret"
	"github.com/capabilities-sh/capabilities/store"
)

// HubFunc resolves a tenant's hub; the hub stays open at least until ctx is
// done (Server.Hub).
type HubFunc func(ctx context.Context, tenant string) (*hub.Hub, error)

// Identity is the sign-in of people (an *identity.RP).
type Identity interface {
	// Handler serves /signin, /signin/callback and /signout.
	Handler() http.Handler
	// Tenant is the tenant of the person signed in on r.
	Tenant(r *http.Request) (string, bool)
	// SignIn sends the browser to sign in and back to r's URL.
	SignIn(w http.ResponseWriter, r *http.Request)
}

// Config configures a Server.
type Config struct {
	// PublicURL is the base URL people and agents reach the hub at,
	// https (http only on loopback, for tests), no path:
	// "https://hub.example.com". It is the OAuth issuer, and PublicURL+"/mcp"
	// the resource every access token is bound to.
	PublicURL string
	// Stores returns the store of a tenant (a view scoped to it). The hub
	// made over it closes it when the hub closes.
	Stores func(ctx context.Context, tenant string) (store.Store, error)
	// KEK seals each tenant's secrets in its own store.
	KEK *secret.KEK
	// Auth keeps the OAuth clients, codes and tokens (authserver/pgstore).
	Auth authserver.Store
	// Identity signs people in; its tenant is the one OAuth grants name.
	Identity Identity
	// ConsentKey signs the OAuth consent forms (at least 32 bytes; the same
	// on every replica).
	ConsentKey []byte
	// Egress checks every connection a tenant's sources make (and the
	// fetch of OAuth client ID metadata documents). Required: a hosted hub
	// without it would reach the operator's private network.
	Egress *egress.Guard
	// HubOptions are the options of the tenant's hub (run and sandbox
	// limits); nil takes the zero Options. The Server sets Logger, Secrets,
	// Source.Egress, Source.RemoteOnly, Driver and Tenant itself.
	HubOptions func(tenant string) hub.Options
	// Driver is the sandbox every tenant's runs share, admitted fairly by
	// tenant; nil: the Server makes one (and closes it with itself).
	Driver *sandbox.Driver
	// IdleTimeout closes a tenant's hub that no request has used for this
	// long (DefaultIdleTimeout when zero).
	IdleTimeout time.Duration
	// MaxOpen bounds the tenants' hubs open at once (DefaultMaxOpen when
	// zero): opening one more closes the least recently used idle one
	// first. Hubs in use are never closed, so more may be open for a while.
	MaxOpen int
	// TrustedProxies are the reverse proxies in front: the last address of
	// their X-Forwarded-For is the client's, for the rate limit of OAuth
	// client registration (authserver.Config.TrustedProxies). Nil:
	// loopback, a proxy on the same host.
	TrustedProxies []netip.Prefix
	// Node names this process among the hub's replicas in MCP session ids
	// (mcpserver.Options.Node), for a proxy to route a session by.
	Node string
	// Push, Inbox and Dashboard make the handlers of the person's API
	// (engine/push: /api/push/…, /api/status; engine/inbox: /api/inbox…)
	// and of the dashboard at "/" (engine/dashboard), given the tenant's
	// hubs. Nil: the paths answer 501 (not served by this build).
	Push, Inbox, Dashboard func(HubFunc) http.Handler
	// Ready, when set, is part of /readyz (its error's text is shown).
	Ready  func(context.Context) error
	Logger *slog.Logger
}

// DefaultIdleTimeout is how long a tenant's hub stays open unused.
const DefaultIdleTimeout = 10 * time.Minute

// DefaultMaxOpen is how many tenants' hubs stay open at once, unless in use.
const DefaultMaxOpen = 1000

// Server is the hosted hub.
type Server struct {
	cfg     Config
	public  *url.URL
	driver  *sandbox.Driver
	ownsDrv bool
	as      *authserver.Server
	log     *slog.Logger
	handler http.Handler

	mu      sync.Mutex
	tenants map[string]*tenant
	closed  bool
	stop    chan struct{}
	swept   chan struct{}
}

// tenant is one tenant's open hub.
type tenant struct {
	id    string
	ready chan struct{} // closed once hub (or err) is set
	err   error
	hub   *hub.Hub
	mcp   *mcpserver.Server
	serve http.Handler
	stop  context.CancelFunc

	users int       // requests (and Hub contexts) holding it; under Server.mu
	last  time.Time // when the last one let go; under Server.mu
}

// New checks cfg and returns a Server. Close it to close the tenants' hubs.
func New(cfg Config) (*Server, error) {
	pub, err := mcpserver.ParsePublicURL(cfg.PublicURL)
	if err != nil {
		return nil, fmt.Errorf("configuring the hosted hub: public URL: %w", err)
	}
	if pub.Path != "" && pub.Path != "/" {
		return nil, fmt.Errorf("configuring the hosted hub: public URL %q has a path; give the base URL, such as https://hub.example.com", cfg.PublicURL)
	}
	switch {
	case cfg.Stores == nil:
		return nil, errors.New("configuring the hosted hub: Stores is required")
	case cfg.KEK == nil:
		return nil, errors.New("configuring the hosted hub: a key-encryption key is required (tenants' secrets are sealed with it)")
	case cfg.Auth == nil:
		return nil, errors.New("configuring the hosted hub: an OAuth store is required")
	case cfg.Identity == nil:
		return nil, errors.New("configuring the hosted hub: an identity provider is required")
	case cfg.Egress == nil:
		return nil, errors.New("configuring the hosted hub: an egress guard is required")
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.MaxOpen <= 0 {
		cfg.MaxOpen = DefaultMaxOpen
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	base := strings.TrimSuffix(pub.String(), "/")
	as, err := authserver.New(authserver.Config{
		Issuer:         base,
		Resource:       base + "/mcp",
		Scopes:         []string{authserver.ScopeMCP, authserver.ScopeHub},
		DefaultScopes:  []string{authserver.ScopeMCP},
		Store:          cfg.Auth,
		Person:         cfg.Identity.Tenant,
		SignIn:         cfg.Identity.SignIn,
		Display:        display(cfg.Identity),
		CSRFKey:        cfg.ConsentKey,
		MetadataClient: cfg.Egress.Client("client ID metadata document"),
		TrustedProxies: cfg.TrustedProxies,
		Logger:         cfg.Logger,
	})
	if err != nil {
		return nil, fmt.Errorf("configuring the hosted hub: %w", err)
	}
	s := &Server{cfg: cfg, public: pub, as: as, log: cfg.Logger, tenants: map[string]*tenant{},
		stop: make(chan struct{}), swept: make(chan struct{}), driver: cfg.Driver}
	if s.driver == nil {
		d, err := sandbox.New(sandbox.Options{CacheDir: sandbox.DefaultCacheDir()})
		if err != nil {
			return nil, fmt.Errorf("configuring the hosted hub: starting the sandbox: %w", err)
		}
		s.driver, s.ownsDrv = d, true
	}
	s.handler = s.routes()
	go s.sweep()
	return s, nil
}

// display names the signed-in person on the consent page, when the
// identity provider says who they are (an *identity.RP does).
func display(id Identity) func(*http.Request) string {
	p, ok := id.(interface {
		Person(*http.Request) (identity.Account, bool)
	})
	if !ok {
		return nil
	}
	return func(r *http.Request) string {
		a, ok := p.Person(r)
		switch {
		case !ok:
			return ""
		case a.Email != "":
			return a.Email
		}
		return a.Name
	}
}

// Auth is the OAuth authorization server (for tests and benchmarks).
func (s *Server) Auth() *authserver.Server { return s.as }

// Resource is the resource every access token is bound to.
func (s *Server) Resource() string { return strings.TrimSuffix(s.public.String(), "/") + "/mcp" }

// ErrClosed is returned by Hub once the Server is closed.
var ErrClosed = errors.New("the hosted hub is shutting down")

// validTenant accepts the tenant ids engine/identity makes ("tn_" and
// base32) and, for tests, any short lowercase id; never "" (the shared,
// non-tenant store).
func validTenant(id string) error {
	if id == "" || len(id) > 64 {
		return fmt.Errorf("tenant id %q: want 1 to 64 characters", id)
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return fmt.Errorf("tenant id %q: only a-z, 0-9, _ and - are allowed", id)
		}
	}
	return nil
}

// Hub returns the tenant's hub, opening it if needed; it stays open at
// least until ctx is done (a request's context), so do not pass a context
// that never ends unless the hub may stay open until Close.
func (s *Server) Hub(ctx context.Context, tenantID string) (*hub.Hub, error) {
	t, err := s.acquire(ctx, tenantID)
	if err != nil {
		return nil, err
	}
	context.AfterFunc(ctx, func() { s.release(t) })
	return t.hub, nil
}

// acquire returns the tenant's open hub, counted as used until release.
func (s *Server) acquire(ctx context.Context, id string) (*tenant, error) {
	if err := validTenant(id); err != nil {
		return nil, fmt.Errorf("opening a tenant's hub: %w", err)
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, ErrClosed
	}
	t := s.tenants[id]
	creator := t == nil
	var evicted *tenant
	if creator {
		evicted = s.evictLocked()
		t = &tenant{id: id, ready: make(chan struct{})}
		s.tenants[id] = t
	}
	t.users++
	s.mu.Unlock()
	if evicted != nil {
		evicted.close()
		s.log.Info("tenant hub closed (the most open at once reached)", "tenant", evicted.id)
	}
	if creator {
		t.err = s.open(t)
		if t.err != nil {
			s.mu.Lock()
			delete(s.tenants, id)
			s.mu.Unlock()
		}
		close(t.ready)
	} else {
		select {
		case <-t.ready:
		case <-ctx.Done():
			s.release(t)
			return nil, ctx.Err()
		}
	}
	if t.err != nil {
		return nil, t.err
	}
	return t, nil
}

// evictLocked takes out of the map the least recently used idle hub when
// MaxOpen are open, for the caller to close (outside s.mu).
func (s *Server) evictLocked() *tenant {
	if len(s.tenants) < s.cfg.MaxOpen {
		return nil
	}
	var lru *tenant
	for _, t := range s.tenants {
		select {
		case <-t.ready:
		default:
			continue
		}
		if t.err == nil && t.users == 0 && (lru == nil || t.last.Before(lru.last)) {
			lru = t
		}
	}
	if lru != nil {
		delete(s.tenants, lru.id)
	}
	return lru
}

func (s *Server) release(t *tenant) {
	s.mu.Lock()
	t.users--
	t.last = time.Now()
	s.mu.Unlock()
}

// open makes the tenant's hub and its MCP server.
func (s *Server) open(t *tenant) error {
	log := s.log.With("tenant", t.id)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := s.cfg.Stores(ctx, t.id)
	if err != nil {
		log.Error("opening a tenant's store", "err", err)
		return fmt.Errorf("opening the hub of tenant %s: %w", t.id, err)
	}
	// The key record of the tenant's secrets names the tenant: a sealed
	// value copied into another tenant's store does not open there.
	sealed, err := secret.OpenSealed(ctx, st, t.id, s.cfg.KEK)
	if err != nil {
		closeStore(st)
		log.Error("opening a tenant's sealed secrets", "err", err)
		return fmt.Errorf("opening the secrets of tenant %s: %w", t.id, err)
	}
	var opts hub.Options
	if s.cfg.HubOptions != nil {
		opts = s.cfg.HubOptions(t.id)
	}
	opts.Logger = log
	opts.Secrets = sealed
	opts.NoKeychain = true
	opts.Source.Egress = s.cfg.Egress
	opts.Source.HTTPClient = nil // the guard's client, never one that bypasses it
	opts.Source.RemoteOnly = true
	opts.Driver, opts.Tenant = s.driver, t.id
	h := hub.New(st, opts)
	// No elicitation signer: on a hosted hub a decision comes from the
	// person's dashboard or desktop app, never through the MCP client; and
	// no approval page on the server's loopback: the model is told where
	// the person decides.
	srv := mcpserver.New(h, mcpserver.Options{Logger: log, Node: s.cfg.Node, Pages: decideElsewhere{}})
	hctx, stop := context.WithCancel(context.Background())
	go func() {
		if err := h.Watch(hctx); err != nil && hctx.Err() == nil {
			log.Warn("live configuration is off for a tenant", "err", err)
		}
	}()
	go func() {
		// Runs a person decided (dashboard, desktop) finish here.
		if err := h.FinishDecided(hctx); err != nil && hctx.Err() == nil {
			log.Warn("runs are not resumed when a person decides", "err", err)
		}
	}()
	t.hub, t.mcp, t.stop = h, srv, stop
	t.serve = srv.HostedHandler(s.public)
	log.Info("tenant hub opened")
	return nil
}

// decideElsewhere is the hosted hub's approval "page": the pending calls
// are in the person's dashboard inbox and raised by their desktop app;
// nothing is opened, and no address reaches the model.
type decideElsewhere struct{}

func (decideElsewhere) Open(context.Context, string, []string) (mcpserver.Page, error) {
	return mcpserver.Page{Shown: true, Only: true, Where: "the person's hub dashboard and desktop app show it"}, nil
}

func closeStore(st store.Store) {
	if c, ok := st.(interface{ Close() error }); ok {
		_ = c.Close()
	}
}

func (t *tenant) close() {
	t.stop()
	t.mcp.Close()
	t.hub.Close()
}

// sweep closes the hubs left unused for IdleTimeout.
func (s *Server) sweep() {
	defer close(s.swept)
	every := max(s.cfg.IdleTimeout/4, 10*time.Millisecond)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-tick.C:
		}
		var idle []*tenant
		s.mu.Lock()
		for id, t := range s.tenants {
			select {
			case <-t.ready:
			default:
				continue // opening
			}
			if t.err == nil && t.users == 0 && time.Since(t.last) >= s.cfg.IdleTimeout {
				delete(s.tenants, id)
				idle = append(idle, t)
			}
		}
		s.mu.Unlock()
		for _, t := range idle {
			t.close()
			s.log.Info("tenant hub closed (idle)", "tenant", t.id)
		}
	}
}

// Open reports how many tenants' hubs are open.
func (s *Server) Open() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.tenants)
}

// Idle reports how many of the open hubs no request holds.
func (s *Server) Idle() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, t := range s.tenants {
		if t.users == 0 {
			n++
		}
	}
	return n
}

// Close closes every tenant's hub; Hub fails from now on.
func (s *Server) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	ts := s.tenants
	s.tenants = map[string]*tenant{}
	s.mu.Unlock()
	close(s.stop)
	<-s.swept
	for _, t := range ts {
		<-t.ready
		if t.err == nil {
			t.close()
		}
	}
	if s.ownsDrv {
		_ = s.driver.Close()
	}
}

// Handler serves the hosted hub (see the package comment).
func (s *Server) Handler() http.Handler { return s.handler }

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	oauth := s.as.Handler()
	mux.Handle("/.well-known/", oauth)
	for _, p := range []string{authserver.PathAuthorize, authserver.PathToken, authserver.PathRegister, authserver.PathRevoke} {
		mux.Handle(p, oauth)
	}
	signin := s.cfg.Identity.Handler()
	mux.Handle("/signin", signin)
	mux.Handle("/signin/", signin)
	mux.Handle("/signout", signin)

	mcpH := s.as.RequireScopes(http.HandlerFunc(s.serveMCP), authserver.ScopeMCP)
	mux.Handle("/mcp", mcpH)
	mux.Handle("/mcp/", mcpH)

	api := func(h http.Handler) http.Handler {
		return s.as.RequireScopes(h, authserver.ScopeHub)
	}
	hubs := HubFunc(s.Hub)
	mount := func(make func(HubFunc) http.Handler, what string) http.Handler {
		if make == nil {
			return api(notServed(what))
		}
		return api(make(hubs))
	}
	push := mount(s.cfg.Push, "the push and status API")
	mux.Handle("/api/push/", push)
	mux.Handle("/api/status", push)
	inbox := mount(s.cfg.Inbox, "the inbox API")
	mux.Handle("/api/inbox", inbox)
	mux.Handle("/api/inbox/", inbox)
	// The rest of /api/ is the dashboard's: the console's JSON API, behind
	// the person's session cookie and CSRF token (engine/dashboard).

	mux.HandleFunc(mcpserver.HealthPath, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc(mcpserver.ReadyPath, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		if s.cfg.Ready != nil {
			if err := s.cfg.Ready(r.Context()); err != nil {
				http.Error(w, "not ready: "+err.Error(), http.StatusServiceUnavailable)
				return
			}
		}
		fmt.Fprintln(w, "ready")
	})
	if s.cfg.Dashboard != nil {
		mux.Handle("/", s.cfg.Dashboard(hubs))
	} else {
		mux.Handle("/", notServed("the dashboard"))
	}
	return mux
}

func notServed(what string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, what+" is not served by this hub", http.StatusNotImplemented)
	})
}

// serveMCP hands a request with a valid "mcp" token to its tenant's MCP
// server: the tenant is the token's.
func (s *Server) serveMCP(w http.ResponseWriter, r *http.Request) {
	ti := auth.TokenInfoFromContext(r.Context())
	if ti == nil || ti.UserID == "" {
		s.as.Challenge(w, "invalid_token")
		return
	}
	t, err := s.acquire(r.Context(), ti.UserID)
	if err != nil {
		if r.Context().Err() == nil {
			s.log.Error("serving a tenant's MCP endpoint", "tenant", ti.UserID, "err", err)
		}
		http.Error(w, "the hub cannot be opened now; try again shortly", http.StatusServiceUnavailable)
		return
	}
	defer s.release(t)
	t.serve.ServeHTTP(w, r)
}
