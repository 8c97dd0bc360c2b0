// Package dashboard is the hosted hub's screens for a person: the console's
// screens and JSON API (engine/console) over the signed-in person's own
// tenant hub, behind the person's sign-in (engine/identity) instead of the
// console's one-time link.
//
// Every request is checked before the console sees it:
//
//   - Host must be the public URL's host (DNS rebinding), and Origin, when
//     sent, the public URL's origin;
//   - a request another site made (Sec-Fetch-Site cross-site or same-site)
//     is refused; a page opened from another site's link (or at the end of
//     a sign-in, whose redirects began at the identity provider) gets a
//     page with a link to open the dashboard itself, so that no other site
//     can open the screens while the person types (their keys decide
//     calls);
//   - the identity session's cookie must name a signed-in person: without
//     one, a page is sent to sign in and an API call answers 401;
//   - every request that is not a GET or HEAD carries the session's CSRF
//     token in X-CSRF-Token (GET /api/session hands it to the page, as the
//     console's Guard does);
//   - the security headers of the console (CSP, X-Frame-Options DENY,
//     Referrer-Policy no-referrer, …) are on every answer.
//
// The tenant comes from the session only, never from the request: another
// tenant's run and call ids are unknown here (404, as an id that does not
// exist). Decisions are recorded with the channel "dashboard" and the
// person's tenant as who decided. What only makes sense on the person's own
// machine is off: importing skills from the agents' folders on this
// machine (GET /api/import lists none, whatever the hub's store; POST is
// refused), and signing in to a source's OAuth server (its redirect comes
// back to a loopback address).
//
// GET /account shows who is signed in and a button to sign out.
package dashboard

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/capabilities-sh/capabilities/engine/approval"
	"github.com/capabilities-sh/capabilities/engine/console"
	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/identity"
	"github.com/capabilities-sh/capabilities/engine/skill"
)

// Config configures the dashboard.
type Config struct {
	// RP signs people in and keeps their sessions; its routes (/signin…,
	// /signout) are mounted beside the dashboard by the server.
	RP *identity.RP
	// PublicURL is the hub's public base URL (https://hub.example.com): its
	// host is the only Host accepted, its origin the only Origin.
	PublicURL string
	// Hub is the tenant's hub (engine/hosted.Server.Hub). It is asked at
	// every request: a hub closed when idle and made again gets a new
	// console.
	Hub    func(ctx context.Context, tenant string) (*hub.Hub, error)
	Logger *slog.Logger
}

// csp is the console's: only the page's own scripts, styles and API, never
// framed, no string turned into HTML.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'; require-trusted-types-for 'script'; trusted-types 'none'"

// maxConsoles bounds the consoles kept; idleConsole is how long one unused
// is kept when there are more.
const (
	maxConsoles = 1024
	idleConsole = time.Hour
)

// Dashboard is the handler New returns.
type Dashboard struct {
	cfg    Config
	host   string // the public URL's host[:port]
	alt    string // the same with the scheme's default port spelled out
	origin string // scheme://host[:port]
	log    *slog.Logger
	cop    *http.CrossOriginProtection

	mu       sync.Mutex
	consoles map[string]*tenantConsole
}

// tenantConsole is one tenant's console over the hub it was made for.
type tenantConsole struct {
	hub  *hub.Hub
	h    *console.Handler
	used time.Time
}

// New returns the dashboard, to be served at "/".
func New(cfg Config) (http.Handler, error) {
	u, err := url.Parse(cfg.PublicURL)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
		return nil, fmt.Errorf("configuring the dashboard: the public URL %q is not an http(s) origin; give one like https://hub.example.com (no path)", cfg.PublicURL)
	}
	if cfg.RP == nil || cfg.Hub == nil {
		return nil, errors.New("configuring the dashboard: it needs the sign-in (RP) and the tenants' hubs (Hub)")
	}
	d := &Dashboard{
		cfg:      cfg,
		host:     strings.ToLower(u.Host),
		origin:   u.Scheme + "://" + strings.ToLower(u.Host),
		log:      cfg.Logger,
		cop:      http.NewCrossOriginProtection(),
		consoles: map[string]*tenantConsole{},
	}
	if u.Port() == "" {
		d.alt = d.host + map[string]string{"https": ":443", "http": ":80"}[u.Scheme]
	} else {
		d.alt = d.host
	}
	if d.log == nil {
		d.log = slog.New(slog.DiscardHandler)
	}
	return d, nil
}

func secure(h http.Header) {
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
}

// ServeHTTP checks the request, then serves it with the person's console.
func (d *Dashboard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	secure(w.Header())
	api := strings.HasPrefix(r.URL.Path, "/api/")
	safe := r.Method == http.MethodGet || r.Method == http.MethodHead
	host := strings.ToLower(r.Host)
	switch {
	case host != d.host && host != d.alt:
		d.refuse(w, r, http.StatusForbidden, "bad_host", fmt.Sprintf("Host %q is not this hub's (%s)", r.Host, d.host))
		return
	case r.Header.Get("Origin") != "" && r.Header.Get("Origin") != d.origin:
		d.refuse(w, r, http.StatusForbidden, "bad_origin", "requests from other origins are refused")
		return
	}
	if site := r.Header.Get("Sec-Fetch-Site"); site == "cross-site" || site == "same-site" {
		if safe && !api && r.Header.Get("Sec-Fetch-Mode") == "navigate" {
			d.interstitial(w, r)
			return
		}
		d.refuse(w, r, http.StatusForbidden, "cross_site", "requests another site makes are refused; open the dashboard at "+d.origin)
		return
	}
	if err := d.cop.Check(r); err != nil {
		d.refuse(w, r, http.StatusForbidden, "cross_origin", "cross-origin requests are refused")
		return
	}
	acct, ok := d.cfg.RP.Person(r)
	if !ok {
		if safe && !api {
			d.cfg.RP.SignIn(w, r)
			return
		}
		d.refuse(w, r, http.StatusUnauthorized, "no_session", "nobody is signed in (or the session ended): sign in at "+d.origin+"/signin and reload the page")
		return
	}
	// The CSRF token reads the session again (a query with a database
	// store): only where it is needed.
	session := r.URL.Path == "/api/session" && safe
	if !safe || session {
		csrf, ok := d.cfg.RP.CSRFToken(r)
		if !ok {
			d.refuse(w, r, http.StatusUnauthorized, "no_session", "the session ended: sign in at "+d.origin+"/signin and reload the page")
			return
		}
		if session {
			writeJSON(w, http.StatusOK, console.Session{Channel: approval.ChannelDashboard, CSRF: csrf})
			return
		}
		got := r.Header.Get(console.CSRFHeader)
		if got == "" || subtle.ConstantTimeCompare([]byte(got), []byte(csrf)) != 1 {
			d.refuse(w, r, http.StatusForbidden, "csrf", "missing or wrong "+console.CSRFHeader+" header; reload the page")
			return
		}
	}
	switch {
	case r.URL.Path == "/account" && safe:
		d.account(w, r, acct)
		return
	case r.URL.Path == "/api/import" && safe:
		// The Review screen asks what the agents' folders would import:
		// the hosted hub reads none, so nothing. Answered here, not by the
		// console, which first asks the hub for its skills folder, and a
		// hub over PostgreSQL keeps none (the console answers 500).
		writeJSON(w, http.StatusOK, console.Imports{Skills: []console.ImportSkill{}})
		return
	case r.URL.Path == "/api/import" && !safe:
		d.refuse(w, r, http.StatusForbidden, "not_hosted", "the hosted hub cannot read your agents' skills folders: import them into your own hub (`capabilities hub import`) and `capabilities hub push`")
		return
	case r.URL.Path == "/api/signin" && !safe:
		d.refuse(w, r, http.StatusForbidden, "not_hosted", "sign in to this source on your own hub (`capabilities hub auth`) and send the connection with `capabilities hub push --secrets`: the hosted dashboard cannot take an OAuth redirect back to your machine")
		return
	}
	c, err := d.console(r.Context(), acct.Tenant)
	if err != nil {
		d.log.Error("dashboard: opening the tenant's hub", "tenant", acct.Tenant, "err", err)
		d.refuse(w, r, http.StatusServiceUnavailable, "unavailable", "your hub could not be opened now; try again in a moment")
		return
	}
	if r.URL.Path == "/api/signins" && safe {
		d.readOnlySignIns(w, r, c)
		return
	}
	c.ServeHTTP(w, r)
}

// console is the tenant's console over its hub now.
func (d *Dashboard) console(ctx context.Context, tenant string) (*console.Handler, error) {
	h, err := d.cfg.Hub(ctx, tenant)
	if err != nil {
		return nil, err
	}
	if h == nil {
		return nil, errors.New("no hub")
	}
	now := time.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	if tc := d.consoles[tenant]; tc != nil && tc.hub == h {
		tc.used = now
		return tc.h, nil
	}
	if len(d.consoles) >= maxConsoles {
		d.sweep(now)
	}
	c := console.New(h, console.Options{
		Logger:  d.log.With("tenant", tenant),
		Channel: approval.ChannelDashboard,
		By:      tenant,
		// The hosted hub has no agents' folders of the person's.
		SkillFolders: func() []skill.Folder { return nil },
	})
	d.consoles[tenant] = &tenantConsole{hub: h, h: c, used: now}
	return c, nil
}

// sweep forgets the consoles unused for idleConsole, and the oldest if
// that is not enough. With d.mu held.
func (d *Dashboard) sweep(now time.Time) {
	var oldest string
	for t, tc := range d.consoles {
		if now.Sub(tc.used) > idleConsole {
			delete(d.consoles, t)
			continue
		}
		if oldest == "" || tc.used.Before(d.consoles[oldest].used) {
			oldest = t
		}
	}
	if len(d.consoles) >= maxConsoles && oldest != "" {
		delete(d.consoles, oldest)
	}
}

// readOnlySignIns is the console's GET /api/signins marked read-only: the
// page lists the connections needing a sign-in but offers no button.
func (d *Dashboard) readOnlySignIns(w http.ResponseWriter, r *http.Request, c *console.Handler) {
	rec := &recorder{header: http.Header{}, code: http.StatusOK}
	c.ServeHTTP(rec, r)
	var s console.SignIns
	if rec.code != http.StatusOK || json.Unmarshal(rec.body.Bytes(), &s) != nil {
		w.Header().Set("Content-Type", rec.header.Get("Content-Type"))
		w.WriteHeader(rec.code)
		_, _ = w.Write(rec.body.Bytes())
		return
	}
	s.ReadOnly = true
	writeJSON(w, http.StatusOK, s)
}

// accountCSP is the account page's: no script, and its one form posts to
// this origin (/signout).
const accountCSP = "default-src 'none'; style-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// account is GET /account: who is signed in, and a form to sign out
// (POST /signout with the session's CSRF token, served by engine/identity).
func (d *Dashboard) account(w http.ResponseWriter, r *http.Request, acct identity.Account) {
	csrf, ok := d.cfg.RP.CSRFToken(r)
	if !ok {
		d.cfg.RP.SignIn(w, r)
		return
	}
	who := acct.Name
	if acct.Email != "" {
		who += " <" + acct.Email + ">"
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Your account · capabilities.sh</title><link rel="stylesheet" href="/style.css"></head>
<body><main>
<h1>Your account</h1>
<p>Signed in as <strong id="who">%s</strong> at %s.</p>
<p>Your hub (tenant <code id="tenant">%s</code>) is yours alone: other accounts see none of its sources, runs or calls.</p>
<form method="post" action="/signout"><input type="hidden" name="csrf_token" value="%s"><button type="submit" id="signout">Sign out</button></form>
<p><a href="/">Back to the dashboard</a></p>
</main></body></html>
`, html.EscapeString(strings.TrimSpace(who)), html.EscapeString(acct.Issuer), html.EscapeString(acct.Tenant), html.EscapeString(csrf))
	w.Header().Set("Content-Security-Policy", accountCSP)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(b.Bytes())
}

// recorder keeps an answer to rewrite it.
type recorder struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header         { return r.header }
func (r *recorder) WriteHeader(code int)        { r.code = code }
func (r *recorder) Write(b []byte) (int, error) { return r.body.Write(b) }

// interstitial answers a page opened from another site with a link to
// open it from here: one more click, and no other site can open the
// screens while the person types.
func (d *Dashboard) interstitial(w http.ResponseWriter, r *http.Request) {
	d.log.Info("dashboard opened from another site: link page", "path", r.URL.Path)
	target := r.URL.Path
	if target == "" || !strings.HasPrefix(target, "/") || strings.HasPrefix(target, "//") {
		target = "/"
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>capabilities.sh</title></head>
<body><main>
<p>This page was opened from another site (or at the end of signing in). The dashboard opens only from itself, so that no other site can open it while you type.</p>
<p><a id="open" href="%s">Open the dashboard</a></p>
</main></body></html>
`, html.EscapeString(target))
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(http.StatusForbidden)
	_, _ = w.Write(b.Bytes())
}

// refuse answers a refused request: JSON under /api/ (the console's
// shape), text elsewhere. What the request carried (a cookie, a token) is
// never logged.
func (d *Dashboard) refuse(w http.ResponseWriter, r *http.Request, status int, code, msg string) {
	d.log.Info("dashboard request refused", "code", code, "method", r.Method, "path", r.URL.Path)
	if strings.HasPrefix(r.URL.Path, "/api/") {
		var e struct {
			Error struct {
				Code    string `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		e.Error.Code, e.Error.Message = code, msg
		writeJSON(w, status, e)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	fmt.Fprintln(w, msg)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(true)
	_ = enc.Encode(v)
}
