// Package authserver is the hosted hub's OAuth 2.1 authorization server for
// MCP clients (claude.ai and ChatGPT connectors, the TypeScript SDK's OAuth
// provider): protected resource metadata (RFC 9728), authorization server
// metadata (RFC 8414), dynamic client registration (RFC 7591), the
// authorization code grant with PKCE S256 only, resource indicators bound
// into every grant (RFC 8707), refresh token rotation with reuse detection,
// revocation (RFC 7009), and Verify for the MCP endpoint.
//
// Tokens are opaque: 32 random bytes, of which only the SHA-256 is stored.
// Every use has to consult the store anyway (revocation, a refresh family
// revoked on reuse), so a self-contained JWT would save nothing and would
// add signing keys to manage and rotate; and a leaked database holds no
// usable token.
package authserver

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// Paths the Handler serves, relative to the issuer.
const (
	PathAuthorize   = "/authorize"
	PathToken       = "/token"
	PathRegister    = "/register"
	PathRevoke      = "/revoke"
	PathASMetadata  = "/.well-known/oauth-authorization-server"
	PathPRMetadata  = "/.well-known/oauth-protected-resource"
	accessPrefix    = "cap_at_"
	refreshPrefix   = "cap_rt_"
	codePrefix      = "cap_ac_"
	maxRequestBytes = 64 << 10
)

// Config configures a Server.
type Config struct {
	// Issuer is the public base URL, https (or http on loopback for tests),
	// with no path, query or fragment: "https://hub.example.com".
	Issuer string
	// Resource is the protected resource, normally Issuer+"/mcp".
	Resource string
	// Scopes the server grants; a request for others is refused, and a
	// request naming none is granted DefaultScopes.
	Scopes []string
	// DefaultScopes are granted to a request that names no scope; nil
	// grants all of Scopes. Each must be one of Scopes.
	DefaultScopes []string
	// ScopeText says in plain words, for the consent page, what each scope
	// allows; a scope without one is shown by its name. Nil takes
	// DefaultScopeText.
	ScopeText map[string]string
	Store     Store
	// Person says who is signed in (the tenant), from the request's session.
	Person func(r *http.Request) (tenant string, ok bool)
	// Display, when set, names the signed-in person on the consent page
	// (their email or name); without it, the page shows the tenant id.
	Display func(r *http.Request) string
	// SignIn is called when no person is signed in at /authorize; it
	// should send the browser to the identity provider and back to
	// r.URL. Without it, /authorize answers 401.
	SignIn func(w http.ResponseWriter, r *http.Request)
	// Consent renders the consent page; nil uses a minimal built-in one.
	Consent Consent
	// CSRFKey signs consent forms; at least 32 bytes. Nil draws a random one
	// (then a form outlives no restart, and several replicas need one key).
	CSRFKey []byte
	// Lifetimes; zero takes the defaults (60s, 1h, 30 days, 10 minutes).
	CodeTTL, AccessTTL, RefreshTTL, ConsentTTL time.Duration
	// MetadataClient fetches client ID metadata documents (a client_id
	// that is an https URL, draft-ietf-oauth-client-id-metadata-document).
	// Nil turns them off. Give it a client that reaches only public
	// addresses (engine/egress): the URL is chosen by whoever calls.
	MetadataClient *http.Client
	// RegisterLimit bounds dynamic client registration per client address
	// and overall; a zero field takes DefaultRegisterLimit's.
	RegisterLimit RegisterLimit
	// TrustedProxies are the peers (reverse proxies) whose X-Forwarded-For
	// names the client address, for RegisterLimit: its last address, the
	// one the proxy saw. Nil takes DefaultTrustedProxies (loopback); an
	// empty slice trusts no peer. From any other peer the header is ignored.
	TrustedProxies []netip.Prefix
	// Now is the clock; nil is time.Now.
	Now    func() time.Time
	Logger *slog.Logger
}

// Grant is what a valid access token grants.
type Grant struct {
	Tenant   string
	ClientID string
	Resource string
	Scopes   []string
	Expires  time.Time
}

// ErrInvalidToken is returned by Verify for any unusable token (unknown,
// expired, revoked, or for another resource); it wraps go-sdk's
// auth.ErrInvalidToken so auth.RequireBearerToken answers 401.
var ErrInvalidToken = fmt.Errorf("authserver: %w", auth.ErrInvalidToken)

// Server is the authorization server.
type Server struct {
	c      Config
	issuer *url.URL
	mux    *http.ServeMux
	// regLimit limits POST /register.
	regLimit *registerLimiter
}

// New checks cfg and returns a Server.
func New(cfg Config) (*Server, error) {
	u, err := url.Parse(cfg.Issuer)
	if err != nil || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("configuring authserver: issuer %q must be a base URL like https://hub.example.com", cfg.Issuer)
	}
	if err := checkRedirectURI(cfg.Issuer); err != nil {
		return nil, fmt.Errorf("configuring authserver: issuer: %w", err)
	}
	cfg.Issuer = strings.TrimSuffix(cfg.Issuer, "/")
	if cfg.Resource == "" {
		cfg.Resource = cfg.Issuer + "/mcp"
	}
	if !strings.HasPrefix(cfg.Resource, cfg.Issuer+"/") {
		return nil, fmt.Errorf("configuring authserver: resource %q must be under the issuer %q", cfg.Resource, cfg.Issuer)
	}
	if cfg.Store == nil || cfg.Person == nil {
		return nil, errors.New("configuring authserver: Store and Person are required")
	}
	if cfg.CSRFKey == nil {
		cfg.CSRFKey = make([]byte, 32)
		rand.Read(cfg.CSRFKey)
	}
	if len(cfg.CSRFKey) < 32 {
		return nil, errors.New("configuring authserver: CSRFKey must be at least 32 bytes")
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&cfg.CodeTTL, time.Minute)
	def(&cfg.AccessTTL, time.Hour)
	def(&cfg.RefreshTTL, 30*24*time.Hour)
	def(&cfg.ConsentTTL, 10*time.Minute)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Consent == nil {
		cfg.Consent = builtinConsent{}
	}
	for _, d := range cfg.DefaultScopes {
		if !slices.Contains(cfg.Scopes, d) {
			return nil, fmt.Errorf("configuring authserver: default scope %q is not one of Scopes (%s)", d, strings.Join(cfg.Scopes, " "))
		}
	}
	if cfg.ScopeText == nil {
		cfg.ScopeText = DefaultScopeText
	}
	if err := cfg.RegisterLimit.fill(); err != nil {
		return nil, err
	}
	if cfg.TrustedProxies == nil {
		cfg.TrustedProxies = DefaultTrustedProxies
	}
	s := &Server{c: cfg, issuer: u, mux: http.NewServeMux(), regLimit: newRegisterLimiter(cfg.RegisterLimit, cfg.Logger)}
	prm := auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
		Resource:               cfg.Resource,
		AuthorizationServers:   []string{cfg.Issuer},
		ScopesSupported:        cfg.Scopes,
		BearerMethodsSupported: []string{"header"},
		ResourceName:           "capabilities hub",
	})
	s.mux.Handle(PathPRMetadata, prm)
	s.mux.Handle(s.ResourceMetadataURLPath(), prm)
	s.mux.HandleFunc(PathASMetadata, s.serveASMetadata)
	s.mux.HandleFunc(PathRegister, s.serveRegister)
	s.mux.HandleFunc(PathAuthorize, s.serveAuthorize)
	s.mux.HandleFunc(PathToken, s.serveToken)
	s.mux.HandleFunc(PathRevoke, s.serveRevoke)
	return s, nil
}

// Handler serves the metadata, /register, /authorize, /token and /revoke.
func (s *Server) Handler() http.Handler { return s.mux }

// ResourceMetadataURLPath is the path of the protected resource metadata
// for the resource (RFC 9728 §3.1: the well-known prefix, then its path).
func (s *Server) ResourceMetadataURLPath() string {
	return PathPRMetadata + strings.TrimPrefix(s.c.Resource, s.c.Issuer)
}

// ResourceMetadataURL is the absolute URL of the resource's metadata.
func (s *Server) ResourceMetadataURL() string {
	return s.c.Issuer + s.ResourceMetadataURLPath()
}

// Challenge answers 401 with WWW-Authenticate: Bearer resource_metadata=…
// (RFC 9728 §5.1), for a request to the resource without a usable token.
func (s *Server) Challenge(w http.ResponseWriter, errCode string) {
	v := fmt.Sprintf("Bearer resource_metadata=%q", s.ResourceMetadataURL())
	if errCode != "" {
		v += fmt.Sprintf(", error=%q", errCode)
	}
	w.Header().Set("WWW-Authenticate", v)
	http.Error(w, "unauthorized: sign in through OAuth (see the WWW-Authenticate header)", http.StatusUnauthorized)
}

// Middleware protects next with Verify for the server's resource, using
// go-sdk's auth.RequireBearerToken; the Grant's tenant is the TokenInfo's
// UserID, and the Grant itself is Extra["grant"].
func (s *Server) Middleware(next http.Handler) http.Handler {
	return auth.RequireBearerToken(s.TokenVerifier(), &auth.RequireBearerTokenOptions{
		ResourceMetadataURL: s.ResourceMetadataURL(),
	})(next)
}

// RequireScopes is Middleware that also requires every one of scopes in
// the token: a valid token without them is answered 403 (insufficient
// scope), naming them in WWW-Authenticate.
func (s *Server) RequireScopes(next http.Handler, scopes ...string) http.Handler {
	return auth.RequireBearerToken(s.TokenVerifier(), &auth.RequireBearerTokenOptions{
		ResourceMetadataURL: s.ResourceMetadataURL(),
		Scopes:              scopes,
	})(next)
}

// TokenVerifier adapts Verify to go-sdk's auth.TokenVerifier.
func (s *Server) TokenVerifier() auth.TokenVerifier {
	return func(ctx context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		g, err := s.Verify(ctx, token, s.c.Resource)
		if errors.Is(err, ErrInvalidToken) {
			return nil, err
		}
		if err != nil {
			// go-sdk answers 500 with the error's text: say nothing of
			// the store to the caller.
			s.c.Logger.Error("checking an access token", "err", err)
			return nil, errors.New("the token could not be checked now; try again shortly")
		}
		return &auth.TokenInfo{Scopes: g.Scopes, Expiration: g.Expires, UserID: g.Tenant,
			Extra: map[string]any{"grant": g}}, nil
	}
}

// Verify checks an access token for resource: known, an access token,
// not expired, not revoked (nor its family), and issued for exactly that
// resource. Any failure is ErrInvalidToken; a store failure is returned
// wrapped.
func (s *Server) Verify(ctx context.Context, bearer, resource string) (Grant, error) {
	if !strings.HasPrefix(bearer, accessPrefix) {
		return Grant{}, ErrInvalidToken
	}
	t, err := s.c.Store.Token(ctx, hashOf(bearer))
	if errors.Is(err, ErrNotFound) {
		return Grant{}, ErrInvalidToken
	}
	if err != nil {
		return Grant{}, fmt.Errorf("verifying token: %w", err)
	}
	if t.Kind != Access || t.Revoked || !s.c.Now().Before(t.Expires) || t.Resource != resource {
		return Grant{}, ErrInvalidToken
	}
	return Grant{Tenant: t.Tenant, ClientID: t.ClientID, Resource: t.Resource,
		Scopes: strings.Fields(t.Scope), Expires: t.Expires}, nil
}

func (s *Server) serveASMetadata(w http.ResponseWriter, r *http.Request) {
	cors(w)
	if r.Method == http.MethodOptions {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"issuer":                                         s.c.Issuer,
		"authorization_endpoint":                         s.c.Issuer + PathAuthorize,
		"token_endpoint":                                 s.c.Issuer + PathToken,
		"registration_endpoint":                          s.c.Issuer + PathRegister,
		"revocation_endpoint":                            s.c.Issuer + PathRevoke,
		"scopes_supported":                               s.c.Scopes,
		"response_types_supported":                       []string{"code"},
		"response_modes_supported":                       []string{"query"},
		"grant_types_supported":                          []string{"authorization_code", "refresh_token"},
		"token_endpoint_auth_methods_supported":          authMethods,
		"revocation_endpoint_auth_methods_supported":     authMethods,
		"code_challenge_methods_supported":               []string{"S256"},
		"authorization_response_iss_parameter_supported": true,
		"client_id_metadata_document_supported":          s.c.MetadataClient != nil,
	})
}

var authMethods = []string{"none", "client_secret_basic", "client_secret_post"}

// ---- helpers ----

func (s *Server) serverError(w http.ResponseWriter, what string, err error) {
	s.c.Logger.Error("oauth "+what, "err", err)
	oauthError(w, http.StatusInternalServerError, "server_error", what+" failed")
}

func oauthError(w http.ResponseWriter, status int, code, desc string) {
	writeJSON(w, status, map[string]string{"error": code, "error_description": desc})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func cors(w http.ResponseWriter) {
	// Public endpoints with no cookies: browser-based MCP clients call them.
	w.Header().Set("Access-Control-Allow-Origin", "*")
	w.Header().Set("Access-Control-Allow-Methods", "GET, POST, OPTIONS")
	w.Header().Set("Access-Control-Allow-Headers", "Authorization, Content-Type, MCP-Protocol-Version")
}

func random(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

func hashOf(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func isBase64URL(s string) bool {
	for _, r := range s {
		if !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}
