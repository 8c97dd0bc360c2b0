package console

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// CSRFHeader carries the session's CSRF token on every request that is not
// a GET or HEAD.
const CSRFHeader = "X-CSRF-Token"

// TokenParam is the query parameter of the one-time link.
const TokenParam = "token"

// DefaultLifetime is how long a page works when GuardOptions.Expires is
// zero.
const DefaultLifetime = 24 * time.Hour

// GuardOptions configure a Guard. The zero value is useful.
type GuardOptions struct {
	// Expires is when the page stops working, its links and sessions alike:
	// a page about one run passes the expiry of the run's pending calls.
	// Zero: DefaultLifetime after NewGuard.
	Expires time.Time
	// Now is the clock (time.Now).
	Now    func() time.Time
	Logger *slog.Logger
	// Links, when set, makes the page's one-time links valid on every
	// process that shares it (a database store): a link is signed with the
	// hub's page key and spent once across all of them. Nil: links live in
	// this Guard's memory only.
	Links Links
}

// Links keeps what one-time links need across processes
// (store/postgres.Store): the hub's key called name, made once for every
// process, and Spend, true only the first time a token is spent anywhere.
type Links interface {
	Key(ctx context.Context, name string, size int) (key []byte, created bool, err error)
	Spend(ctx context.Context, purpose, id string, expires time.Time) (bool, error)
}

// PageKeyName is the name of the key that signs shared links.
const PageKeyName = "page-key"

// linkPurpose names spent links in Links.Spend.
const linkPurpose = "page-link"

// Guard serves a console on loopback to the person who opened its link,
// and refuses everyone else:
//
//   - the peer must be a loopback address, the Host header exactly the
//     listener's address (DNS rebinding), and an Origin header, when sent,
//     the page's own (cross-origin requests are also refused by
//     http.CrossOriginProtection); a request another page made
//     (Sec-Fetch-Site same-site or cross-site: a page on another loopback
//     port is same-site) is refused, even a GET;
//   - a one-time link (Link) opens the page: its token is exchanged at once
//     for an HttpOnly, SameSite=Strict session cookie and cannot be used
//     twice; every other request needs that cookie;
//   - every request that is not a GET or HEAD carries the session's CSRF
//     token in X-CSRF-Token;
//   - the page stops working at its expiry.
type Guard struct {
	next   http.Handler
	addr   string // host:port, the only Host accepted
	origin string // http://addr
	cookie string // the session cookie's name (per port: cookies ignore ports)
	opts   GuardOptions
	log    *slog.Logger
	cop    *http.CrossOriginProtection

	pageKey []byte // with opts.Links: signs shared links

	mu       sync.Mutex
	links    map[[32]byte]*link // by SHA-256 of the token
	sessions map[[32]byte]*guardSession
}

type link struct {
	used bool
}

// guardSession is one browser's session: what the cookie opens.
type guardSession struct {
	csrf    string
	expires time.Time
}

type sessionKey struct{}

func sessionFrom(ctx context.Context) *guardSession {
	s, _ := ctx.Value(sessionKey{}).(*guardSession)
	return s
}

// NewGuard wraps next for the listener at addr, a loopback IP and port
// ("127.0.0.1:4791"; see Listen).
func NewGuard(next http.Handler, addr string, opts GuardOptions) (*Guard, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("guarding the console: address %q: %w", addr, err)
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("guarding the console: %q is not a loopback IP address; the console is served on loopback only", host)
	}
	if p, err := strconv.Atoi(port); err != nil || p <= 0 || p > 65535 {
		return nil, fmt.Errorf("guarding the console: port %q: give the listener's port", port)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Expires.IsZero() {
		opts.Expires = opts.Now().Add(DefaultLifetime)
	}
	g := &Guard{
		next:     next,
		addr:     net.JoinHostPort(ip.String(), port),
		cookie:   "capabilities_console_" + port,
		opts:     opts,
		log:      opts.Logger,
		cop:      http.NewCrossOriginProtection(),
		links:    map[[32]byte]*link{},
		sessions: map[[32]byte]*guardSession{},
	}
	g.origin = "http://" + g.addr
	if g.log == nil {
		g.log = slog.New(slog.DiscardHandler)
	}
	if opts.Links != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		key, _, err := opts.Links.Key(ctx, PageKeyName, 32)
		if err != nil {
			return nil, fmt.Errorf("guarding the console: %w", err)
		}
		g.pageKey = key
	}
	return g, nil
}

// Origin is the page's origin, http://127.0.0.1:PORT.
func (g *Guard) Origin() string { return g.origin }

// Expires is when the page stops working.
func (g *Guard) Expires() time.Time { return g.opts.Expires }

// Link makes a new one-time link that opens the page. Give it to the person
// only: whoever opens it first gets the session.
func (g *Guard) Link() (string, error) {
	tok, err := randomToken()
	if err != nil {
		return "", fmt.Errorf("making a console link: %w", err)
	}
	if g.pageKey != nil {
		tok = g.signLink(tok, g.opts.Expires)
		return g.origin + "/?" + TokenParam + "=" + url.QueryEscape(tok), nil
	}
	g.mu.Lock()
	g.links[sha256.Sum256([]byte(tok))] = &link{}
	g.mu.Unlock()
	return g.origin + "/?" + TokenParam + "=" + url.QueryEscape(tok), nil
}

func randomToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// ServeHTTP checks the request, then serves it with its session.
func (g *Guard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	secure(w.Header())
	switch {
	case !loopbackPeer(r.RemoteAddr):
		g.refuse(w, r, http.StatusForbidden, "not_loopback", "the console answers only this machine (a loopback address)")
		return
	case !strings.EqualFold(r.Host, g.addr):
		g.refuse(w, r, http.StatusForbidden, "bad_host", fmt.Sprintf("Host %q is not this console's address %s (DNS rebinding protection)", r.Host, g.addr))
		return
	case r.Header.Get("Origin") != "" && r.Header.Get("Origin") != g.origin:
		g.refuse(w, r, http.StatusForbidden, "bad_origin", "requests from other origins are refused")
		return
	}
	if err := g.cop.Check(r); err != nil {
		g.refuse(w, r, http.StatusForbidden, "cross_origin", "cross-origin requests are refused")
		return
	}
	// Cookies ignore ports: a page on another loopback port is same-site,
	// and the session cookie goes with its requests. Such a page could open
	// the console just as the person types, and their keys would decide
	// calls; so no other page may open the console (a link, a redirect or a
	// window of its own), nor load anything of it. Before the link is spent.
	if site := r.Header.Get("Sec-Fetch-Site"); site == "same-site" || site == "cross-site" {
		g.refuse(w, r, http.StatusForbidden, "cross_site", "the console opens only from its link pasted or opened in the browser, not from another page (which could time your key presses); paste the link into the address bar")
		return
	}
	now := g.opts.Now()
	if now.After(g.opts.Expires) {
		g.refuse(w, r, http.StatusGone, "expired", "this page expired (with the pending call it was about); run `capabilities hub console` for a new one")
		return
	}
	if r.URL.Query().Has(TokenParam) {
		g.exchange(w, r)
		return
	}
	s := g.session(r)
	if s == nil {
		g.refuse(w, r, http.StatusUnauthorized, "no_session", "open the console with the one-time link `capabilities hub console` printed")
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		got := r.Header.Get(CSRFHeader)
		if got == "" || subtle.ConstantTimeCompare([]byte(got), []byte(s.csrf)) != 1 {
			g.refuse(w, r, http.StatusForbidden, "csrf", "missing or wrong "+CSRFHeader+" header")
			return
		}
	}
	g.next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), sessionKey{}, s)))
}

// exchange spends a one-time link: it sets the session cookie and sends the
// browser on to the page, without the token in its address bar or history.
func (g *Guard) exchange(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		g.refuse(w, r, http.StatusMethodNotAllowed, "bad_request", "open the link with GET")
		return
	}
	tok := r.URL.Query().Get(TokenParam)
	key := sha256.Sum256([]byte(tok))
	var l *link
	used := false
	if g.pageKey != nil {
		var err error
		if l, used, err = g.spendShared(r.Context(), tok, key); errors.Is(err, errLinkExpired) {
			g.refuse(w, r, http.StatusGone, "expired", "this link expired; run `capabilities hub console` for a new one")
			return
		} else if err != nil {
			g.log.Warn("spending a console link", "err", err)
			g.refuse(w, r, http.StatusServiceUnavailable, "error", "the link could not be checked now (the hub's database did not answer); open it again in a moment")
			return
		}
	} else {
		g.mu.Lock()
		l = g.links[key]
		used = l != nil && l.used
		if l != nil {
			l.used = true
		}
		g.mu.Unlock()
	}
	switch {
	case l == nil:
		g.refuse(w, r, http.StatusForbidden, "bad_token", "this link is not valid for this console")
		return
	case used:
		g.refuse(w, r, http.StatusForbidden, "token_used", "this link was already used once and cannot open the page again; run `capabilities hub console` for a new one")
		return
	}
	id, err1 := randomToken()
	csrf, err2 := randomToken()
	if err1 != nil || err2 != nil {
		g.refuse(w, r, http.StatusInternalServerError, "error", "could not make a session")
		return
	}
	s := &guardSession{csrf: csrf, expires: g.opts.Expires}
	g.mu.Lock()
	g.sessions[sha256.Sum256([]byte(id))] = s
	g.mu.Unlock()
	http.SetCookie(w, &http.Cookie{
		Name:     g.cookie,
		Value:    id,
		Path:     "/",
		Expires:  s.expires,
		HttpOnly: true,
		SameSite: http.SameSiteStrictMode,
	})
	g.log.Info("console opened")
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// signLink makes a shared link's token: a random nonce and the expiry,
// with an HMAC of both under the hub's page key, so that any process
// holding the key accepts it.
func (g *Guard) signLink(nonce string, exp time.Time) string {
	body := nonce + "." + strconv.FormatInt(exp.Unix(), 10)
	return body + "." + base64.RawURLEncoding.EncodeToString(g.linkMAC(body))
}

func (g *Guard) linkMAC(body string) []byte {
	m := hmac.New(sha256.New, g.pageKey)
	m.Write([]byte("capabilities.sh console link\x00" + body))
	return m.Sum(nil)
}

// errLinkExpired: a shared link of this hub whose time has passed.
var errLinkExpired = errors.New("the link expired")

// spendShared checks a shared link's signature and expiry and spends it
// once across every process: nil when it is not a link of this hub,
// errLinkExpired when it is one past its time, used when it was spent
// already.
func (g *Guard) spendShared(ctx context.Context, tok string, key [32]byte) (l *link, used bool, err error) {
	i := strings.LastIndexByte(tok, '.')
	if i < 0 {
		return nil, false, nil
	}
	body, sig64 := tok[:i], tok[i+1:]
	sig, err := base64.RawURLEncoding.DecodeString(sig64)
	if err != nil || !hmac.Equal(sig, g.linkMAC(body)) {
		return nil, false, nil
	}
	_, exp64, _ := strings.Cut(body, ".")
	sec, err := strconv.ParseInt(exp64, 10, 64)
	if err != nil {
		return nil, false, nil
	}
	exp := time.Unix(sec, 0)
	if g.opts.Now().After(exp) {
		return nil, false, errLinkExpired
	}
	fresh, err := g.opts.Links.Spend(ctx, linkPurpose, hex.EncodeToString(key[:]), exp)
	if err != nil {
		return nil, false, err
	}
	return &link{used: !fresh}, !fresh, nil
}

// session is the request's session, or nil. Every cookie of the name is
// tried: a page on another loopback port can set one of the same name on
// a longer path (cookies ignore ports), which the browser sends first,
// and must not lock the person out of their console.
func (g *Guard) session(r *http.Request) *guardSession {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, c := range r.CookiesNamed(g.cookie) {
		if s := g.sessions[sha256.Sum256([]byte(c.Value))]; s != nil && c.Value != "" {
			return s
		}
	}
	return nil
}

// refuse answers a refused request: JSON under /api/, text elsewhere. What
// the request carried (a token, a cookie) is never logged.
func (g *Guard) refuse(w http.ResponseWriter, r *http.Request, status int, code, msg string) {
	g.log.Info("console request refused", "code", code, "method", r.Method, "path", r.URL.Path)
	if strings.HasPrefix(r.URL.Path, "/api/") {
		Fail(w, status, code, msg)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	fmt.Fprintln(w, msg)
}

// loopbackPeer reports whether a request's remote address is this machine.
func loopbackPeer(remote string) bool {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// withoutUserInfo drops user:password@ from a URL.
func withoutUserInfo(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(an address that does not parse)"
	}
	u.User = nil
	return u.String()
}
