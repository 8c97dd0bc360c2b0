// Package identity signs people in to the hosted hub through the operator's
// OpenID Connect provider: the hub stores no passwords. It is an OIDC relying
// party (authorization code flow with PKCE S256, state and nonce; the ID
// token's signature, issuer, audience and expiry checked by go-oidc), and it
// keeps a session in a signed, HttpOnly, SameSite=Lax cookie whose record
// lives behind a small Store. An account is a tenant: its id is derived from
// the provider's issuer and the person's subject, never from the email.
//
// Routes (Handler): GET /signin, GET /signin/callback, POST /signout.
// Other handlers ask Person(r) who is signed in, and protect their forms with
// CSRFToken and CheckCSRF.
package identity

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base32"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

// Account is a signed-in person. Tenant is the account's tenant id.
type Account struct {
	Tenant  string `json:"tenant"`
	Issuer  string `json:"iss"`
	Subject string `json:"sub"`
	Name    string `json:"name,omitempty"`
	Email   string `json:"email,omitempty"`
}

// Config configures a relying party.
type Config struct {
	Issuer           string // the provider's issuer URL (discovery at Issuer+"/.well-known/openid-configuration")
	ClientID         string
	ClientSecretFile string // a file holding the client secret (surrounding whitespace ignored)
	// PublicURL is the hub's public base URL; the redirect URI is
	// PublicURL+"/signin/callback". It must be https unless its host is loopback.
	PublicURL string
	// Key signs the cookies (at least 32 bytes, secret, stable across restarts).
	Key        []byte
	Store      Store         // sessions and used states; NewMemoryStore() when nil
	SessionTTL time.Duration // 12h when zero
	Scopes     []string      // besides "openid"; "profile" and "email" when nil
	HTTPClient *http.Client  // to reach the provider; http.DefaultClient when nil
	Logger     *slog.Logger
	Now        func() time.Time // for the session's clock; time.Now when nil
}

// RP is an OIDC relying party and the session keeper.
type RP struct {
	cfg      Config
	oauth    oauth2.Config
	verifier *oidc.IDTokenVerifier
	secure   bool
	store    Store
	log      *slog.Logger
	client   *http.Client
}

const (
	stateTTL       = 10 * time.Minute
	stateCookie    = "capabilities_signin"
	sessionCookie  = "capabilities_session"
	csrfField      = "csrf_token"
	csrfHeader     = "X-CSRF-Token"
	callbackPath   = "/signin/callback"
	maxReturnBytes = 2048 // an /authorize URL with its query fits; the state cookie stays under 4 KB
)

// New discovers the provider and returns a relying party.
func New(ctx context.Context, cfg Config) (*RP, error) {
	if cfg.Issuer == "" || cfg.ClientID == "" || cfg.ClientSecretFile == "" {
		return nil, errors.New("configuring sign-in: the identity provider needs an issuer URL, a client ID and a client secret file (--idp-issuer, --idp-client-id, --idp-client-secret-file)")
	}
	if len(cfg.Key) < 32 {
		return nil, fmt.Errorf("configuring sign-in: the cookie key has %d bytes; it needs at least 32", len(cfg.Key))
	}
	pub, err := url.Parse(cfg.PublicURL)
	if err != nil || pub.Host == "" || (pub.Scheme != "https" && pub.Scheme != "http") {
		return nil, fmt.Errorf("configuring sign-in: the public URL %q is not an absolute http(s) URL; give one like https://hub.example.com", cfg.PublicURL)
	}
	secure := pub.Scheme == "https"
	if !secure && !isLoopback(pub.Hostname()) {
		return nil, fmt.Errorf("configuring sign-in: the public URL %q is plain http on a non-loopback host; sessions need https", cfg.PublicURL)
	}
	secret, err := readSecret(cfg.ClientSecretFile)
	if err != nil {
		return nil, err
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = http.DefaultClient
	}
	if cfg.Store == nil {
		cfg.Store = NewMemoryStore()
	}
	if cfg.SessionTTL == 0 {
		cfg.SessionTTL = 12 * time.Hour
	}
	if cfg.Scopes == nil {
		cfg.Scopes = []string{"profile", "email"}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	provider, err := oidc.NewProvider(oidc.ClientContext(ctx, cfg.HTTPClient), cfg.Issuer)
	if err != nil {
		return nil, fmt.Errorf("discovering the identity provider %s: %w", cfg.Issuer, err)
	}
	return &RP{
		cfg: cfg,
		oauth: oauth2.Config{
			ClientID:     cfg.ClientID,
			ClientSecret: secret,
			Endpoint:     provider.Endpoint(),
			RedirectURL:  strings.TrimSuffix(cfg.PublicURL, "/") + callbackPath,
			Scopes:       append([]string{oidc.ScopeOpenID}, cfg.Scopes...),
		},
		verifier: provider.Verifier(&oidc.Config{ClientID: cfg.ClientID}),
		secure:   secure,
		store:    cfg.Store,
		log:      cfg.Logger,
		client:   cfg.HTTPClient,
	}, nil
}

func readSecret(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("reading the identity provider's client secret: %w", err)
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "", fmt.Errorf("reading the identity provider's client secret: %s is empty; put the client secret the provider gave you in it", path)
	}
	return s, nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// TenantID is the tenant of the person with this subject at this issuer:
// stable, and the same person at another provider is another tenant.
func TenantID(issuer, subject string) string {
	h := sha256.Sum256([]byte("capabilities tenant v1\x00" + issuer + "\x00" + subject))
	return "tn_" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(h[:20]))
}

// Handler serves /signin, /signin/callback and /signout.
func (p *RP) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /signin", p.signin)
	mux.HandleFunc("GET "+callbackPath, p.callback)
	mux.HandleFunc("POST /signout", p.signout)
	return mux
}

// pending is what the state cookie carries between /signin and the callback.
type pending struct {
	State    string `json:"s"`
	Nonce    string `json:"n"`
	Verifier string `json:"v"`
	Return   string `json:"r"`
	Expires  int64  `json:"e"`
}

func (p *RP) signin(w http.ResponseWriter, r *http.Request) {
	pd := pending{
		State:    random(),
		Nonce:    random(),
		Verifier: oauth2.GenerateVerifier(),
		Return:   safeReturn(r.URL.Query().Get("return")),
		Expires:  p.cfg.Now().Add(stateTTL).Unix(),
	}
	b, _ := json.Marshal(pd)
	p.setCookie(w, stateCookie, p.sign(stateCookie, string(b)), stateTTL)
	http.Redirect(w, r, p.oauth.AuthCodeURL(pd.State, oidc.Nonce(pd.Nonce), oauth2.S256ChallengeOption(pd.Verifier)), http.StatusFound)
}

func (p *RP) callback(w http.ResponseWriter, r *http.Request) {
	// The state cookie is spent whatever happens next.
	p.clearCookie(w, stateCookie)
	refuse := func(status int, why string) {
		p.log.Info("sign-in refused", "reason", why)
		http.Error(w, "signing in: "+why+"; start again at /signin", status)
	}
	q := r.URL.Query()
	if e := q.Get("error"); e != "" {
		refuse(http.StatusForbidden, fmt.Sprintf("the identity provider answered %q", e))
		return
	}
	pd, ok := p.pending(r)
	if !ok {
		refuse(http.StatusBadRequest, "no sign-in is under way in this browser, or it took too long")
		return
	}
	if subtle.ConstantTimeCompare([]byte(q.Get("state")), []byte(pd.State)) != 1 {
		refuse(http.StatusBadRequest, "the state does not match this browser's sign-in")
		return
	}
	fresh, err := p.store.UseState(r.Context(), pd.State, time.Unix(pd.Expires, 0))
	if err != nil {
		p.log.Error("sign-in: recording the state", "err", err)
		http.Error(w, "signing in: the session store failed", http.StatusInternalServerError)
		return
	}
	if !fresh {
		refuse(http.StatusBadRequest, "this sign-in was already used")
		return
	}
	ctx := oidc.ClientContext(r.Context(), p.client)
	tok, err := p.oauth.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(pd.Verifier))
	if err != nil {
		// The provider's answer stays in the operator's log, not the page.
		p.log.Warn("sign-in: exchanging the code", "err", err)
		refuse(http.StatusBadGateway, "the identity provider refused the code")
		return
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		refuse(http.StatusBadGateway, "the identity provider returned no ID token")
		return
	}
	idt, err := p.verifier.Verify(ctx, raw)
	if err != nil {
		refuse(http.StatusForbidden, fmt.Sprintf("checking the ID token: %v", err))
		return
	}
	if subtle.ConstantTimeCompare([]byte(idt.Nonce), []byte(pd.Nonce)) != 1 {
		refuse(http.StatusForbidden, "the ID token's nonce is not this sign-in's")
		return
	}
	var claims struct {
		Name  string `json:"name"`
		Email string `json:"email"`
	}
	if err := idt.Claims(&claims); err != nil {
		refuse(http.StatusBadGateway, fmt.Sprintf("reading the ID token's claims: %v", err))
		return
	}
	if idt.Subject == "" {
		refuse(http.StatusForbidden, "the ID token names no subject")
		return
	}
	acct := Account{
		Tenant:  TenantID(idt.Issuer, idt.Subject),
		Issuer:  idt.Issuer,
		Subject: idt.Subject,
		Name:    claims.Name,
		Email:   claims.Email,
	}
	// A new session id at every sign-in (no fixation); the browser's
	// previous session, if any, ends.
	if old, ok := p.session(r); ok {
		_ = p.store.DeleteSession(r.Context(), old.ID)
	}
	now := p.cfg.Now()
	s := Session{ID: random(), Account: acct, Created: now, Expires: now.Add(p.cfg.SessionTTL)}
	if err := p.store.PutSession(r.Context(), s); err != nil {
		p.log.Error("sign-in: saving the session", "err", err)
		http.Error(w, "signing in: the session store failed", http.StatusInternalServerError)
		return
	}
	p.setCookie(w, sessionCookie, p.sign(sessionCookie, s.ID), p.cfg.SessionTTL)
	p.log.Info("signed in", "tenant", acct.Tenant)
	http.Redirect(w, r, pd.Return, http.StatusSeeOther)
}

func (p *RP) signout(w http.ResponseWriter, r *http.Request) {
	if s, ok := p.session(r); ok {
		if err := p.CheckCSRF(r); err != nil {
			http.Error(w, err.Error(), http.StatusForbidden)
			return
		}
		if err := p.store.DeleteSession(r.Context(), s.ID); err != nil {
			p.log.Error("signing out: deleting the session", "err", err)
			http.Error(w, "signing out: the session store failed", http.StatusInternalServerError)
			return
		}
	}
	p.clearCookie(w, sessionCookie)
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// Person is the account signed in on r, if any.
func (p *RP) Person(r *http.Request) (Account, bool) {
	s, ok := p.session(r)
	return s.Account, ok
}

// Tenant is the tenant of the person signed in on r (the shape of
// authserver.Config.Person).
func (p *RP) Tenant(r *http.Request) (string, bool) {
	a, ok := p.Person(r)
	return a.Tenant, ok
}

// SignIn sends the browser to /signin, to come back to r's URL once signed
// in (the shape of authserver.Config.SignIn).
func (p *RP) SignIn(w http.ResponseWriter, r *http.Request) {
	http.Redirect(w, r, "/signin?return="+url.QueryEscape(r.URL.RequestURI()), http.StatusFound)
}

func (p *RP) session(r *http.Request) (Session, bool) {
	c, err := r.Cookie(p.cookieName(sessionCookie))
	if err != nil {
		return Session{}, false
	}
	id, ok := p.verify(sessionCookie, c.Value)
	if !ok {
		return Session{}, false
	}
	s, ok, err := p.store.GetSession(r.Context(), id)
	if err != nil {
		p.log.Error("reading the session", "err", err)
		return Session{}, false
	}
	if !ok {
		return Session{}, false
	}
	if !p.cfg.Now().Before(s.Expires) {
		_ = p.store.DeleteSession(r.Context(), id)
		return Session{}, false
	}
	return s, true
}

// CSRFToken is the token a form served to the person signed in on r carries
// in its csrf_token field (or a script in the X-CSRF-Token header); false
// when nobody is signed in.
func (p *RP) CSRFToken(r *http.Request) (string, bool) {
	s, ok := p.session(r)
	if !ok {
		return "", false
	}
	return p.csrf(s.ID), true
}

// CheckCSRF checks that r carries the CSRF token of the session it comes
// with (form field csrf_token or header X-CSRF-Token).
func (p *RP) CheckCSRF(r *http.Request) error {
	s, ok := p.session(r)
	if !ok {
		return errors.New("checking the form: nobody is signed in")
	}
	got := r.Header.Get(csrfHeader)
	if got == "" {
		got = r.PostFormValue(csrfField)
	}
	if got == "" || !hmac.Equal([]byte(got), []byte(p.csrf(s.ID))) {
		return errors.New("checking the form: its CSRF token is missing or not this session's; reload the page and try again")
	}
	return nil
}

func (p *RP) csrf(sessionID string) string {
	return base64.RawURLEncoding.EncodeToString(p.mac("csrf", sessionID))
}

func (p *RP) pending(r *http.Request) (pending, bool) {
	c, err := r.Cookie(p.cookieName(stateCookie))
	if err != nil {
		return pending{}, false
	}
	v, ok := p.verify(stateCookie, c.Value)
	if !ok {
		return pending{}, false
	}
	var pd pending
	if json.Unmarshal([]byte(v), &pd) != nil || pd.State == "" || pd.Nonce == "" || pd.Verifier == "" {
		return pending{}, false
	}
	if p.cfg.Now().Unix() >= pd.Expires {
		return pending{}, false
	}
	return pd, true
}

// cookieName uses the __Host- prefix over https: the browser then refuses
// the cookie from a sub-domain or without Secure.
func (p *RP) cookieName(name string) string {
	if p.secure {
		return "__Host-" + name
	}
	return name
}

func (p *RP) setCookie(w http.ResponseWriter, name, value string, ttl time.Duration) {
	http.SetCookie(w, &http.Cookie{
		Name: p.cookieName(name), Value: value, Path: "/", MaxAge: int(ttl.Seconds()),
		HttpOnly: true, Secure: p.secure, SameSite: http.SameSiteLaxMode,
	})
}

func (p *RP) clearCookie(w http.ResponseWriter, name string) {
	http.SetCookie(w, &http.Cookie{
		Name: p.cookieName(name), Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, Secure: p.secure, SameSite: http.SameSiteLaxMode,
	})
}

// sign returns value and its MAC (bound to the cookie's purpose) as
// base64url(value) "." base64url(mac).
func (p *RP) sign(purpose, value string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(value)) + "." + base64.RawURLEncoding.EncodeToString(p.mac(purpose, value))
}

func (p *RP) verify(purpose, signed string) (string, bool) {
	v64, m64, ok := strings.Cut(signed, ".")
	if !ok {
		return "", false
	}
	v, err1 := base64.RawURLEncoding.DecodeString(v64)
	m, err2 := base64.RawURLEncoding.DecodeString(m64)
	if err1 != nil || err2 != nil || !hmac.Equal(m, p.mac(purpose, string(v))) {
		return "", false
	}
	return string(v), true
}

func (p *RP) mac(purpose, value string) []byte {
	h := hmac.New(sha256.New, p.cfg.Key)
	h.Write([]byte(purpose + "\x00" + value))
	return h.Sum(nil)
}

func random() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// safeReturn keeps only a local path to return to after signing in.
func safeReturn(s string) string {
	if s == "" || len(s) > maxReturnBytes || !strings.HasPrefix(s, "/") || strings.HasPrefix(s, "//") || strings.HasPrefix(s, "/\\") || strings.ContainsAny(s, "\r\n") {
		return "/"
	}
	return s
}
