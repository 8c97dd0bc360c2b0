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
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
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
	// Now is the clock; nil is time.Now.
	Now    func() time.Time
	Logger *slog.Logger
}

// Consent renders the page where the signed-in person allows or denies a
// client. The page must POST the Prompt's Fields (hidden) to Action, with
// a field "decision" set to "allow" or "deny".
type Consent interface {
	Render(w http.ResponseWriter, r *http.Request, p Prompt)
}

// Prompt is what a consent page shows and posts back.
type Prompt struct {
	Tenant string
	// Person names the signed-in person (Config.Display), "" if unknown.
	Person      string
	ClientID    string
	ClientName  string
	RedirectURI string
	Resource    string
	Scope       string
	// Allows says in plain words what each scope asked for allows, in the
	// order of Scope.
	Allows []string
	Action string
	Fields map[string]string
}

// The hosted hub's scopes: ScopeMCP is the MCP endpoint (the three tools),
// ScopeHub the person's own API (changing the hub's configuration,
// deciding pending calls).
const (
	ScopeMCP = "mcp"
	ScopeHub = "hub"
)

// DefaultScopeText is what the consent page says of the hosted hub's
// scopes.
var DefaultScopeText = map[string]string{
	ScopeMCP: "use your hub's tools through search, describe and execute (calls that change things still ask you before they run)",
	ScopeHub: "manage your hub: change its configuration (sources, policies, profiles, skills, connections and secrets pushed to it) and see and decide its pending calls, approving or denying them as you",
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
	s := &Server{c: cfg, issuer: u, mux: http.NewServeMux()}
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

// ---- registration (RFC 7591) ----

// ParseRegistration parses and checks a client registration request body
// and returns the metadata to register, defaults filled in.
func ParseRegistration(body []byte) (oauthex.ClientRegistrationMetadata, error) {
	var m oauthex.ClientRegistrationMetadata
	if err := json.Unmarshal(body, &m); err != nil {
		return m, fmt.Errorf("parsing registration: %w", err)
	}
	if len(m.RedirectURIs) == 0 || len(m.RedirectURIs) > 10 {
		return m, errors.New("redirect_uris: give between 1 and 10 redirect URIs")
	}
	for i, u := range m.RedirectURIs {
		if err := checkRedirectURI(u); err != nil {
			return m, fmt.Errorf("redirect_uris[%d]: %w", i, err)
		}
	}
	if m.TokenEndpointAuthMethod == "" {
		m.TokenEndpointAuthMethod = "client_secret_basic"
	}
	if !slices.Contains(authMethods, m.TokenEndpointAuthMethod) {
		return m, fmt.Errorf("token_endpoint_auth_method %q: use one of %s", m.TokenEndpointAuthMethod, strings.Join(authMethods, ", "))
	}
	if len(m.GrantTypes) == 0 {
		m.GrantTypes = []string{"authorization_code", "refresh_token"}
	}
	for _, g := range m.GrantTypes {
		if g != "authorization_code" && g != "refresh_token" {
			return m, fmt.Errorf("grant_types: %q is not supported (authorization_code, refresh_token)", g)
		}
	}
	if len(m.ResponseTypes) == 0 {
		m.ResponseTypes = []string{"code"}
	}
	for _, t := range m.ResponseTypes {
		if t != "code" {
			return m, fmt.Errorf("response_types: %q is not supported (code)", t)
		}
	}
	if len(m.ClientName) > 200 {
		return m, errors.New("client_name: longer than 200 characters")
	}
	for _, r := range m.ClientName {
		if r < 0x20 || r == 0x7f {
			return m, errors.New("client_name: control characters are not allowed")
		}
	}
	return m, nil
}

// checkRedirectURI accepts an absolute https URI, or http on a loopback
// host (RFC 8252 §7.3), with no fragment and no user info.
func checkRedirectURI(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("%q is not a URL: %w", s, err)
	}
	if u.Fragment != "" || strings.Contains(s, "#") {
		return fmt.Errorf("%q has a fragment", s)
	}
	if u.User != nil {
		return fmt.Errorf("%q has user info", s)
	}
	if u.Host == "" || u.Hostname() == "" {
		return fmt.Errorf("%q has no host", s)
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		if isLoopback(u.Hostname()) {
			return nil
		}
		return fmt.Errorf("%q: http is allowed only on a loopback host (127.0.0.1, [::1], localhost); use https", s)
	}
	return fmt.Errorf("%q: scheme must be https (or http on a loopback host)", s)
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (s *Server) serveRegister(w http.ResponseWriter, r *http.Request) {
	cors(w)
	if r.Method == http.MethodOptions {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if r.Method != http.MethodPost {
		oauthError(w, http.StatusMethodNotAllowed, "invalid_request", "POST a JSON client registration")
		return
	}
	body, err := readBody(w, r)
	if err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_client_metadata", err.Error())
		return
	}
	m, err := ParseRegistration(body)
	if err != nil {
		code := "invalid_client_metadata"
		if strings.HasPrefix(err.Error(), "redirect_uris") {
			code = "invalid_redirect_uri"
		}
		oauthError(w, http.StatusBadRequest, code, err.Error())
		return
	}
	c := Client{ID: "cap_client_" + random(18), AuthMethod: m.TokenEndpointAuthMethod, Name: m.ClientName,
		RedirectURIs: m.RedirectURIs, Scope: m.Scope, Created: s.c.Now()}
	resp := oauthex.ClientRegistrationResponse{ClientRegistrationMetadata: m, ClientID: c.ID, ClientIDIssuedAt: c.Created}
	if c.AuthMethod != "none" {
		resp.ClientSecret = "cap_cs_" + random(32)
		c.SecretHash = hashOf(resp.ClientSecret)
	}
	if err := s.c.Store.CreateClient(r.Context(), c); err != nil {
		s.c.Logger.Error("registering client", "err", err)
		oauthError(w, http.StatusInternalServerError, "server_error", "registering the client failed")
		return
	}
	s.c.Logger.Info("registered oauth client", "client_id", c.ID, "client_name", c.Name)
	writeJSON(w, http.StatusCreated, &resp)
}

func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRequestBytes))
	if err != nil {
		return nil, fmt.Errorf("reading the request: %w", err)
	}
	return b, nil
}

// client is a registered client, or one described by its client ID
// metadata document when the id is an https URL.
func (s *Server) client(ctx context.Context, id string) (Client, error) {
	if !strings.HasPrefix(id, "https://") {
		return s.c.Store.Client(ctx, id)
	}
	if s.c.MetadataClient == nil {
		return Client{}, ErrNotFound
	}
	c, err := s.fetchClientMetadata(ctx, id)
	if err != nil {
		s.c.Logger.Warn("client id metadata document refused", "client_id", id, "err", err)
		return Client{}, ErrNotFound
	}
	return c, nil
}

// fetchClientMetadata reads a client ID metadata document: its client_id
// must be the URL it was read from, its redirect URIs pass the same checks
// as a registration's, and the client is public (no secrets, PKCE only).
func (s *Server) fetchClientMetadata(ctx context.Context, id string) (Client, error) {
	u, err := url.Parse(id)
	if err != nil || u.Scheme != "https" || u.Path == "" || u.Path == "/" || u.Fragment != "" || u.User != nil {
		return Client{}, fmt.Errorf("client_id %q: a metadata document URL is https with a path, no fragment, no user info", id)
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, id, nil)
	if err != nil {
		return Client{}, fmt.Errorf("fetching client metadata: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := s.c.MetadataClient.Do(req)
	if err != nil {
		return Client{}, fmt.Errorf("fetching client metadata: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Client{}, fmt.Errorf("fetching client metadata: %s", resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxRequestBytes+1))
	if err != nil {
		return Client{}, fmt.Errorf("reading client metadata: %w", err)
	}
	if len(body) > maxRequestBytes {
		return Client{}, errors.New("reading client metadata: larger than 64 KiB")
	}
	var doc struct {
		ClientID   string `json:"client_id"`
		AuthMethod string `json:"token_endpoint_auth_method"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return Client{}, fmt.Errorf("parsing client metadata: %w", err)
	}
	if doc.ClientID != id {
		return Client{}, fmt.Errorf("client metadata: client_id %q is not the document's URL", doc.ClientID)
	}
	if doc.AuthMethod != "" && doc.AuthMethod != "none" {
		return Client{}, fmt.Errorf("client metadata: token_endpoint_auth_method %q: a metadata document client is public (none)", doc.AuthMethod)
	}
	m, err := ParseRegistration(body)
	if err != nil {
		return Client{}, fmt.Errorf("client metadata: %w", err)
	}
	return Client{ID: id, AuthMethod: "none", Name: m.ClientName, RedirectURIs: m.RedirectURIs, Scope: m.Scope}, nil
}

// ---- authorization ----

// authRequest is a checked /authorize request.
type authRequest struct {
	client                                         Client
	redirectURI, state, challenge, resource, scope string
}

// fields are the parameters carried through the consent form.
var consentFields = []string{"client_id", "redirect_uri", "state", "code_challenge", "code_challenge_method", "resource", "scope", "response_type"}

func (s *Server) serveAuthorize(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Content-Security-Policy", consentCSP(""))
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	if r.Method != http.MethodGet && r.Method != http.MethodPost {
		http.Error(w, "use GET (or POST from the consent page)", http.StatusMethodNotAllowed)
		return
	}
	if r.Method == http.MethodPost {
		r.Body = http.MaxBytesReader(w, r.Body, maxRequestBytes)
		if err := r.ParseForm(); err != nil {
			http.Error(w, "reading the consent form: "+err.Error(), http.StatusBadRequest)
			return
		}
	}
	q := r.URL.Query()
	if r.Method == http.MethodPost {
		q = r.PostForm
	}
	ar, redirectable, err := s.checkAuthorize(r.Context(), q)
	if err != nil {
		if !redirectable {
			// Never redirect to an unchecked URI: show the error here.
			http.Error(w, "authorization request refused: "+err.Error(), http.StatusBadRequest)
			return
		}
		s.redirectError(w, r, ar, err)
		return
	}
	tenant, ok := s.c.Person(r)
	if !ok {
		if r.Method == http.MethodGet && s.c.SignIn != nil {
			s.c.SignIn(w, r)
			return
		}
		http.Error(w, "sign in to the hub first", http.StatusUnauthorized)
		return
	}
	if r.Method == http.MethodGet {
		exp := s.c.Now().Add(s.c.ConsentTTL).Unix()
		fields := map[string]string{}
		for _, k := range consentFields {
			fields[k] = q.Get(k)
		}
		fields["redirect_uri"] = ar.redirectURI
		fields["resource"] = ar.resource
		fields["scope"] = ar.scope
		fields["expires"] = strconv.FormatInt(exp, 10)
		fields["csrf"] = s.csrf(tenant, fields)
		// Browsers apply form-action to the redirect that follows the
		// form's POST, so the client's redirect origin is allowed too.
		w.Header().Set("Content-Security-Policy", consentCSP(originOf(ar.redirectURI)))
		var allows []string
		for _, sc := range strings.Fields(ar.scope) {
			if t, ok := s.c.ScopeText[sc]; ok {
				allows = append(allows, t)
			} else {
				allows = append(allows, "scope "+sc)
			}
		}
		person := ""
		if s.c.Display != nil {
			person = s.c.Display(r)
		}
		s.c.Consent.Render(w, r, Prompt{Tenant: tenant, Person: person, ClientID: ar.client.ID, ClientName: ar.client.Name,
			RedirectURI: ar.redirectURI, Resource: ar.resource, Scope: ar.scope, Allows: allows, Action: s.c.Issuer + PathAuthorize, Fields: fields})
		return
	}
	// POST: the consent decision.
	if o := r.Header.Get("Origin"); o != "" && o != "null" && o != s.c.Issuer {
		http.Error(w, "consent refused: the form was posted from another origin", http.StatusForbidden)
		return
	}
	fields := map[string]string{}
	for _, k := range consentFields {
		fields[k] = q.Get(k)
	}
	fields["expires"] = q.Get("expires")
	exp, err := strconv.ParseInt(fields["expires"], 10, 64)
	if err != nil || !hmac.Equal([]byte(q.Get("csrf")), []byte(s.csrf(tenant, fields))) {
		http.Error(w, "consent refused: the form's CSRF token is wrong; open the client's sign-in link again", http.StatusForbidden)
		return
	}
	if s.c.Now().Unix() > exp {
		http.Error(w, "consent refused: the form expired; open the client's sign-in link again", http.StatusForbidden)
		return
	}
	if q.Get("decision") != "allow" {
		s.redirectError(w, r, ar, oauthErr{"access_denied", "the person denied access"})
		return
	}
	code := codePrefix + random(32)
	err = s.c.Store.CreateCode(r.Context(), Code{Hash: hashOf(code), ClientID: ar.client.ID, Tenant: tenant,
		RedirectURI: ar.redirectURI, Resource: ar.resource, Scope: ar.scope, Challenge: ar.challenge,
		Family: random(16), Expires: s.c.Now().Add(s.c.CodeTTL)})
	if err != nil {
		s.c.Logger.Error("storing authorization code", "err", err)
		s.redirectError(w, r, ar, oauthErr{"server_error", "storing the code failed"})
		return
	}
	s.c.Logger.Info("oauth consent given", "client_id", ar.client.ID, "tenant", tenant)
	s.redirect(w, r, ar, url.Values{"code": {code}})
}

func consentCSP(redirectOrigin string) string {
	fa := "'self'"
	if redirectOrigin != "" {
		fa += " " + redirectOrigin
	}
	return "default-src 'none'; style-src 'unsafe-inline'; form-action " + fa + "; frame-ancestors 'none'"
}

func originOf(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

type oauthErr struct{ code, desc string }

func (e oauthErr) Error() string { return e.code + ": " + e.desc }

// checkAuthorize checks the request; redirectable says the client and
// redirect URI were valid, so an error may go back to the client.
func (s *Server) checkAuthorize(ctx context.Context, q url.Values) (authRequest, bool, error) {
	var ar authRequest
	c, err := s.client(ctx, q.Get("client_id"))
	if errors.Is(err, ErrNotFound) {
		return ar, false, errors.New("unknown client_id; register the client first")
	}
	if err != nil {
		return ar, false, fmt.Errorf("looking up the client: %w", err)
	}
	ar.client = c
	ru := q.Get("redirect_uri")
	switch {
	case ru == "" && len(c.RedirectURIs) == 1:
		ru = c.RedirectURIs[0]
	case ru == "":
		return ar, false, errors.New("redirect_uri is missing and the client registered several")
	case !redirectRegistered(c.RedirectURIs, ru):
		return ar, false, fmt.Errorf("redirect_uri %q is not registered for this client", ru)
	}
	ar.redirectURI = ru
	ar.state = q.Get("state")
	if q.Get("response_type") != "code" {
		return ar, true, oauthErr{"unsupported_response_type", "response_type must be code"}
	}
	switch q.Get("code_challenge_method") {
	case "S256":
	case "":
		return ar, true, oauthErr{"invalid_request", "PKCE is required: send code_challenge with code_challenge_method=S256"}
	default:
		return ar, true, oauthErr{"invalid_request", "code_challenge_method must be S256 (plain is refused)"}
	}
	ch := q.Get("code_challenge")
	if len(ch) != 43 || !isBase64URL(ch) {
		return ar, true, oauthErr{"invalid_request", "code_challenge must be a base64url SHA-256 (43 characters)"}
	}
	ar.challenge = ch
	ar.resource = q.Get("resource")
	if ar.resource == "" || ar.resource == s.c.Resource+"/" {
		// Clients differ on the trailing slash (RFC 9728 §3.3); the grant
		// binds the canonical form.
		ar.resource = s.c.Resource
	}
	if ar.resource != s.c.Resource {
		return ar, true, oauthErr{"invalid_target", fmt.Sprintf("resource %q is not served here (%s)", ar.resource, s.c.Resource)}
	}
	scope, err := s.grantScope(q.Get("scope"))
	if err != nil {
		return ar, true, err
	}
	ar.scope = scope
	return ar, true, nil
}

func (s *Server) grantScope(req string) (string, error) {
	want := strings.Fields(req)
	if len(want) == 0 {
		if s.c.DefaultScopes != nil {
			return strings.Join(s.c.DefaultScopes, " "), nil
		}
		return strings.Join(s.c.Scopes, " "), nil
	}
	for _, w := range want {
		if !slices.Contains(s.c.Scopes, w) {
			return "", oauthErr{"invalid_scope", fmt.Sprintf("scope %q is not offered (%s)", w, strings.Join(s.c.Scopes, " "))}
		}
	}
	return strings.Join(want, " "), nil
}

// redirectRegistered compares exactly, except that a loopback IP redirect
// may use any port (RFC 8252 §7.3).
func redirectRegistered(registered []string, ru string) bool {
	if slices.Contains(registered, ru) {
		return true
	}
	u, err := url.Parse(ru)
	if err != nil || u.Scheme != "http" {
		return false
	}
	if ip := net.ParseIP(u.Hostname()); ip == nil || !ip.IsLoopback() {
		return false
	}
	for _, reg := range registered {
		v, err := url.Parse(reg)
		if err == nil && v.Scheme == "http" && v.Hostname() == u.Hostname() && v.Path == u.Path && v.RawQuery == u.RawQuery {
			return true
		}
	}
	return false
}

func (s *Server) redirectError(w http.ResponseWriter, r *http.Request, ar authRequest, err error) {
	var oe oauthErr
	if !errors.As(err, &oe) {
		oe = oauthErr{"server_error", "the authorization failed"}
	}
	s.redirect(w, r, ar, url.Values{"error": {oe.code}, "error_description": {oe.desc}})
}

func (s *Server) redirect(w http.ResponseWriter, r *http.Request, ar authRequest, v url.Values) {
	u, _ := url.Parse(ar.redirectURI) // checked at registration
	q := u.Query()
	for k, vs := range v {
		q[k] = vs
	}
	if ar.state != "" {
		q.Set("state", ar.state)
	}
	q.Set("iss", s.c.Issuer)
	u.RawQuery = q.Encode()
	http.Redirect(w, r, u.String(), http.StatusSeeOther)
}

func (s *Server) csrf(tenant string, fields map[string]string) string {
	m := hmac.New(sha256.New, s.c.CSRFKey)
	m.Write([]byte("consent\x00" + tenant))
	for _, k := range append(consentFields, "expires") {
		m.Write([]byte("\x00" + k + "=" + fields[k]))
	}
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// ---- token ----

func (s *Server) serveToken(w http.ResponseWriter, r *http.Request) {
	cors(w)
	w.Header().Set("Cache-Control", "no-store")
	if r.Method == http.MethodOptions {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if r.Method != http.MethodPost {
		oauthError(w, http.StatusMethodNotAllowed, "invalid_request", "POST a form")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxRequestBytes)
	if err := r.ParseForm(); err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_request", "reading the form: "+err.Error())
		return
	}
	c, ok := s.authenticateClient(w, r)
	if !ok {
		return
	}
	switch r.PostForm.Get("grant_type") {
	case "authorization_code":
		s.exchangeCode(w, r, c)
	case "refresh_token":
		s.refresh(w, r, c)
	default:
		oauthError(w, http.StatusBadRequest, "unsupported_grant_type", "grant_type must be authorization_code or refresh_token")
	}
}

// authenticateClient checks client credentials per the client's method.
func (s *Server) authenticateClient(w http.ResponseWriter, r *http.Request) (Client, bool) {
	id, secret, basic := r.BasicAuth()
	if basic {
		id, _ = url.QueryUnescape(id)
		secret, _ = url.QueryUnescape(secret)
	} else {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	c, err := s.client(r.Context(), id)
	if err != nil {
		if !errors.Is(err, ErrNotFound) {
			s.c.Logger.Error("looking up client", "err", err)
		}
		oauthError(w, http.StatusUnauthorized, "invalid_client", "unknown client")
		return c, false
	}
	if c.SecretHash == "" {
		return c, true
	}
	if secret == "" || subtle.ConstantTimeCompare([]byte(hashOf(secret)), []byte(c.SecretHash)) != 1 {
		oauthError(w, http.StatusUnauthorized, "invalid_client", "wrong or missing client secret")
		return c, false
	}
	return c, true
}

func (s *Server) exchangeCode(w http.ResponseWriter, r *http.Request, c Client) {
	f := r.PostForm
	code, err := s.c.Store.UseCode(r.Context(), hashOf(f.Get("code")))
	switch {
	case errors.Is(err, ErrUsed):
		// A replayed code: revoke what it granted (OAuth 2.1 §4.1.3).
		if err := s.c.Store.RevokeFamily(r.Context(), code.Family); err != nil {
			s.c.Logger.Error("revoking a replayed code's tokens", "err", err)
		}
		oauthError(w, http.StatusBadRequest, "invalid_grant", "the authorization code was already used")
		return
	case errors.Is(err, ErrNotFound):
		oauthError(w, http.StatusBadRequest, "invalid_grant", "unknown authorization code")
		return
	case err != nil:
		s.serverError(w, "using code", err)
		return
	}
	switch {
	case code.ClientID != c.ID:
		oauthError(w, http.StatusBadRequest, "invalid_grant", "the code was issued to another client")
	case !s.c.Now().Before(code.Expires):
		oauthError(w, http.StatusBadRequest, "invalid_grant", "the authorization code expired")
	case f.Get("redirect_uri") != "" && f.Get("redirect_uri") != code.RedirectURI:
		oauthError(w, http.StatusBadRequest, "invalid_grant", "redirect_uri differs from the authorization request's")
	case !sameResource(f.Get("resource"), code.Resource):
		oauthError(w, http.StatusBadRequest, "invalid_target", "resource differs from the authorization request's")
	case !pkceMatches(f.Get("code_verifier"), code.Challenge):
		oauthError(w, http.StatusBadRequest, "invalid_grant", "code_verifier does not match the code_challenge")
	default:
		s.issue(w, r, code.ClientID, code.Tenant, code.Resource, code.Scope, code.Family)
	}
}

// sameResource says a token request's resource (optional) names the grant's.
func sameResource(req, granted string) bool {
	return req == "" || req == granted || req == granted+"/"
}

func pkceMatches(verifier, challenge string) bool {
	if len(verifier) < 43 || len(verifier) > 128 {
		return false
	}
	sum := sha256.Sum256([]byte(verifier))
	return subtle.ConstantTimeCompare([]byte(base64.RawURLEncoding.EncodeToString(sum[:])), []byte(challenge)) == 1
}

func (s *Server) refresh(w http.ResponseWriter, r *http.Request, c Client) {
	f := r.PostForm
	rt := f.Get("refresh_token")
	if !strings.HasPrefix(rt, refreshPrefix) {
		oauthError(w, http.StatusBadRequest, "invalid_grant", "unknown refresh token")
		return
	}
	t, err := s.c.Store.UseRefresh(r.Context(), hashOf(rt))
	switch {
	case errors.Is(err, ErrUsed):
		if t.ClientID == c.ID {
			if err := s.c.Store.RevokeFamily(r.Context(), t.Family); err != nil {
				s.c.Logger.Error("revoking a reused refresh token's family", "err", err)
			}
			s.c.Logger.Warn("refresh token reused: grant revoked", "client_id", c.ID, "tenant", t.Tenant)
		}
		oauthError(w, http.StatusBadRequest, "invalid_grant", "the refresh token was already used; the grant is revoked, sign in again")
		return
	case errors.Is(err, ErrNotFound):
		oauthError(w, http.StatusBadRequest, "invalid_grant", "unknown refresh token")
		return
	case err != nil:
		s.serverError(w, "using refresh token", err)
		return
	}
	switch {
	case t.ClientID != c.ID:
		oauthError(w, http.StatusBadRequest, "invalid_grant", "the refresh token was issued to another client")
	case t.Revoked:
		oauthError(w, http.StatusBadRequest, "invalid_grant", "the refresh token was revoked")
	case !s.c.Now().Before(t.Expires):
		oauthError(w, http.StatusBadRequest, "invalid_grant", "the refresh token expired")
	case !sameResource(f.Get("resource"), t.Resource):
		oauthError(w, http.StatusBadRequest, "invalid_target", "resource differs from the grant's")
	default:
		scope := t.Scope
		if req := strings.Fields(f.Get("scope")); len(req) > 0 {
			have := strings.Fields(t.Scope)
			for _, x := range req {
				if !slices.Contains(have, x) {
					oauthError(w, http.StatusBadRequest, "invalid_scope", fmt.Sprintf("scope %q was not granted", x))
					return
				}
			}
			scope = strings.Join(req, " ")
		}
		s.issue(w, r, t.ClientID, t.Tenant, t.Resource, scope, t.Family)
	}
}

func (s *Server) issue(w http.ResponseWriter, r *http.Request, clientID, tenant, resource, scope, family string) {
	now := s.c.Now()
	at, rt := accessPrefix+random(32), refreshPrefix+random(32)
	err := s.c.Store.CreateTokens(r.Context(),
		Token{Hash: hashOf(at), Kind: Access, ClientID: clientID, Tenant: tenant, Resource: resource, Scope: scope, Family: family, Expires: now.Add(s.c.AccessTTL)},
		Token{Hash: hashOf(rt), Kind: Refresh, ClientID: clientID, Tenant: tenant, Resource: resource, Scope: scope, Family: family, Expires: now.Add(s.c.RefreshTTL)})
	if err != nil {
		s.serverError(w, "storing tokens", err)
		return
	}
	resp := map[string]any{"access_token": at, "token_type": "Bearer", "expires_in": int(s.c.AccessTTL.Seconds()), "refresh_token": rt}
	if scope != "" {
		resp["scope"] = scope
	}
	writeJSON(w, http.StatusOK, resp)
}

// ---- revocation (RFC 7009) ----

func (s *Server) serveRevoke(w http.ResponseWriter, r *http.Request) {
	cors(w)
	if r.Method == http.MethodOptions {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if r.Method != http.MethodPost {
		oauthError(w, http.StatusMethodNotAllowed, "invalid_request", "POST a form")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxRequestBytes)
	if err := r.ParseForm(); err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_request", "reading the form: "+err.Error())
		return
	}
	c, ok := s.authenticateClient(w, r)
	if !ok {
		return
	}
	tok := r.PostForm.Get("token")
	if tok == "" {
		oauthError(w, http.StatusBadRequest, "invalid_request", "token is missing")
		return
	}
	t, err := s.c.Store.Token(r.Context(), hashOf(tok))
	if err == nil && t.ClientID == c.ID {
		if t.Kind == Refresh {
			// Revoking a refresh token ends the grant (RFC 7009 §2.1).
			err = s.c.Store.RevokeFamily(r.Context(), t.Family)
		} else {
			err = s.c.Store.RevokeToken(r.Context(), t.Hash)
		}
	}
	if err != nil && !errors.Is(err, ErrNotFound) {
		s.serverError(w, "revoking", err)
		return
	}
	// Unknown tokens and other clients' tokens get 200 too (RFC 7009 §2.2).
	w.WriteHeader(http.StatusOK)
}

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

// ---- built-in consent page ----

type builtinConsent struct{}

var consentPage = template.Must(template.New("consent").Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>Allow {{.ClientName}}?</title>
<style>body{font:16px system-ui,sans-serif;max-width:36em;margin:3em auto;padding:0 1em}code{word-break:break-all}button{font-size:1em;margin-right:1em}</style></head>
<body><h1>Allow <em>{{if .ClientName}}{{.ClientName}}{{else}}an unnamed client{{end}}</em> to use your hub?</h1>
<p>Signed in as <strong>{{if .Person}}{{.Person}}{{else}}{{.Tenant}}{{end}}</strong>.</p>
<p>The client <code>{{.ClientID}}</code> will receive access to <code>{{.Resource}}</code>{{if .Scope}} (scope <code>{{.Scope}}</code>){{end}},
and is sent back to <code>{{.RedirectURI}}</code>.</p>
{{if .Allows}}<p>It will be able to:</p>
<ul>{{range .Allows}}<li>{{.}}</li>{{end}}</ul>
{{else}}<p>Calls that change things still ask you before they run.</p>
{{end}}
<form method="post" action="{{.Action}}">
{{range $k, $v := .Fields}}<input type="hidden" name="{{$k}}" value="{{$v}}">
{{end}}<button type="submit" name="decision" value="allow" id="allow">Allow</button>
<button type="submit" name="decision" value="deny" id="deny">Deny</button>
</form></body></html>
`))

func (builtinConsent) Render(w http.ResponseWriter, _ *http.Request, p Prompt) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := consentPage.Execute(w, p); err != nil {
		slog.Error("rendering consent page", "err", err)
	}
}
