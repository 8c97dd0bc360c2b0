package identity

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/google/go-cmp/cmp"
)

// hub is a test server with the relying party mounted and a page at /
// saying who is signed in.
type hub struct {
	srv    *httptest.Server
	rp     *RP
	offset atomic.Int64 // added to the session clock
}

const ttl = time.Hour

func newHub(t *testing.T, p *testenv.IDP) *hub {
	t.Helper()
	h := &hub{}
	var handler http.Handler = http.NotFoundHandler()
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.ServeHTTP(w, r) }))
	t.Cleanup(h.srv.Close)
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("s3cret-value\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	rp, err := New(context.Background(), Config{
		Issuer: p.Issuer, ClientID: "hub", ClientSecretFile: secret,
		PublicURL: h.srv.URL, Key: key(t), SessionTTL: ttl,
		Now: func() time.Time { return time.Now().Add(time.Duration(h.offset.Load())) },
	})
	if err != nil {
		t.Fatal(err)
	}
	h.rp = rp
	mux := http.NewServeMux()
	mux.Handle("/signin", rp.Handler())
	mux.Handle("/signin/", rp.Handler())
	mux.Handle("/signout", rp.Handler())
	mux.HandleFunc("/authorize", func(w http.ResponseWriter, r *http.Request) {
		tenant, ok := rp.Tenant(r)
		if !ok {
			rp.SignIn(w, r)
			return
		}
		_, _ = io.WriteString(w, tenant+" "+r.URL.RawQuery)
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		a, ok := rp.Person(r)
		if !ok {
			http.Error(w, "nobody", http.StatusUnauthorized)
			return
		}
		tok, _ := rp.CSRFToken(r)
		_ = json.NewEncoder(w).Encode(map[string]string{"tenant": a.Tenant, "sub": a.Subject, "email": a.Email, "name": a.Name, "csrf": tok, "path": r.URL.Path})
	})
	handler = mux
	return h
}

func key(t *testing.T) []byte {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

// browser is an HTTP client with a cookie jar that does not follow
// redirects, so a test can step through (and tamper with) a sign-in.
type browser struct{ c *http.Client }

func newBrowser(t *testing.T) *browser {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &browser{c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

type page struct {
	status   int
	location string
	body     string
	cookies  []*http.Cookie
}

func (b *browser) do(t *testing.T, method, u string, form url.Values, hdr http.Header) page {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, u, body)
	if err != nil {
		t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	resp, err := b.c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	defer resp.Body.Close()
	bb, _ := io.ReadAll(resp.Body)
	return page{status: resp.StatusCode, location: resp.Header.Get("Location"), body: string(bb), cookies: resp.Cookies()}
}

func (b *browser) get(t *testing.T, u string) page { t.Helper(); return b.do(t, "GET", u, nil, nil) }

// who is the account the hub's / page sees for this browser, or "" when nobody.
func (b *browser) who(t *testing.T, h *hub) map[string]string {
	t.Helper()
	p := b.get(t, h.srv.URL+"/")
	if p.status == http.StatusUnauthorized {
		return nil
	}
	var m map[string]string
	if err := json.Unmarshal([]byte(p.body), &m); err != nil {
		t.Fatalf("reading / (%d): %v: %s", p.status, err, p.body)
	}
	return m
}

// start runs /signin and the provider's authorize step; it returns the
// callback URL the provider sent the browser to.
func (b *browser) start(t *testing.T, h *hub, tamperAuthorize func(url.Values)) string {
	t.Helper()
	p := b.get(t, h.srv.URL+"/signin?return=/inbox")
	if p.status != http.StatusFound {
		t.Fatalf("/signin answered %d: %s", p.status, p.body)
	}
	au, err := url.Parse(p.location)
	if err != nil {
		t.Fatal(err)
	}
	q := au.Query()
	if got := q.Get("code_challenge_method"); got != "S256" {
		t.Errorf("code_challenge_method = %q, want S256", got)
	}
	if q.Get("nonce") == "" || q.Get("state") == "" {
		t.Errorf("the authorize URL lacks a nonce or state: %s", au)
	}
	if tamperAuthorize != nil {
		tamperAuthorize(q)
		au.RawQuery = q.Encode()
	}
	p = b.get(t, au.String())
	if p.status != http.StatusFound || !strings.HasPrefix(p.location, h.srv.URL+"/signin/callback?") {
		t.Fatalf("the provider answered %d to %s, Location %q: %s", p.status, au, p.location, p.body)
	}
	return p.location
}

// signIn signs the browser in as whoever the provider says next.
func (b *browser) signIn(t *testing.T, h *hub) page {
	t.Helper()
	p := b.get(t, b.start(t, h, nil))
	if p.status != http.StatusSeeOther || p.location != "/inbox" {
		t.Fatalf("the callback answered %d, Location %q, want 303 to /inbox: %s", p.status, p.location, p.body)
	}
	return p
}

func TestSignIn(t *testing.T) {
	p := testenv.StartIDP(t)
	h := newHub(t, p)
	p.Next(t, map[string]any{"sub": "alice-123", "email": "alice@example.com", "name": "Alice"})

	// A real browser's way: a cookie jar, every redirect followed.
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	resp, err := c.Get(h.srv.URL + "/signin?return=/inbox")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("signing in ended with %d: %s", resp.StatusCode, body)
	}
	var got map[string]string
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatalf("reading the page after signing in: %v: %s", err, body)
	}
	csrf := got["csrf"]
	delete(got, "csrf")
	want := map[string]string{"tenant": TenantID(p.Issuer, "alice-123"), "sub": "alice-123", "email": "alice@example.com", "name": "Alice", "path": "/inbox"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("after signing in (-want +got):\n%s", d)
	}
	if csrf == "" {
		t.Error("no CSRF token for a signed-in person")
	}

	// The session cookie: HttpOnly, SameSite=Lax, not Secure on loopback http.
	b := newBrowser(t)
	pg := b.signIn(t, h)
	var sc *http.Cookie
	for _, c := range pg.cookies {
		if c.Name == sessionCookie && c.Value != "" {
			sc = c
		}
	}
	if sc == nil {
		t.Fatalf("the callback set no session cookie: %v", pg.cookies)
	}
	if !sc.HttpOnly || sc.SameSite != http.SameSiteLaxMode || sc.Secure || sc.Path != "/" {
		t.Errorf("session cookie = %+v, want HttpOnly, SameSite=Lax, Path=/, not Secure on loopback", sc)
	}

	// Signing out needs the session's CSRF token.
	who := b.who(t, h)
	if who == nil {
		t.Fatal("not signed in after the callback")
	}
	if pg := b.do(t, "POST", h.srv.URL+"/signout", url.Values{}, nil); pg.status != http.StatusForbidden {
		t.Errorf("signing out without a CSRF token answered %d, want 403", pg.status)
	}
	if pg := b.do(t, "POST", h.srv.URL+"/signout", url.Values{"csrf_token": {csrf}}, nil); pg.status != http.StatusForbidden {
		t.Errorf("signing out with another session's CSRF token answered %d, want 403", pg.status)
	}
	if b.who(t, h) == nil {
		t.Fatal("a refused sign-out signed the person out")
	}
	if pg := b.do(t, "POST", h.srv.URL+"/signout", url.Values{"csrf_token": {who["csrf"]}}, nil); pg.status != http.StatusSeeOther {
		t.Errorf("signing out answered %d, want 303", pg.status)
	}
	if b.who(t, h) != nil {
		t.Error("still signed in after signing out")
	}
	// The old cookie, kept by an attacker, no longer works.
	old := &browser{c: &http.Client{}}
	req, _ := http.NewRequest("GET", h.srv.URL+"/", nil)
	req.AddCookie(sc)
	r2, err := old.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r2.Body.Close()
	if r2.StatusCode != http.StatusUnauthorized {
		t.Errorf("the signed-out session's cookie still answered %d", r2.StatusCode)
	}
}

func TestTenants(t *testing.T) {
	p := testenv.StartIDP(t)
	h := newHub(t, p)
	tenant := func(sub, email string) string {
		t.Helper()
		p.Next(t, map[string]any{"sub": sub, "email": email})
		b := newBrowser(t)
		b.signIn(t, h)
		return b.who(t, h)["tenant"]
	}
	alice := tenant("alice", "shared@example.com")
	bob := tenant("bob", "shared@example.com") // the same email is not the same account
	alice2 := tenant("alice", "alice-new@example.com")
	if alice == "" || alice == bob {
		t.Errorf("alice and bob got tenants %q and %q, want two different ones", alice, bob)
	}
	if alice != alice2 {
		t.Errorf("alice signing in twice got tenants %q and %q, want the same", alice, alice2)
	}
	if TenantID("https://a.example", "alice") == TenantID("https://b.example", "alice") {
		t.Error("the same subject at two issuers is one tenant")
	}
}

func TestRefusals(t *testing.T) {
	p := testenv.StartIDP(t)
	h := newHub(t, p)
	for _, tc := range []struct {
		name       string
		claims     map[string]any
		authorize  func(url.Values)
		callback   func(*testing.T, *browser, string) string // returns the URL to call back
		wantStatus int
		wantBody   string
	}{
		{
			name: "tampered state",
			callback: func(t *testing.T, _ *browser, u string) string {
				pu, _ := url.Parse(u)
				q := pu.Query()
				q.Set("state", q.Get("state")+"x")
				pu.RawQuery = q.Encode()
				return pu.String()
			},
			wantStatus: 400, wantBody: "the state does not match",
		},
		{
			name: "callback in another browser",
			callback: func(t *testing.T, b *browser, u string) string {
				*b = *newBrowser(t)
				return u
			},
			wantStatus: 400, wantBody: "no sign-in is under way",
		},
		{
			name:       "wrong nonce",
			claims:     map[string]any{"sub": "mallory", "nonce": "not-this-one"},
			wantStatus: 403, wantBody: "nonce",
		},
		{
			name:       "ID token for another audience",
			claims:     map[string]any{"sub": "mallory", "aud": "another-client"},
			wantStatus: 403, wantBody: "audience",
		},
		{
			name:       "expired ID token",
			claims:     map[string]any{"sub": "mallory", "expIn": -120},
			wantStatus: 403, wantBody: "expired",
		},
		{
			name:      "provider refuses",
			authorize: nil,
			callback: func(t *testing.T, _ *browser, u string) string {
				return h.srv.URL + "/signin/callback?error=access_denied"
			},
			wantStatus: 403, wantBody: "access_denied",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p.Next(t, tc.claims)
			b := newBrowser(t)
			cb := b.start(t, h, tc.authorize)
			if tc.callback != nil {
				cb = tc.callback(t, b, cb)
			}
			pg := b.get(t, cb)
			if pg.status != tc.wantStatus || !strings.Contains(pg.body, tc.wantBody) {
				t.Errorf("callback answered %d %q, want %d with %q", pg.status, pg.body, tc.wantStatus, tc.wantBody)
			}
			if who := b.who(t, h); who != nil {
				t.Errorf("signed in as %v after a refused callback", who)
			}
		})
	}

	t.Run("sign-in that took too long", func(t *testing.T) {
		p.Next(t, map[string]any{"sub": "alice"})
		b := newBrowser(t)
		cb := b.start(t, h, nil)
		h.offset.Store(int64(stateTTL + time.Second))
		defer h.offset.Store(0)
		pg := b.get(t, cb)
		if pg.status != http.StatusBadRequest || !strings.Contains(pg.body, "took too long") {
			t.Errorf("a callback after %v answered %d %q, want 400 took too long", stateTTL, pg.status, pg.body)
		}
		h.offset.Store(0)
		if who := b.who(t, h); who != nil {
			t.Errorf("signed in as %v after a late callback", who)
		}
	})

	t.Run("replayed callback", func(t *testing.T) {
		p.Next(t, map[string]any{"sub": "alice"})
		b := newBrowser(t)
		signin := b.get(t, h.srv.URL+"/signin")
		var state *http.Cookie
		for _, c := range signin.cookies {
			if c.Name == stateCookie {
				state = c
			}
		}
		if state == nil {
			t.Fatal("/signin set no state cookie")
		}
		cb := b.get(t, signin.location).location
		if pg := b.get(t, cb); pg.status != http.StatusSeeOther {
			t.Fatalf("the first callback answered %d: %s", pg.status, pg.body)
		}
		// An attacker who captured the callback URL and the state cookie replays both.
		att := newBrowser(t)
		u, _ := url.Parse(h.srv.URL)
		att.c.Jar.SetCookies(u, []*http.Cookie{{Name: state.Name, Value: state.Value, Path: "/"}})
		pg := att.get(t, cb)
		if pg.status != http.StatusBadRequest || !strings.Contains(pg.body, "already used") {
			t.Errorf("the replayed callback answered %d %q, want 400 already used", pg.status, pg.body)
		}
		if who := att.who(t, h); who != nil {
			t.Errorf("the replay signed in as %v", who)
		}
	})
}

func TestSessionExpires(t *testing.T) {
	p := testenv.StartIDP(t)
	h := newHub(t, p)
	p.Next(t, map[string]any{"sub": "alice"})
	b := newBrowser(t)
	b.signIn(t, h)
	h.offset.Store(int64(ttl - time.Minute))
	if b.who(t, h) == nil {
		t.Fatal("the session ended before its time")
	}
	h.offset.Store(int64(ttl + time.Second))
	if who := b.who(t, h); who != nil {
		t.Errorf("an expired session still signs in as %v", who)
	}
	h.offset.Store(0)
	if who := b.who(t, h); who != nil {
		t.Errorf("an expired session came back as %v once the clock went back", who)
	}
}

func TestForgedCookies(t *testing.T) {
	p := testenv.StartIDP(t)
	h := newHub(t, p)
	p.Next(t, map[string]any{"sub": "alice"})
	b := newBrowser(t)
	b.signIn(t, h)
	u, _ := url.Parse(h.srv.URL)
	var real string
	for _, c := range b.c.Jar.Cookies(u) {
		if c.Name == sessionCookie {
			real = c.Value
		}
	}
	id, ok := h.rp.verify(sessionCookie, real)
	if !ok {
		t.Fatalf("the hub's own session cookie %q does not verify", real)
	}
	other := &RP{cfg: Config{Key: key(t)}}
	v64, m64, _ := strings.Cut(real, ".")
	flip := []byte(m64)
	flip[0] ^= 1
	for _, tc := range []struct{ name, value string }{
		{"unsigned session id", id},
		{"session id with a flipped MAC", v64 + "." + string(flip)},
		{"signed with another key", other.sign(sessionCookie, id)},
		{"signed for another purpose", h.rp.sign(stateCookie, id)},
		{"a signed but made-up session id", h.rp.sign(sessionCookie, "made-up")},
		{"empty", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("GET", h.srv.URL+"/", nil)
			req.AddCookie(&http.Cookie{Name: sessionCookie, Value: tc.value})
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("a forged cookie (%s) answered %d, want 401", tc.name, resp.StatusCode)
			}
		})
	}
	// The control: the real cookie, sent the same way, is accepted.
	req, _ := http.NewRequest("GET", h.srv.URL+"/", nil)
	req.AddCookie(&http.Cookie{Name: sessionCookie, Value: real})
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("the real cookie answered %d, want 200", resp.StatusCode)
	}
}

func TestConfigErrors(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, []byte(" \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	good := Config{Issuer: "https://idp.example", ClientID: "hub", ClientSecretFile: empty, PublicURL: "https://hub.example", Key: make([]byte, 32)}
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"no issuer", func(c *Config) { c.Issuer = "" }, "needs an issuer URL"},
		{"short key", func(c *Config) { c.Key = c.Key[:16] }, "has 16 bytes"},
		{"relative public URL", func(c *Config) { c.PublicURL = "hub.example" }, "not an absolute http(s) URL"},
		{"plain http off loopback", func(c *Config) { c.PublicURL = "http://hub.example" }, "sessions need https"},
		{"empty secret file", func(c *Config) {}, "is empty"},
		{"missing secret file", func(c *Config) { c.ClientSecretFile = filepath.Join(dir, "nope") }, "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := good
			tc.edit(&c)
			_, err := New(context.Background(), c)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New: %v, want an error with %q", err, tc.want)
			}
		})
	}
}

func TestSafeReturn(t *testing.T) {
	for in, want := range map[string]string{
		"":                   "/",
		"/inbox":             "/inbox",
		"//evil.example":     "/",
		"/\\evil.example":    "/",
		"https://evil.test/": "/",
		"/a\r\nSet-Cookie:x": "/",
	} {
		if got := safeReturn(in); got != want {
			t.Errorf("safeReturn(%q) = %q, want %q", in, got, want)
		}
	}
}

// Over https the session cookie is Secure and carries the __Host- prefix.
func TestSignInOverTLS(t *testing.T) {
	p := testenv.StartIDP(t)
	var handler http.Handler = http.NotFoundHandler()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.ServeHTTP(w, r) }))
	t.Cleanup(srv.Close)
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("s3cret-value"), 0o600); err != nil {
		t.Fatal(err)
	}
	rp, err := New(context.Background(), Config{Issuer: p.Issuer, ClientID: "hub", ClientSecretFile: secret, PublicURL: srv.URL, Key: key(t)})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/signin", rp.Handler())
	mux.Handle("/signin/", rp.Handler())
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		a, ok := rp.Person(r)
		if !ok {
			http.Error(w, "nobody", http.StatusUnauthorized)
			return
		}
		_, _ = io.WriteString(w, a.Tenant)
	})
	handler = mux
	p.Next(t, map[string]any{"sub": "tls-person"})

	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Transport: srv.Client().Transport}
	resp, err := c.Get(srv.URL + "/signin")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != TenantID(p.Issuer, "tls-person") {
		t.Fatalf("signing in over https ended with %d %q", resp.StatusCode, body)
	}
	u, _ := url.Parse(srv.URL)
	var names []string
	for _, ck := range jar.Cookies(u) {
		names = append(names, ck.Name)
	}
	if d := cmp.Diff([]string{"__Host-" + sessionCookie}, names); d != "" {
		t.Errorf("cookies over https (-want +got):\n%s", d)
	}
	// The callback's Set-Cookie, step by step.
	b := newBrowser(t)
	b.c.Transport = srv.Client().Transport
	pg := b.get(t, srv.URL+"/signin")
	pg = b.get(t, b.get(t, pg.location).location)
	var sc *http.Cookie
	for _, ck := range pg.cookies {
		if ck.Name == "__Host-"+sessionCookie && ck.Value != "" {
			sc = ck
		}
	}
	if sc == nil || !sc.Secure || !sc.HttpOnly || sc.SameSite != http.SameSiteLaxMode || sc.Path != "/" || sc.Domain != "" {
		t.Errorf("session cookie over https = %+v, want __Host- with Secure, HttpOnly, SameSite=Lax, Path=/, no Domain", sc)
	}
}

// BenchmarkPerson measures what every signed-in request pays: checking the
// cookie's MAC and reading the session from the in-memory store.
func BenchmarkPerson(b *testing.B) {
	rp := &RP{cfg: Config{Key: make([]byte, 32), Now: time.Now}, store: NewMemoryStore()}
	s := Session{ID: random(), Account: Account{Tenant: "tn_x"}, Expires: time.Now().Add(time.Hour)}
	_ = rp.store.PutSession(context.Background(), s)
	req := httptest.NewRequest("GET", "/", nil)
	req.AddCookie(&http.Cookie{Name: sessionCookie, Value: rp.sign(sessionCookie, s.ID)})
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := rp.Person(req); !ok {
			b.Fatal("not signed in")
		}
	}
}

// A page that needs a person (the authorization server's /authorize) sends
// the browser to sign in and gets it back with its query intact.
func TestSignInReturns(t *testing.T) {
	p := testenv.StartIDP(t)
	h := newHub(t, p)
	p.Next(t, map[string]any{"sub": "carol"})
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	query := "response_type=code&client_id=c1&redirect_uri=" + url.QueryEscape("https://claude.ai/api/mcp/auth_callback") +
		"&code_challenge=" + strings.Repeat("x", 43) + "&code_challenge_method=S256&state=" + strings.Repeat("s", 64) +
		"&resource=" + url.QueryEscape("https://hub.example/mcp") + "&scope=mcp"
	resp, err := c.Get(h.srv.URL + "/authorize?" + query)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if want := TenantID(p.Issuer, "carol") + " " + query; resp.StatusCode != 200 || string(body) != want {
		t.Errorf("after signing in from /authorize: %d %q, want 200 %q", resp.StatusCode, body, want)
	}
}
