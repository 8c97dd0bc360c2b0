package dashboard_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/approval"
	"github.com/capabilities-sh/capabilities/engine/console"
	"github.com/capabilities-sh/capabilities/engine/dashboard"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/google/go-cmp/cmp"
)

// TestSignInDecideResume is the dashboard's journey: a person signs in
// through the provider (redirects followed, a cookie jar), sees their
// tenant's pending call, decides it with the session's CSRF token; the
// decision is recorded with the channel dashboard and the person's tenant;
// the agent's resume makes the write exactly once.
func TestSignInDecideResume(t *testing.T) {
	s := newServer(t)
	tenant, th := s.tenant(t, "alice")
	runID := th.pending(t, `const e = await up.echo({message: "before"}); return await up.record({item: "from the dashboard"})`)

	b := s.browser(t)
	b.signIn("alice")
	var list console.Approvals
	b.getJSON("/api/approvals", &list)
	if len(list.Approvals) != 1 || list.Approvals[0].Run != runID || list.Approvals[0].Address != "up.record" {
		t.Fatalf("the dashboard's queue: %+v; want run %s's up.record", list.Approvals, runID)
	}
	call := list.Approvals[0].ID

	code, data := b.do(http.MethodPost, "/api/approvals/"+runID+"/"+call, console.Decision{Choice: model.ChoiceOnce})
	if code != http.StatusOK {
		t.Fatalf("deciding: %d %s", code, data)
	}
	var d console.Decided
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatal(err)
	}
	if d.Channel != approval.ChannelDashboard || d.Choice != model.ChoiceOnce {
		t.Fatalf("the decision's answer: %+v; want once via dashboard", d)
	}
	if n := th.upstreamCalls(t); n != 1 {
		t.Fatalf("the decision itself made a call: the upstream acted %d times, want 1 (the read)", n)
	}
	env, err := th.h.Resume(context.Background(), runID)
	if err != nil {
		t.Fatal(err)
	}
	if env.Status != string(model.RunCompleted) {
		t.Fatalf("resumed run: %s %+v", env.Status, env.Error)
	}
	if n := th.upstreamCalls(t); n != 2 {
		t.Fatalf("after the resume the upstream acted %d times, want 2 (the read, then the write once)", n)
	}
	p := th.run(t, runID).PendingItem(call)
	if p == nil || p.Decision == nil {
		t.Fatalf("the run record holds no decision: %+v", p)
	}
	if diff := cmp.Diff(model.Decision{Choice: model.ChoiceOnce, Channel: approval.ChannelDashboard, By: tenant}, *p.Decision, cmpIgnoreAt); diff != "" {
		t.Fatalf("the recorded decision (-want +got):\n%s", diff)
	}
	var runs console.Runs
	b.getJSON("/api/runs", &runs)
	if len(runs.Runs) != 1 || runs.Runs[0].ID != runID {
		t.Fatalf("the dashboard's runs: %+v", runs.Runs)
	}
	// Nothing of the session reached the hub's logs.
	for _, c := range b.c.Jar.Cookies(mustURL(t, s.srv.URL)) {
		if strings.Contains(s.logs.String(), c.Value) {
			t.Fatalf("the cookie %s is in the logs", c.Name)
		}
	}
	if strings.Contains(s.logs.String(), b.csrf) {
		t.Fatal("the CSRF token is in the logs")
	}
}

var cmpIgnoreAt = cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".At" }, cmp.Ignore())

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// apiErr is the console's refusal body.
type apiErr struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// TestRefusals is the guard as an attacker meets it, and I5 as a second
// tenant attacks: with its own valid session, every console API path aimed
// at the first tenant's run and call is answered as an unknown id would be.
// After all of them the first tenant's call is still undecided and the
// upstream untouched.
func TestRefusals(t *testing.T) {
	s := newServer(t)
	_, thA := s.tenant(t, "alice")
	_, thB := s.tenant(t, "bob")
	// Alice's arguments are long: the page reads them whole at .../args.
	runA := thA.pending(t, `return await up.record({item: "alice's " + "x".repeat(6000)})`)
	runB := thB.pending(t, `return await up.record({item: "bob's"})`)
	alice := s.browser(t)
	alice.signIn("alice")
	bob := s.browser(t)
	bob.signIn("bob")
	if alice.csrf == bob.csrf {
		t.Fatal("two sessions share a CSRF token")
	}
	var aq console.Approvals
	alice.getJSON("/api/approvals", &aq)
	if len(aq.Approvals) != 1 {
		t.Fatalf("alice's queue: %+v", aq.Approvals)
	}
	callA := aq.Approvals[0].ID
	nobody := s.browser(t)

	// An unknown run id of the same shape, for the "as unknown" answers.
	unknown := runA[:len(runA)-4] + "zzzz"
	if unknown == runA || unknown == runB {
		t.Fatal("the unknown id is a real one")
	}

	aliceCookie := func() *http.Cookie {
		for _, c := range alice.c.Jar.Cookies(mustURL(t, s.srv.URL)) {
			if c.Name == "capabilities_session" {
				return c
			}
		}
		t.Fatal("alice's browser holds no session cookie")
		return nil
	}()
	withCookie := func(value string) func(*http.Request) {
		return func(r *http.Request) {
			r.AddCookie(&http.Cookie{Name: "capabilities_session", Value: value})
		}
	}
	id64, _, _ := strings.Cut(aliceCookie.Value, ".")
	forgedMAC := id64 + "." + base64.RawURLEncoding.EncodeToString(make([]byte, 32))
	forgedID := base64.RawURLEncoding.EncodeToString([]byte("made-up-session")) + "." + base64.RawURLEncoding.EncodeToString(make([]byte, 32))
	header := func(k, v string) func(*http.Request) { return func(r *http.Request) { r.Header.Set(k, v) } }
	host := func(h string) func(*http.Request) { return func(r *http.Request) { r.Host = h } }

	decide := console.Decision{Choice: model.ChoiceOnce}
	for _, tt := range []struct {
		name   string
		b      *browser
		method string
		path   string
		mods   []func(*http.Request)
		status int
		code   string
	}{
		{"no session: the queue", nobody, "GET", "/api/approvals", nil, 401, "no_session"},
		{"no session: a decision", nobody, "POST", "/api/approvals/" + runA + "/" + callA, nil, 401, "no_session"},
		{"forged cookie: another MAC", nobody, "GET", "/api/approvals", []func(*http.Request){withCookie(forgedMAC)}, 401, "no_session"},
		{"forged cookie: a made-up session", nobody, "POST", "/api/approvals/" + runA + "/" + callA, []func(*http.Request){withCookie(forgedID), header(console.CSRFHeader, alice.csrf)}, 401, "no_session"},
		{"wrong Host", alice, "GET", "/api/approvals", []func(*http.Request){host("evil.example:80")}, 403, "bad_host"},
		{"wrong Host: a rebinding name on the port", alice, "POST", "/api/approvals/" + runA + "/" + callA, []func(*http.Request){host("rebind.example" + s.srv.URL[strings.LastIndex(s.srv.URL, ":"):])}, 403, "bad_host"},
		{"foreign Origin", alice, "POST", "/api/approvals/" + runA + "/" + callA, []func(*http.Request){header("Origin", "https://evil.example")}, 403, "bad_origin"},
		{"foreign Origin on a GET", alice, "GET", "/api/approvals", []func(*http.Request){header("Origin", "null")}, 403, "bad_origin"},
		{"cross-site fetch", alice, "GET", "/api/approvals", []func(*http.Request){header("Sec-Fetch-Site", "cross-site")}, 403, "cross_site"},
		{"same-site fetch", alice, "POST", "/api/approvals/" + runA + "/" + callA, []func(*http.Request){header("Sec-Fetch-Site", "same-site")}, 403, "cross_site"},
		{"missing CSRF", alice, "POST", "/api/approvals/" + runA + "/" + callA, []func(*http.Request){func(r *http.Request) { r.Header.Del(console.CSRFHeader) }}, 403, "csrf"},
		{"another session's CSRF", alice, "POST", "/api/approvals/" + runA + "/" + callA, []func(*http.Request){header(console.CSRFHeader, bob.csrf)}, 403, "csrf"},
		{"CSRF in the query, not the header", alice, "POST", "/api/approvals/" + runA + "/" + callA + "?csrf_token=" + url.QueryEscape(alice.csrf), []func(*http.Request){func(r *http.Request) { r.Header.Del(console.CSRFHeader) }}, 403, "csrf"},
		{"import from this machine's folders", alice, "POST", "/api/import", nil, 403, "not_hosted"},
		{"a source's OAuth sign-in", alice, "POST", "/api/signin", nil, 403, "not_hosted"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var body any
			if tt.method == "POST" {
				body = decide
			}
			code, data := tt.b.do(tt.method, tt.path, body, tt.mods...)
			var e apiErr
			_ = json.Unmarshal(data, &e)
			if code != tt.status || e.Error.Code != tt.code {
				t.Fatalf("%s %s: %d %s; want %d %s", tt.method, tt.path, code, data, tt.status, tt.code)
			}
		})
	}

	// I5: bob's own session aimed at alice's ids is answered as an id that
	// does not exist.
	for _, tt := range []struct {
		name, method, path string
	}{
		{"decide", "POST", "/api/approvals/{run}/" + callA},
		{"full arguments", "GET", "/api/approvals/{run}/" + callA + "/args"},
		{"run detail", "GET", "/api/runs/{run}"},
		{"resume", "POST", "/api/runs/{run}/resume"},
		{"cancel", "POST", "/api/runs/{run}/cancel"},
	} {
		t.Run("tenant B: "+tt.name, func(t *testing.T) {
			var body any
			if tt.method == "POST" {
				body = decide
			}
			code, data := bob.do(tt.method, strings.ReplaceAll(tt.path, "{run}", runA), body)
			ucode, udata := bob.do(tt.method, strings.ReplaceAll(tt.path, "{run}", unknown), body)
			got := strings.ReplaceAll(string(data), runA, "ID")
			want := strings.ReplaceAll(string(udata), unknown, "ID")
			if code != http.StatusNotFound || code != ucode || got != want {
				t.Fatalf("alice's run: %d %s\nan unknown run: %d %s\nwant both 404, the same answer", code, data, ucode, udata)
			}
		})
	}
	var bq console.Approvals
	bob.getJSON("/api/approvals", &bq)
	if len(bq.Approvals) != 1 || bq.Approvals[0].Run != runB {
		t.Fatalf("bob's queue: %+v; want only his run %s", bq.Approvals, runB)
	}
	var bruns console.Runs
	bob.getJSON("/api/runs", &bruns)
	for _, r := range bruns.Runs {
		if r.ID == runA {
			t.Fatalf("bob's runs list alice's run %s", runA)
		}
	}

	// Nothing of the above decided alice's call or reached her upstream.
	if p := thA.run(t, runA).PendingItem(callA); p == nil || p.Decision != nil {
		t.Fatalf("alice's call after the refusals: %+v", p)
	}
	if n := thA.upstreamCalls(t); n != 0 {
		t.Fatalf("alice's upstream acted %d times", n)
	}

	t.Run("pages", func(t *testing.T) {
		noRedirect := *nobody.c
		noRedirect.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		resp, err := noRedirect.Get(s.srv.URL + "/runs?x=1")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "/signin?return="+url.QueryEscape("/runs?x=1") {
			t.Fatalf("a page without a session: %s to %q; want a redirect to sign in", resp.Status, resp.Header.Get("Location"))
		}
		for _, h := range []string{"Content-Security-Policy", "X-Frame-Options", "Referrer-Policy"} {
			if resp.Header.Get(h) == "" {
				t.Errorf("the redirect has no %s", h)
			}
		}
		// A page opened from another site's link: a page with a link to
		// open it from here, not the screens.
		code, data := alice.do("GET", "/", nil, header("Sec-Fetch-Site", "cross-site"), header("Sec-Fetch-Mode", "navigate"))
		if code != http.StatusForbidden || !strings.Contains(string(data), `href="/"`) || strings.Contains(string(data), "app.js") {
			t.Fatalf("a page opened from another site: %d %s", code, data)
		}
		// The screens, with the console's headers.
		req, _ := http.NewRequest("GET", s.srv.URL+"/", nil)
		resp, err = alice.c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("X-Frame-Options") != "DENY" || !strings.Contains(resp.Header.Get("Content-Security-Policy"), "frame-ancestors 'none'") || resp.Header.Get("Referrer-Policy") != "no-referrer" {
			t.Fatalf("the screens: %s %v", resp.Status, resp.Header)
		}
	})

	t.Run("stdio-only screens are empty", func(t *testing.T) {
		var im console.Imports
		alice.getJSON("/api/import", &im)
		if len(im.Skills) != 0 {
			t.Fatalf("the hosted dashboard lists skills from this machine: %+v", im.Skills)
		}
		var si console.SignIns
		alice.getJSON("/api/signins", &si)
		if !si.ReadOnly {
			t.Fatalf("sign-ins: %+v; want read-only", si)
		}
	})

	// Last: the session's clock passes its end; the cookie opens nothing.
	t.Run("expired session", func(t *testing.T) {
		s.offset.Store(int64(sessionTTL + time.Minute))
		defer s.offset.Store(0)
		code, data := alice.do("GET", "/api/approvals", nil)
		var e apiErr
		_ = json.Unmarshal(data, &e)
		if code != http.StatusUnauthorized || e.Error.Code != "no_session" {
			t.Fatalf("an expired session: %d %s", code, data)
		}
		s.offset.Store(0)
		if code, data := alice.do("GET", "/api/approvals", nil); code != http.StatusUnauthorized {
			t.Fatalf("an expired session came back: %d %s", code, data)
		}
	})
}

func TestNewRefusesABadPublicURL(t *testing.T) {
	for _, u := range []string{"", "hub.example.com", "ftp://hub.example.com", "https://hub.example.com/path", "https://user@hub.example.com"} {
		if _, err := dashboard.New(dashboard.Config{PublicURL: u}); err == nil || !strings.Contains(err.Error(), "public URL") {
			t.Errorf("New with public URL %q: %v; want the public URL refused", u, err)
		}
	}
}

// BenchmarkChecks is what the dashboard adds to a request of the page: the
// Host, Origin and Sec-Fetch-Site checks, the session read from its store
// (here in memory), and the tenant's console found again. "session" is GET
// /api/session (the session read twice: the person, then the CSRF token,
// as for every POST); "asset" is GET /style.css served by the console.
func BenchmarkChecks(b *testing.B) {
	s := newServer(b)
	s.tenant(b, "dana")
	br := s.browser(b)
	br.signIn("dana")
	for _, path := range []string{"/api/session", "/style.css"} {
		name := map[string]string{"/api/session": "session", "/style.css": "asset"}[path]
		b.Run(name, func(b *testing.B) {
			req, _ := http.NewRequest(http.MethodGet, s.srv.URL+path, nil)
			for _, c := range br.c.Jar.Cookies(req.URL) {
				req.AddCookie(c)
			}
			req.Header.Set("Sec-Fetch-Site", "same-origin")
			b.ReportAllocs()
			for b.Loop() {
				w := &discard{h: http.Header{}}
				s.handler.ServeHTTP(w, req)
				if w.code != 0 && w.code != http.StatusOK {
					b.Fatalf("GET %s: %d", path, w.code)
				}
			}
		})
	}
	// The console alone, for comparison: what the dashboard adds is the
	// difference.
	_, th := s.tenant(b, "dana")
	c := console.New(th.h, console.Options{})
	b.Run("asset, console alone", func(b *testing.B) {
		req, _ := http.NewRequest(http.MethodGet, s.srv.URL+"/style.css", nil)
		b.ReportAllocs()
		for b.Loop() {
			w := &discard{h: http.Header{}}
			c.ServeHTTP(w, req)
			if w.code != 0 && w.code != http.StatusOK {
				b.Fatalf("GET /style.css: %d", w.code)
			}
		}
	})
}

type discard struct {
	h    http.Header
	code int
}

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) WriteHeader(code int)        { d.code = code }
func (d *discard) Write(p []byte) (int, error) { return len(p), nil }

// TestAccountAndSignOut: /account names the person and signs out with the
// session's CSRF token in its form; afterwards the cookie opens nothing,
// and a sign-out form without the token is refused.
func TestAccountAndSignOut(t *testing.T) {
	s := newServer(t)
	s.tenant(t, "erin")
	b := s.browser(t)
	b.signIn("erin")
	code, page := b.do(http.MethodGet, "/account", nil)
	if code != http.StatusOK || !strings.Contains(string(page), "erin@example.com") || !strings.Contains(string(page), `action="/signout"`) {
		t.Fatalf("GET /account: %d %s", code, page)
	}
	m := regexp.MustCompile(`name="csrf_token" value="([^"]+)"`).FindSubmatch(page)
	if m == nil || string(m[1]) != b.csrf {
		t.Fatalf("the account page's form does not carry the session's CSRF token:\n%s", page)
	}
	signOut := func(token string) int {
		req, _ := http.NewRequest(http.MethodPost, s.srv.URL+"/signout", strings.NewReader(url.Values{"csrf_token": {token}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		c := *b.c
		c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := signOut("not-the-token"); code != http.StatusForbidden {
		t.Fatalf("signing out without the token: %d; want 403", code)
	}
	if code, _ := b.do(http.MethodGet, "/api/approvals", nil); code != http.StatusOK {
		t.Fatalf("the session ended on a refused sign-out: %d", code)
	}
	if code := signOut(string(m[1])); code != http.StatusSeeOther {
		t.Fatalf("signing out: %d; want 303", code)
	}
	if code, data := b.do(http.MethodGet, "/api/approvals", nil); code != http.StatusUnauthorized {
		t.Fatalf("after signing out: %d %s; want 401", code, data)
	}
}
