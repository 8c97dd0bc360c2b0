package console_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/console"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/google/go-cmp/cmp"
)

// guardAddr is the address the guard is told it listens at; requests are
// handed to it directly, so a test can forge what no real connection to a
// loopback listener could carry (a remote peer).
const guardAddr = "127.0.0.1:4791"

// page drives a Guard without a network: each request comes from
// 127.0.0.1 to Host guardAddr unless the test changes it.
type page struct {
	t *testing.T
	g *console.Guard
}

func newPage(t *testing.T, h http.Handler, opts console.GuardOptions) *page {
	t.Helper()
	g, err := console.NewGuard(h, guardAddr, opts)
	if err != nil {
		t.Fatal(err)
	}
	return &page{t: t, g: g}
}

// request is one request to the guard.
type request struct {
	method, target string
	body           any
	remote         string // default 127.0.0.1:50000
	host           string // default guardAddr
	origin         string
	fetchSite      string // Sec-Fetch-Site
	contentType    string // default application/json with a body
	cookie         *http.Cookie
	csrf           string
}

func (p *page) send(r request) *httptest.ResponseRecorder {
	p.t.Helper()
	var body *strings.Reader
	if r.body != nil {
		b, err := json.Marshal(r.body)
		if err != nil {
			p.t.Fatal(err)
		}
		body = strings.NewReader(string(b))
	} else {
		body = strings.NewReader("")
	}
	req := httptest.NewRequest(r.method, "http://"+guardAddr+r.target, body)
	req.RemoteAddr = "127.0.0.1:50000"
	if r.remote != "" {
		req.RemoteAddr = r.remote
	}
	req.Host = guardAddr
	if r.host != "" {
		req.Host = r.host
	}
	if r.origin != "" {
		req.Header.Set("Origin", r.origin)
	}
	if r.fetchSite != "" {
		req.Header.Set("Sec-Fetch-Site", r.fetchSite)
	}
	if r.body != nil {
		ct := r.contentType
		if ct == "" {
			ct = "application/json"
		}
		req.Header.Set("Content-Type", ct)
	}
	if r.cookie != nil {
		req.AddCookie(r.cookie)
	}
	if r.csrf != "" {
		req.Header.Set(console.CSRFHeader, r.csrf)
	}
	w := httptest.NewRecorder()
	p.g.ServeHTTP(w, req)
	return w
}

// login spends a fresh link and returns the link's target, the session
// cookie and the CSRF token.
func (p *page) login() (string, *http.Cookie, string) {
	p.t.Helper()
	link, err := p.g.Link()
	if err != nil {
		p.t.Fatal(err)
	}
	u, err := url.Parse(link)
	if err != nil {
		p.t.Fatal(err)
	}
	target := u.RequestURI()
	w := p.send(request{method: http.MethodGet, target: target, fetchSite: "none"})
	if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/" {
		p.t.Fatalf("opening the link: %d %s", w.Code, w.Body)
	}
	cookies := w.Result().Cookies()
	if len(cookies) != 1 {
		p.t.Fatalf("opening the link set %d cookies", len(cookies))
	}
	c := cookies[0]
	if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/" {
		p.t.Fatalf("the session cookie is not HttpOnly, SameSite=Strict, Path=/: %s", w.Header().Get("Set-Cookie"))
	}
	w = p.send(request{method: http.MethodGet, target: "/api/session", cookie: c})
	var s console.Session
	if err := json.Unmarshal(w.Body.Bytes(), &s); err != nil || s.CSRF == "" {
		p.t.Fatalf("the session: %d %s", w.Code, w.Body)
	}
	return target, c, s.CSRF
}

// answer is what a refusal test compares: the status and the error code.
type answer struct {
	Status int
	Code   string
}

func answerOf(w *httptest.ResponseRecorder) answer {
	a := answer{Status: w.Code}
	var e struct {
		Error struct{ Code string } `json:"error"`
	}
	if json.Unmarshal(w.Body.Bytes(), &e) == nil {
		a.Code = e.Error.Code
	}
	return a
}

// TestRefusals: each way in that is not the person's own page is refused,
// and nothing is decided by it. Every row but the first is one refusal the
// issue lists (or a close variant); the first shows the same request with
// everything right is served, so a refusal is not an accident of the set-up.
func TestRefusals(t *testing.T) {
	f := newFixture(t)
	runA := f.pending(t, `await up.echo({message: "a"}); return await up.record({item: "a"})`) // pending c2; c1 is its read
	runB := f.pending(t, `return await up.record({item: "b"})`)                                // pending c1
	acted := f.upstreamCalls(t)

	p := newPage(t, console.New(f.h, console.Options{}), console.GuardOptions{})
	used, cookie, csrf := p.login()
	_, _, otherCSRF := p.login() // a second session's token
	freshLink, err := p.g.Link()
	if err != nil {
		t.Fatal(err)
	}
	freshURL, err := url.Parse(freshLink)
	if err != nil {
		t.Fatal(err)
	}
	fresh := freshURL.RequestURI()
	origin := "http://" + guardAddr
	once := console.Decision{Choice: model.ChoiceOnce}
	decideA := "/api/approvals/" + runA + "/c2"

	scoped := newPage(t, console.New(f.h, console.Options{Run: runA}), console.GuardOptions{})
	_, scopedCookie, scopedCSRF := scoped.login()

	for _, tc := range []struct {
		name string
		page *page
		req  request
		want answer
	}{
		{"the page with its session is served", p, request{method: http.MethodGet, target: "/api/approvals", cookie: cookie}, answer{200, ""}},
		{"the token used a second time", p, request{method: http.MethodGet, target: used, fetchSite: "none"}, answer{403, ""}},
		{"the token used a second time, with the session too", p, request{method: http.MethodGet, target: used, cookie: cookie}, answer{403, ""}},
		{"a token the console never made", p, request{method: http.MethodGet, target: "/?token=forged"}, answer{403, ""}},
		{"no session cookie", p, request{method: http.MethodGet, target: "/api/approvals"}, answer{401, "no_session"}},
		{"a forged session cookie", p, request{method: http.MethodGet, target: "/", cookie: &http.Cookie{Name: cookie.Name, Value: "forged"}}, answer{401, ""}},
		{"a decision without the CSRF token", p, request{method: http.MethodPost, target: decideA, body: once, cookie: cookie, origin: origin}, answer{403, "csrf"}},
		{"a decision with another session's CSRF token", p, request{method: http.MethodPost, target: decideA, body: once, cookie: cookie, csrf: otherCSRF, origin: origin}, answer{403, "csrf"}},
		{"a decision with the CSRF token but no session", p, request{method: http.MethodPost, target: decideA, body: once, csrf: csrf, origin: origin}, answer{401, "no_session"}},
		{"Host: evil.example (DNS rebinding)", p, request{method: http.MethodGet, target: "/api/approvals", cookie: cookie, host: "evil.example"}, answer{403, "bad_host"}},
		{"Host: evil.example with the page's port", p, request{method: http.MethodGet, target: "/", cookie: cookie, host: "evil.example:4791"}, answer{403, ""}},
		{"a decision with Host: evil.example", p, request{method: http.MethodPost, target: decideA, body: once, cookie: cookie, csrf: csrf, host: "evil.example"}, answer{403, "bad_host"}},
		{"Host: the loopback address on another port", p, request{method: http.MethodGet, target: "/api/approvals", cookie: cookie, host: "127.0.0.1:4792"}, answer{403, "bad_host"}},
		{"Origin: http://evil.example on a decision", p, request{method: http.MethodPost, target: decideA, body: once, cookie: cookie, csrf: csrf, origin: "http://evil.example"}, answer{403, "bad_origin"}},
		{"Origin: http://evil.example on a read", p, request{method: http.MethodGet, target: "/api/approvals", cookie: cookie, origin: "http://evil.example"}, answer{403, "bad_origin"}},
		{"Origin: another loopback port", p, request{method: http.MethodPost, target: decideA, body: once, cookie: cookie, csrf: csrf, origin: "http://127.0.0.1:4792"}, answer{403, "bad_origin"}},
		{"a cross-site decision without Origin (Sec-Fetch-Site)", p, request{method: http.MethodPost, target: decideA, body: once, cookie: cookie, csrf: csrf, fetchSite: "cross-site"}, answer{403, "cross_origin"}},
		{"the page opened by a page on another loopback port (same-site: cookies ignore ports)", p, request{method: http.MethodGet, target: "/", cookie: cookie, fetchSite: "same-site"}, answer{403, ""}},
		{"the API read by a page on another loopback port", p, request{method: http.MethodGet, target: "/api/approvals", cookie: cookie, fetchSite: "same-site"}, answer{403, "cross_site"}},
		{"the page opened by another site's page", p, request{method: http.MethodGet, target: "/", cookie: cookie, fetchSite: "cross-site"}, answer{403, ""}},
		{"a fresh link opened by another page", p, request{method: http.MethodGet, target: fresh, fetchSite: "same-site"}, answer{403, ""}},
		{"that link then pasted into the address bar (not spent by the refusal)", p, request{method: http.MethodGet, target: fresh, fetchSite: "none"}, answer{303, ""}},
		{"the page from a non-loopback address", p, request{method: http.MethodGet, target: "/", cookie: cookie, remote: "192.0.2.7:50000"}, answer{403, ""}},
		{"the API from a non-loopback address", p, request{method: http.MethodGet, target: "/api/approvals", cookie: cookie, remote: "[2001:db8::7]:50000"}, answer{403, "not_loopback"}},
		{"a decision from a non-loopback address", p, request{method: http.MethodPost, target: decideA, body: once, cookie: cookie, csrf: csrf, remote: "10.0.0.2:50000"}, answer{403, "not_loopback"}},
		{"a decision for another run's call id", p, request{method: http.MethodPost, target: "/api/approvals/" + runA + "/c1", body: once, cookie: cookie, csrf: csrf, origin: origin}, answer{404, "not_found"}},
		{"a decision for another run, on a page about one run", scoped, request{method: http.MethodPost, target: "/api/approvals/" + runB + "/c1", body: once, cookie: scopedCookie, csrf: scopedCSRF, origin: origin}, answer{403, "other_run"}},
		{"another run's details, on a page about one run", scoped, request{method: http.MethodGet, target: "/api/runs/" + runB, cookie: scopedCookie}, answer{403, "other_run"}},
		{"a review accepted on a page about one run", scoped, request{method: http.MethodPost, target: "/api/review", body: console.Acceptance{}, cookie: scopedCookie, csrf: scopedCSRF, origin: origin}, answer{403, "read_only"}},
		{"settings changed on a page about one run", scoped, request{method: http.MethodPost, target: "/api/settings", body: map[string]bool{"paused": false}, cookie: scopedCookie, csrf: scopedCSRF, origin: origin}, answer{403, "read_only"}},
		{"settings changed without the CSRF token", p, request{method: http.MethodPost, target: "/api/settings", body: map[string]bool{"paused": false}, cookie: cookie, origin: origin}, answer{403, "csrf"}},
		{"a setting that is not one", p, request{method: http.MethodPost, target: "/api/settings", body: map[string]bool{"stealFocus": true}, cookie: cookie, csrf: csrf, origin: origin}, answer{400, "bad_request"}},
		{"no setting named", p, request{method: http.MethodPost, target: "/api/settings", body: map[string]bool{}, cookie: cookie, csrf: csrf, origin: origin}, answer{400, "bad_request"}},
		{"one page's session on another page", scoped, request{method: http.MethodGet, target: "/api/approvals", cookie: cookie}, answer{401, "no_session"}},
		{"a choice that is not one", p, request{method: http.MethodPost, target: decideA, body: map[string]string{"choice": "sometimes"}, cookie: cookie, csrf: csrf, origin: origin}, answer{400, "bad_choice"}},
		{"a decision sent as a form", p, request{method: http.MethodPost, target: decideA, body: once, contentType: "text/plain", cookie: cookie, csrf: csrf, origin: origin}, answer{415, "bad_request"}},
		{"a decision on a run that does not exist", p, request{method: http.MethodPost, target: "/api/approvals/r0123456789abcdef0123/c1", body: once, cookie: cookie, csrf: csrf, origin: origin}, answer{404, "not_found"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := tc.page.send(tc.req)
			got := answerOf(w)
			if tc.want.Code == "" {
				got.Code = ""
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s\nbody: %s", diff, w.Body)
			}
		})
	}
	for _, id := range []string{runA, runB} {
		r := f.run(t, id)
		for _, q := range r.Pending {
			if q.Decision != nil {
				t.Errorf("run %s: call %s was decided (%+v) by a refused request", id, q.ID, q.Decision)
			}
		}
	}
	if n := f.upstreamCalls(t); n != acted {
		t.Errorf("the upstream acted %d times during the refusals, want %d", n, acted)
	}
}

// TestExpiry: a decision after the pending call expired is refused and
// the run is expired (nothing runs); a page past its own expiry answers
// nothing, not even its link.
func TestExpiry(t *testing.T) {
	f := newFixture(t)
	runID := f.pending(t, `return await up.record({item: "late"})`)
	r := f.run(t, runID)
	expires := r.Pending[0].ExpiresAt
	if expires.IsZero() {
		t.Fatal("the pending call has no expiry")
	}
	later := func() time.Time { return expires.Add(time.Minute) }

	// The call expired; the page has not.
	p := newPage(t, console.New(f.h, console.Options{Now: later}), console.GuardOptions{})
	_, cookie, csrf := p.login()
	w := p.send(request{method: http.MethodPost, target: "/api/approvals/" + runID + "/c1", body: console.Decision{Choice: model.ChoiceOnce}, cookie: cookie, csrf: csrf, origin: "http://" + guardAddr})
	if diff := cmp.Diff(answer{410, "expired"}, answerOf(w)); diff != "" {
		t.Fatalf("a decision after expiry (-want +got):\n%s\n%s", diff, w.Body)
	}
	if r := f.run(t, runID); r.Status != model.RunExpired || r.Pending[0].Decision != nil {
		t.Fatalf("after a late decision the run is %s with %+v; want expired, undecided", r.Status, r.Pending[0].Decision)
	}
	w = p.send(request{method: http.MethodPost, target: "/api/approvals/" + runID + "/c1", body: console.Decision{Choice: model.ChoiceOnce}, cookie: cookie, csrf: csrf, origin: "http://" + guardAddr})
	if diff := cmp.Diff(answer{410, "expired"}, answerOf(w)); diff != "" {
		t.Fatalf("a decision on the expired run (-want +got):\n%s\n%s", diff, w.Body)
	}
	if n := f.upstreamCalls(t); n != 0 {
		t.Fatalf("the upstream acted %d times", n)
	}

	// The page expires with the pending call it is about.
	now := time.Now()
	clock := func() time.Time { return now }
	q := newPage(t, console.New(f.h, console.Options{}), console.GuardOptions{Expires: now.Add(time.Hour), Now: clock})
	_, cookie, _ = q.login()
	link, err := q.g.Link()
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(link)
	if w := q.send(request{method: http.MethodGet, target: "/api/approvals", cookie: cookie}); w.Code != http.StatusOK {
		t.Fatalf("before its expiry: %d %s", w.Code, w.Body)
	}
	now = now.Add(time.Hour + time.Second)
	for _, req := range []request{
		{method: http.MethodGet, target: "/api/approvals", cookie: cookie},
		{method: http.MethodGet, target: "/", cookie: cookie},
		{method: http.MethodGet, target: u.RequestURI(), fetchSite: "none"},
	} {
		if got := answerOf(q.send(req)); got.Status != http.StatusGone {
			t.Errorf("GET %s after the page's expiry: %d; want 410", req.target, got.Status)
		}
	}
}

// TestEveryResponseCarriesTheHeaders: the page, its scripts, the API and
// every refusal carry a strict Content-Security-Policy, X-Frame-Options:
// DENY and no-store.
func TestEveryResponseCarriesTheHeaders(t *testing.T) {
	f := newFixture(t)
	p := newPage(t, console.New(f.h, console.Options{}), console.GuardOptions{})
	_, cookie, _ := p.login()
	for _, req := range []request{
		{method: http.MethodGet, target: "/", cookie: cookie},
		{method: http.MethodGet, target: "/app.js", cookie: cookie},
		{method: http.MethodGet, target: "/style.css", cookie: cookie},
		{method: http.MethodGet, target: "/api/approvals", cookie: cookie},
		{method: http.MethodGet, target: "/api/sources", cookie: cookie},
		{method: http.MethodGet, target: "/api/nothing", cookie: cookie},
		{method: http.MethodGet, target: "/nothing.js", cookie: cookie},
		{method: http.MethodGet, target: "/"},
		{method: http.MethodGet, target: "/", host: "evil.example"},
		{method: http.MethodGet, target: "/?token=forged"},
	} {
		w := p.send(req)
		h := w.Header()
		got := map[string]string{
			"X-Frame-Options":        h.Get("X-Frame-Options"),
			"Cache-Control":          h.Get("Cache-Control"),
			"X-Content-Type-Options": h.Get("X-Content-Type-Options"),
			"Referrer-Policy":        h.Get("Referrer-Policy"),
		}
		want := map[string]string{"X-Frame-Options": "DENY", "Cache-Control": "no-store", "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("GET %s (%d): headers (-want +got):\n%s", req.target, w.Code, diff)
		}
		csp := h.Get("Content-Security-Policy")
		for _, d := range []string{"default-src 'none'", "script-src 'self'", "frame-ancestors 'none'", "require-trusted-types-for 'script'"} {
			if !strings.Contains(csp, d) {
				t.Errorf("GET %s: the Content-Security-Policy %q lacks %q", req.target, csp, d)
			}
		}
		if strings.Contains(csp, "unsafe-") {
			t.Errorf("GET %s: the Content-Security-Policy allows something unsafe: %q", req.target, csp)
		}
	}
	if w := p.send(request{method: http.MethodGet, target: "/app.js", cookie: cookie}); w.Header().Get("Content-Type") != "text/javascript; charset=utf-8" {
		t.Errorf("app.js is served as %q", w.Header().Get("Content-Type"))
	}
}

// TestGuardListensOnLoopbackOnly: the console refuses to listen, or to
// guard, anywhere but a loopback address.
func TestGuardListensOnLoopbackOnly(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", "192.0.2.1:0", "localhost:0", "[::]:0", "example.com:80"} {
		if ln, err := console.Listen(addr); err == nil {
			ln.Close()
			t.Errorf("Listen(%q) succeeded", addr)
		}
		if _, err := console.NewGuard(http.NotFoundHandler(), strings.Replace(addr, ":0", ":4791", 1), console.GuardOptions{}); err == nil {
			t.Errorf("NewGuard(%q) succeeded", addr)
		}
	}
	if _, err := console.NewGuard(http.NotFoundHandler(), "127.0.0.1:0", console.GuardOptions{}); err == nil {
		t.Error("NewGuard without the listener's port succeeded")
	}
}

// TestSessionCookieTossed: a page on another loopback port sets a cookie
// of the session cookie's name on a longer path (cookies ignore ports), so
// the browser sends it first; the person's own session cookie, sent after
// it, still opens the console. The tossed cookie alone opens nothing.
func TestSessionCookieTossed(t *testing.T) {
	f := newFixture(t)
	p := newPage(t, console.New(f.h, console.Options{}), console.GuardOptions{})
	_, cookie, _ := p.login()
	tossed := &http.Cookie{Name: cookie.Name, Value: "tossed"}
	for _, tc := range []struct {
		name    string
		cookies []*http.Cookie
		want    int
	}{
		{"the tossed cookie first, then the session's", []*http.Cookie{tossed, cookie}, http.StatusOK},
		{"an empty one first, then the session's", []*http.Cookie{{Name: cookie.Name, Value: ""}, cookie}, http.StatusOK},
		{"the tossed cookie alone", []*http.Cookie{tossed}, http.StatusUnauthorized},
	} {
		req := httptest.NewRequest(http.MethodGet, "http://"+guardAddr+"/api/approvals", nil)
		req.RemoteAddr = "127.0.0.1:50000"
		for _, c := range tc.cookies {
			req.AddCookie(c)
		}
		w := httptest.NewRecorder()
		p.g.ServeHTTP(w, req)
		if w.Code != tc.want {
			t.Errorf("%s: %d %s, want %d", tc.name, w.Code, w.Body, tc.want)
		}
	}
}
