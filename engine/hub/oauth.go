package hub

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/capabilities-sh/capabilities/engine/egress"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/oauth"
	"github.com/capabilities-sh/capabilities/engine/openapi"
	"github.com/capabilities-sh/capabilities/engine/secret"
	"github.com/capabilities-sh/capabilities/engine/source"
	"github.com/capabilities-sh/capabilities/store"
	"github.com/gofrs/flock"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// SignInRequest asks for an OAuth sign-in to an HTTP source.
type SignInRequest struct {
	Namespace  string
	Connection string // "" → "default"
	// ClientID of a client registered with the authorization server by
	// hand (and its secret, if it has one); empty: the hub registers itself
	// (dynamic client registration) or uses ClientMetadataURL.
	ClientID     string
	ClientSecret string
	// ClientMetadataURL is an https URL serving the hub's client ID
	// metadata document, used when the authorization server supports them.
	ClientMetadataURL string
	// Scopes to ask for; empty: what the server asks for.
	Scopes []string
	// Open shows the person the authorization page (the browser); tests
	// follow it with an HTTP client. Required.
	Open func(authURL string) error
	// HTTPClient reaches the authorization server (a client with a 30 s
	// timeout when nil).
	HTTPClient *http.Client
}

// SignIn runs the OAuth authorization code flow for an HTTP source and
// stores the tokens in the keychain as the connection's secret (the
// connection is marked Auth "oauth"; a connection that needed a new
// sign-in no longer does). It returns when the person has approved in the
// browser, or ctx ends: the caller bounds the wait.
func (h *Hub) SignIn(ctx context.Context, req SignInRequest) (*model.Connections, error) {
	src, err := h.Source(ctx, req.Namespace)
	if err != nil {
		return nil, fmt.Errorf("signing in: %w", err)
	}
	if src.Kind != model.KindHTTP && src.Kind != model.KindOpenAPI {
		return nil, fmt.Errorf("signing in: %s is a local command; OAuth sign-in is for remote MCP servers and OpenAPI sources (store a credential with `capabilities hub auth %s --env VAR` instead)", req.Namespace, req.Namespace)
	}
	if req.Connection == "" {
		req.Connection = DefaultConnection
	}
	if err := validConnectionName(req.Connection); err != nil {
		return nil, fmt.Errorf("signing in: %w", err)
	}
	if req.Open == nil {
		return nil, errors.New("signing in: no way to open the authorization page")
	}
	so := h.sourceOptions() // its Egress checks a hosted hub's sign-in requests too
	hc := req.HTTPClient
	if hc == nil {
		hc = so.Client(req.Namespace)
	}
	opts := oauth.Options{
		ServerURL:         src.URL,
		ClientID:          req.ClientID,
		ClientSecret:      req.ClientSecret,
		ClientMetadataURL: req.ClientMetadataURL,
		Scopes:            req.Scopes,
		Open:              req.Open,
		HTTPClient:        hc,
		Logger:            h.log,
	}
	if src.Kind == model.KindOpenAPI {
		if err := openAPIAuthServer(ctx, src, hc, so.Egress, &opts); err != nil {
			return nil, fmt.Errorf("signing in: %w", err)
		}
	} else {
		guarded, err := so.ProbeClient(src)
		if err != nil {
			return nil, fmt.Errorf("signing in: %w", err)
		}
		ch, _, err := oauth.Probe(ctx, guarded, src.URL)
		if err != nil {
			return nil, fmt.Errorf("signing in: %w", err)
		}
		opts.Challenge = &ch
	}
	tk, err := oauth.SignIn(ctx, opts)
	if err != nil {
		return nil, err
	}
	ref := req.Namespace + "/" + req.Connection
	h.rememberTokens(ref, tk)
	if err := h.Secrets().Set(ctx, ref, tk.Marshal()); err != nil {
		return nil, fmt.Errorf("signing in: storing the tokens: %w", err)
	}
	out, err := h.recordConnection(ctx, req.Namespace, req.Connection, ref, model.AuthOAuth)
	if err != nil {
		return nil, fmt.Errorf("signing in: %w", err)
	}
	return out, nil
}

// openAPIAuthServer sets the authorization server of an OpenAPI source's
// sign-in from its document: the first oauth2 scheme with an authorization
// code flow (its endpoints, relative ones resolved against the API's URL,
// and its scopes), else the first openIdConnect scheme's discovery
// document. No resource parameter is sent: such a server is not an MCP
// server and need not know RFC 8707.
func openAPIAuthServer(ctx context.Context, src *model.Source, hc *http.Client, g *egress.Guard, o *oauth.Options) error {
	var api *openapi.API
	var err error
	if g != nil {
		api, err = openapi.LoadOver(ctx, g.Transport(src.Namespace), src.Document, src.URL)
	} else {
		var docClient *http.Client
		if u, err := url.Parse(src.Document); err == nil && u.Scheme != "" && u.Host != "" {
			docClient = openapi.GuardedClient(u)
		}
		api, err = openapi.Load(ctx, docClient, src.Document, src.URL)
	}
	if err != nil {
		return err
	}
	base, err := url.Parse(src.URL)
	if err != nil {
		return fmt.Errorf("parsing the source's URL: %w", err)
	}
	abs := func(s string) string {
		u, err := url.Parse(s)
		if err != nil {
			return s
		}
		return base.ResolveReference(u).String()
	}
	var flows []string
	for _, s := range api.OAuth2 {
		if s.Flow == "authorizationCode" && s.AuthorizationURL != "" && s.TokenURL != "" {
			o.AuthServer = &oauthex.AuthServerMeta{AuthorizationEndpoint: abs(s.AuthorizationURL), TokenEndpoint: abs(s.TokenURL)}
			o.ScopesSupported = s.Scopes
			return nil
		}
		flows = append(flows, s.ID+" "+s.Flow)
	}
	for _, s := range api.OAuth2 {
		if s.OpenIDConnectURL != "" {
			asm, err := oauth.OpenIDMetadata(ctx, hc, abs(s.OpenIDConnectURL))
			if err != nil {
				return err
			}
			o.AuthServer = asm
			return nil
		}
	}
	if len(flows) == 0 {
		return fmt.Errorf("the document of %s declares no OAuth scheme (store its credential with `capabilities hub auth %s`)", src.Namespace, src.Namespace)
	}
	return fmt.Errorf("the document of %s declares no OAuth authorization code flow (it has: %s); the hub signs in only with that flow", src.Namespace, strings.Join(flows, ", "))
}

// SignInNeed is a connection that waits for a person to sign in.
type SignInNeed struct {
	Namespace  string `json:"namespace"`
	Connection string `json:"connection"`
	// Reason: "not signed in yet" (a source added as OAuth with no
	// connection) or why the tokens stopped working.
	Reason string `json:"reason"`
}

// SignInNeeded lists the connections that need a person to sign in: the
// default connection of each source added as OAuth that has none yet, and
// every OAuth connection whose refresh token was refused.
func (h *Hub) SignInNeeded(ctx context.Context) ([]SignInNeed, error) {
	recs, err := h.Sources(ctx)
	if err != nil {
		return nil, err
	}
	var out []SignInNeed
	for _, r := range recs {
		conns, err := store.Get[model.Connections](ctx, h.store, store.Connections, r.Source.Namespace)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return nil, fmt.Errorf("listing sign-ins: %w", err)
		}
		if r.Source.Auth == model.AuthOAuth && (conns == nil || len(conns.Items) == 0) {
			out = append(out, SignInNeed{Namespace: r.Source.Namespace, Connection: DefaultConnection, Reason: "not signed in yet"})
			continue
		}
		if conns == nil {
			continue
		}
		for _, c := range conns.Items {
			if c.SignIn != "" {
				out = append(out, SignInNeed{Namespace: r.Source.Namespace, Connection: c.Name, Reason: c.SignIn})
			}
		}
	}
	return out, nil
}

// oauthSources keeps one token source per OAuth connection and sign-in, so
// that a refreshed token is used by every session of this process.
type oauthSources struct {
	mu sync.Mutex
	m  map[string]*oauth.Source // namespace/connection
}

func (o *oauthSources) forget(ns string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for k := range o.m {
		if n, _, _ := cut(k); n == ns {
			delete(o.m, k)
		}
	}
}

func cut(ref string) (ns, conn string, ok bool) {
	for i := 0; i < len(ref); i++ {
		if ref[i] == '/' {
			return ref[:i], ref[i+1:], true
		}
	}
	return ref, "", false
}

// oauthSource is the token source of a connection whose stored secret is
// tk, made anew when the sign-in changed.
func (h *Hub) oauthSource(ns string, c *model.Connection, tk *oauth.Tokens) *oauth.Source {
	key := ns + "/" + c.Name
	h.oauth.mu.Lock()
	defer h.oauth.mu.Unlock()
	if s := h.oauth.m[key]; s != nil {
		if cur := s.Tokens(); cur != nil && cur.Grant == tk.Grant {
			return s
		}
	}
	if h.oauth.m == nil {
		h.oauth.m = map[string]*oauth.Source{}
	}
	st := &tokenStore{h: h, ns: ns, conn: c.Name, ref: c.SecretRef}
	so := h.sourceOptions()
	s := oauth.NewSource(tk, st, oauth.SourceOptions{
		HTTPClient: so.Client(ns), // checked by a hosted hub's Egress
		Skew:       h.opts.OAuthSkew,
		OnTokens:   func(t *oauth.Tokens) { h.rememberTokens(c.SecretRef, t) },
	})
	h.oauth.m[key] = s
	return s
}

// rememberTokens adds every secret of a token set to what is scrubbed.
func (h *Hub) rememberTokens(ref string, tk *oauth.Tokens) {
	for _, v := range tk.Secrets() {
		h.remember(ref, v)
	}
}

// tokenStore keeps a connection's tokens in the secret store, its sign-in
// state in the connection record, and serializes refreshes across the
// processes sharing the hub with a lock file.
type tokenStore struct {
	h        *Hub
	ns, conn string
	ref      string
}

func (s *tokenStore) Load(ctx context.Context) (*oauth.Tokens, error) {
	v, err := s.h.Secrets().Get(ctx, s.ref)
	if errors.Is(err, secret.ErrNotFound) {
		return nil, &oauth.SignInError{Reason: "not signed in"}
	}
	if err != nil {
		return nil, err
	}
	tk, ok := oauth.Parse(v)
	if !ok {
		return nil, &oauth.SignInError{Reason: "the connection holds no OAuth tokens"}
	}
	return tk, nil
}

func (s *tokenStore) Save(ctx context.Context, t *oauth.Tokens) error {
	s.h.rememberTokens(s.ref, t)
	return s.h.Secrets().Set(ctx, s.ref, t.Marshal())
}

// refreshLocks serializes refreshes in this process when the store is not
// a file store (tests).
var refreshLocks sync.Map // ref → *sync.Mutex

func (s *tokenStore) Lock(ctx context.Context) (func(), error) {
	f, ok := s.h.store.(*store.File)
	if !ok {
		mu, _ := refreshLocks.LoadOrStore(s.ref, &sync.Mutex{})
		mu.(*sync.Mutex).Lock()
		return mu.(*sync.Mutex).Unlock, nil
	}
	dir := filepath.Join(f.Dir(), "locks")
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) { // never the hub's own folder again, if it went away
		return nil, fmt.Errorf("locking the tokens of %s/%s: %w", s.ns, s.conn, err)
	}
	l := flock.New(filepath.Join(dir, "oauth."+s.ns+"."+s.conn+".lock"), flock.SetPermissions(0o600))
	ok, err := l.TryLockContext(ctx, 5*time.Millisecond)
	if err != nil || !ok {
		return nil, fmt.Errorf("locking the tokens of %s/%s: %w", s.ns, s.conn, errors.Join(err, ctx.Err()))
	}
	return func() { _ = l.Unlock() }, nil
}

func (s *tokenStore) SignInNeeded(ctx context.Context, reason string) error {
	err := store.UpdateJSON(ctx, s.h.store, store.Connections, s.ns, func(c *model.Connections) (*model.Connections, error) {
		if c == nil {
			return nil, fmt.Errorf("%s has no connections", s.ns)
		}
		for i := range c.Items {
			if c.Items[i].Name == s.conn {
				c.Items[i].SignIn = reason
			}
		}
		return c, nil
	})
	if err == nil {
		s.h.Invalidate()
	}
	return err
}

// signInError turns a call's failure into the ConnectionError of a
// connection that needs a new sign-in, when that is why it failed.
func signInError(ns string, cred *source.Credential, err error) *ConnectionError {
	if cred == nil || cred.OAuth == nil {
		return nil
	}
	var se *oauth.SignInError
	if !errors.As(err, &se) {
		if e := cred.OAuth.SignInErr(); e != nil {
			errors.As(e, &se)
		}
	}
	if se == nil {
		return nil
	}
	return &ConnectionError{Namespace: ns, Connection: cred.Connection, SignIn: se.Reason}
}
