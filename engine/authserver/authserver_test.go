package authserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"html"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/capabilities-sh/capabilities/engine/authserver"
)

const redirect = "http://127.0.0.1:9/callback"

type env struct {
	srv   *httptest.Server
	as    *authserver.Server
	store *authserver.Memory
	skew  atomic.Int64                 // nanoseconds added to the clock
	http  *http.Client                 // follows no redirects
	mcp   atomic.Pointer[http.Handler] // what /mcp serves behind Middleware
}

func newEnv(t testing.TB, opts ...func(*authserver.Config)) *env {
	t.Helper()
	e := &env{store: authserver.NewMemory()}
	var h http.Handler
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) }))
	t.Cleanup(e.srv.Close)
	cfg := authserver.Config{
		Issuer: e.srv.URL,
		Scopes: []string{"mcp"},
		Store:  e.store,
		// The test's session: a cookie naming the tenant.
		Person: func(r *http.Request) (string, bool) {
			c, err := r.Cookie("person")
			if err != nil {
				return "", false
			}
			return c.Value, true
		},
		Logger: slog.New(slog.DiscardHandler),
		Now:    func() time.Time { return time.Now().Add(time.Duration(e.skew.Load())) },
	}
	for _, o := range opts {
		o(&cfg)
	}
	as, err := authserver.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.as = as
	mux := http.NewServeMux()
	mux.Handle("/", as.Handler())
	mux.Handle("/mcp", as.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h := e.mcp.Load(); h != nil {
			(*h).ServeHTTP(w, r)
			return
		}
		io.WriteString(w, "hello")
	})))
	h = mux
	e.http = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return e
}

func (e *env) resource() string { return e.srv.URL + "/mcp" }

// register registers a client and returns its id and secret.
func (e *env) register(t testing.TB, body string) (id, secret string) {
	t.Helper()
	resp, err := http.Post(e.srv.URL+"/register", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r oauthex.ClientRegistrationResponse
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("register: %d %s", resp.StatusCode, b)
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r.ClientID, r.ClientSecret
}

var hidden = regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)">`)

// consent opens authURL as tenant, then posts decision from the consent
// page; it returns the final response (a redirect to the client, or an
// error page).
func (e *env) consent(t testing.TB, authURL, tenant, decision string, edit func(url.Values)) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("GET", authURL, nil)
	req.AddCookie(&http.Cookie{Name: "person", Value: tenant})
	resp, err := e.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		resp.Body = io.NopCloser(strings.NewReader(string(b)))
		return resp
	}
	form := url.Values{"decision": {decision}}
	for _, m := range hidden.FindAllStringSubmatch(string(b), -1) {
		form.Set(m[1], html.UnescapeString(m[2]))
	}
	if form.Get("csrf") == "" {
		t.Fatalf("consent page has no csrf field:\n%s", b)
	}
	if edit != nil {
		edit(form)
	}
	req, _ = http.NewRequest("POST", e.srv.URL+"/authorize", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", e.srv.URL)
	req.AddCookie(&http.Cookie{Name: "person", Value: tenant})
	resp, err = e.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func (e *env) config(id, secret string) *oauth2.Config {
	return &oauth2.Config{ClientID: id, ClientSecret: secret, RedirectURL: redirect, Scopes: []string{"mcp"},
		Endpoint: oauth2.Endpoint{AuthURL: e.srv.URL + "/authorize", TokenURL: e.srv.URL + "/token"}}
}

// outcome summarizes a redirect back to the client, or an error page.
func outcome(t testing.TB, resp *http.Response) (code, errCode string) {
	t.Helper()
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		b, _ := io.ReadAll(resp.Body)
		return "", "page " + resp.Status + ": " + strings.TrimSpace(string(b))
	}
	u, err := url.Parse(resp.Header.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	return u.Query().Get("code"), u.Query().Get("error")
}

func oauthErrCode(err error) string {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		return re.ErrorCode
	}
	if err != nil {
		return err.Error()
	}
	return ""
}

// grant runs register → authorize → consent → token and returns the token.
func (e *env) grant(t testing.TB, tenant string) (*oauth2.Config, *oauth2.Token) {
	t.Helper()
	id, secret := e.register(t, `{"redirect_uris":["`+redirect+`"],"client_name":"Test client"}`)
	cfg := e.config(id, secret)
	v := oauth2.GenerateVerifier()
	code, errc := outcome(t, e.consent(t, cfg.AuthCodeURL("st", oauth2.S256ChallengeOption(v), oauth2.SetAuthURLParam("resource", e.resource())), tenant, "allow", nil))
	if errc != "" {
		t.Fatalf("authorize: %s", errc)
	}
	tok, err := cfg.Exchange(context.Background(), code, oauth2.VerifierOption(v), oauth2.SetAuthURLParam("resource", e.resource()))
	if err != nil {
		t.Fatalf("exchange: %v", err)
	}
	return cfg, tok
}

func TestFullFlow(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()

	// An MCP request without a token: 401 pointing at the metadata.
	resp, err := http.Get(e.resource())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	chs, err := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	if err != nil || resp.StatusCode != http.StatusUnauthorized || len(chs) != 1 {
		t.Fatalf("unauthenticated /mcp: %d %v %v", resp.StatusCode, chs, err)
	}
	prmURL := chs[0].Params["resource_metadata"]
	if prmURL != e.srv.URL+"/.well-known/oauth-protected-resource/mcp" {
		t.Errorf("resource_metadata = %q", prmURL)
	}
	// Discovery with go-sdk's client side, which checks what it reads.
	prm, err := oauthex.GetProtectedResourceMetadata(ctx, prmURL, e.resource(), http.DefaultClient)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{e.srv.URL}, prm.AuthorizationServers); diff != "" {
		t.Errorf("authorization_servers (-want +got):\n%s", diff)
	}
	asm, err := oauthex.GetAuthServerMeta(ctx, e.srv.URL+"/.well-known/oauth-authorization-server", e.srv.URL, http.DefaultClient)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"S256"}, asm.CodeChallengeMethodsSupported); diff != "" {
		t.Errorf("code_challenge_methods_supported (-want +got):\n%s", diff)
	}
	// Registration through go-sdk's DCR client.
	reg, err := oauthex.RegisterClient(ctx, asm.RegistrationEndpoint, &oauthex.ClientRegistrationMetadata{
		RedirectURIs: []string{redirect}, ClientName: "Claude <b>", TokenEndpointAuthMethod: "none",
	}, http.DefaultClient)
	if err != nil {
		t.Fatal(err)
	}
	if reg.ClientSecret != "" {
		t.Errorf("public client got a secret")
	}
	cfg := e.config(reg.ClientID, "")
	cfg.Endpoint.AuthStyle = oauth2.AuthStyleInParams
	v := oauth2.GenerateVerifier()
	authURL := cfg.AuthCodeURL("state-1", oauth2.S256ChallengeOption(v), oauth2.SetAuthURLParam("resource", e.resource()))

	// The consent page names the client (escaped) and the redirect.
	req, _ := http.NewRequest("GET", authURL, nil)
	req.AddCookie(&http.Cookie{Name: "person", Value: "alice"})
	page, err := e.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(page.Body)
	page.Body.Close()
	for _, want := range []string{"Claude &lt;b&gt;", redirect, "alice"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("consent page lacks %q", want)
		}
	}
	if page.Header.Get("X-Frame-Options") != "DENY" {
		t.Errorf("consent page may be framed")
	}
	if diff := cmp.Diff("default-src 'none'; style-src 'unsafe-inline'; form-action 'self' http://127.0.0.1:9; frame-ancestors 'none'", page.Header.Get("Content-Security-Policy")); diff != "" {
		t.Errorf("consent page CSP (-want +got):\n%s", diff)
	}

	resp = e.consent(t, authURL, "alice", "allow", nil)
	loc, _ := url.Parse(resp.Header.Get("Location"))
	resp.Body.Close()
	if got := loc.Query().Get("state") + " " + loc.Query().Get("iss"); got != "state-1 "+e.srv.URL {
		t.Errorf("state and iss = %q", got)
	}
	tok, err := cfg.Exchange(ctx, loc.Query().Get("code"), oauth2.VerifierOption(v), oauth2.SetAuthURLParam("resource", e.resource()))
	if err != nil {
		t.Fatal(err)
	}
	g, err := e.as.Verify(ctx, tok.AccessToken, e.resource())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(authserver.Grant{Tenant: "alice", ClientID: reg.ClientID, Resource: e.resource(), Scopes: []string{"mcp"}}, g,
		cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Expires" }, cmp.Ignore())); diff != "" {
		t.Errorf("grant (-want +got):\n%s", diff)
	}
	// The MCP endpoint accepts it.
	mcpReq, _ := http.NewRequest("GET", e.resource(), nil)
	tok.SetAuthHeader(mcpReq)
	if resp, err := http.DefaultClient.Do(mcpReq); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("/mcp with token: %v %v", resp.Status, err)
	}

	// Refresh: a new pair; the old access token stays valid until it expires.
	tok.Expiry = time.Now().Add(-time.Minute)
	tok2, err := cfg.TokenSource(ctx, tok).Token()
	if err != nil {
		t.Fatal(err)
	}
	if tok2.AccessToken == tok.AccessToken || tok2.RefreshToken == tok.RefreshToken {
		t.Fatalf("refresh did not rotate")
	}
	if _, err := e.as.Verify(ctx, tok2.AccessToken, e.resource()); err != nil {
		t.Fatal(err)
	}

	// Revoke the refresh token: the whole grant ends.
	form := url.Values{"token": {tok2.RefreshToken}, "client_id": {reg.ClientID}}
	resp, err = http.PostForm(e.srv.URL+"/revoke", form)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("revoke: %v %v", resp.Status, err)
	}
	for _, at := range []string{tok.AccessToken, tok2.AccessToken} {
		if _, err := e.as.Verify(ctx, at, e.resource()); !errors.Is(err, authserver.ErrInvalidToken) {
			t.Errorf("Verify after revoke: %v", err)
		}
	}
	tok2.Expiry = time.Now().Add(-time.Minute)
	if _, err := cfg.TokenSource(ctx, tok2).Token(); oauthErrCode(err) != "invalid_grant" {
		t.Errorf("refresh after revoke: %v", err)
	}
}

func TestAuthorizeRefusals(t *testing.T) {
	e := newEnv(t)
	id, secret := e.register(t, `{"redirect_uris":["`+redirect+`","https://app.example/cb"]}`)
	cfg := e.config(id, secret)
	v := oauth2.GenerateVerifier()
	good := func() url.Values {
		u, _ := url.Parse(cfg.AuthCodeURL("s", oauth2.S256ChallengeOption(v), oauth2.SetAuthURLParam("resource", e.resource())))
		return u.Query()
	}
	tests := []struct {
		name   string
		edit   func(url.Values)
		tenant string
		form   func(url.Values) // edits the consent form
		want   string           // error code in the redirect, or "page …"
	}{
		{"no PKCE", func(q url.Values) { q.Del("code_challenge"); q.Del("code_challenge_method") }, "alice", nil, "invalid_request"},
		{"plain PKCE", func(q url.Values) { q.Set("code_challenge_method", "plain"); q.Set("code_challenge", v) }, "alice", nil, "invalid_request"},
		{"short challenge", func(q url.Values) { q.Set("code_challenge", "abc") }, "alice", nil, "invalid_request"},
		{"redirect not registered", func(q url.Values) { q.Set("redirect_uri", "https://evil.example/cb") }, "alice", nil,
			`page 400 Bad Request: authorization request refused: redirect_uri "https://evil.example/cb" is not registered for this client`},
		{"redirect on another loopback path", func(q url.Values) { q.Set("redirect_uri", "http://127.0.0.1:9/other") }, "alice", nil,
			`page 400 Bad Request: authorization request refused: redirect_uri "http://127.0.0.1:9/other" is not registered for this client`},
		{"redirect missing with two registered", func(q url.Values) { q.Del("redirect_uri") }, "alice", nil,
			"page 400 Bad Request: authorization request refused: redirect_uri is missing and the client registered several"},
		{"unknown client", func(q url.Values) { q.Set("client_id", "nope") }, "alice", nil,
			"page 400 Bad Request: authorization request refused: unknown client_id; register the client first"},
		{"resource mismatch", func(q url.Values) { q.Set("resource", "https://other.example/mcp") }, "alice", nil, "invalid_target"},
		{"scope not offered", func(q url.Values) { q.Set("scope", "admin") }, "alice", nil, "invalid_scope"},
		{"response_type token", func(q url.Values) { q.Set("response_type", "token") }, "alice", nil, "unsupported_response_type"},
		{"not signed in", nil, "", nil, "page 401 Unauthorized: sign in to the hub first"},
		{"denied", nil, "alice", func(f url.Values) { f.Set("decision", "deny") }, "access_denied"},
		{"csrf wrong", nil, "alice", func(f url.Values) { f.Set("csrf", "x") }, "page 403 Forbidden: consent refused: the form's CSRF token is wrong; open the client's sign-in link again"},
		{"csrf missing", nil, "alice", func(f url.Values) { f.Set("csrf", "") }, "page 403 Forbidden: consent refused: the form's CSRF token is wrong; open the client's sign-in link again"},
		{"form edited: challenge", nil, "alice", func(f url.Values) { f.Set("code_challenge", strings.Repeat("A", 43)) }, "page 403 Forbidden: consent refused: the form's CSRF token is wrong; open the client's sign-in link again"},
		{"form expired", nil, "alice", func(f url.Values) { e.skew.Store(int64(time.Hour)) }, "page 403 Forbidden: consent refused: the form expired; open the client's sign-in link again"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e.skew.Store(0)
			q := good()
			if tt.edit != nil {
				tt.edit(q)
			}
			authURL := e.srv.URL + "/authorize?" + q.Encode()
			var resp *http.Response
			if tt.tenant == "" {
				var err error
				if resp, err = e.http.Get(authURL); err != nil {
					t.Fatal(err)
				}
			} else {
				resp = e.consent(t, authURL, tt.tenant, "allow", tt.form)
			}
			code, got := outcome(t, resp)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("outcome (-want +got):\n%s", diff)
			}
			if code != "" {
				t.Errorf("a code was issued: %q", code)
			}
		})
	}
}

func TestCrossOriginConsentRefused(t *testing.T) {
	e := newEnv(t)
	id, secret := e.register(t, `{"redirect_uris":["`+redirect+`"]}`)
	v := oauth2.GenerateVerifier()
	authURL := e.config(id, secret).AuthCodeURL("s", oauth2.S256ChallengeOption(v))
	resp := e.consent(t, authURL, "alice", "allow", nil)
	resp.Body.Close()
	// Same form, posted from another origin.
	req, _ := http.NewRequest("GET", authURL, nil)
	req.AddCookie(&http.Cookie{Name: "person", Value: "alice"})
	page, _ := e.http.Do(req)
	b, _ := io.ReadAll(page.Body)
	page.Body.Close()
	form := url.Values{"decision": {"allow"}}
	for _, m := range hidden.FindAllStringSubmatch(string(b), -1) {
		form.Set(m[1], html.UnescapeString(m[2]))
	}
	req, _ = http.NewRequest("POST", e.srv.URL+"/authorize", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "https://evil.example")
	req.AddCookie(&http.Cookie{Name: "person", Value: "alice"})
	resp, err := e.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if _, got := outcome(t, resp); got != "page 403 Forbidden: consent refused: the form was posted from another origin" {
		t.Errorf("cross-origin consent: %s", got)
	}
	// Alice's form, posted by bob's session.
	req, _ = http.NewRequest("POST", e.srv.URL+"/authorize", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(&http.Cookie{Name: "person", Value: "bob"})
	resp, err = e.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if _, got := outcome(t, resp); got != "page 403 Forbidden: consent refused: the form's CSRF token is wrong; open the client's sign-in link again" {
		t.Errorf("another person's form: %s", got)
	}
	// The same form from alice, same origin: allowed (the form itself was fine).
	req, _ = http.NewRequest("POST", e.srv.URL+"/authorize", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(&http.Cookie{Name: "person", Value: "alice"})
	resp, err = e.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if code, got := outcome(t, resp); code == "" || got != "" {
		t.Errorf("alice's own form: %q %q", code, got)
	}
}

func TestTokenRefusals(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	// code returns a fresh authorization code and its verifier.
	code := func(t *testing.T, cfg *oauth2.Config) (string, string) {
		v := oauth2.GenerateVerifier()
		c, errc := outcome(t, e.consent(t, cfg.AuthCodeURL("s", oauth2.S256ChallengeOption(v), oauth2.SetAuthURLParam("resource", e.resource())), "alice", "allow", nil))
		if errc != "" {
			t.Fatal(errc)
		}
		return c, v
	}
	id, secret := e.register(t, `{"redirect_uris":["`+redirect+`"]}`)
	cfg := e.config(id, secret)
	tests := []struct {
		name string
		// do returns the error of the refused step.
		do   func(t *testing.T) error
		want string
	}{
		{"wrong verifier", func(t *testing.T) error {
			c, _ := code(t, cfg)
			_, err := cfg.Exchange(ctx, c, oauth2.VerifierOption(oauth2.GenerateVerifier()))
			return err
		}, "invalid_grant"},
		{"no verifier", func(t *testing.T) error {
			c, _ := code(t, cfg)
			_, err := cfg.Exchange(ctx, c)
			return err
		}, "invalid_grant"},
		{"code reused, and the first grant revoked", func(t *testing.T) error {
			c, v := code(t, cfg)
			tok, err := cfg.Exchange(ctx, c, oauth2.VerifierOption(v))
			if err != nil {
				t.Fatal(err)
			}
			_, err = cfg.Exchange(ctx, c, oauth2.VerifierOption(v))
			if _, verr := e.as.Verify(ctx, tok.AccessToken, e.resource()); !errors.Is(verr, authserver.ErrInvalidToken) {
				t.Errorf("the first exchange's token survived a replay: %v", verr)
			}
			return err
		}, "invalid_grant"},
		{"code expired", func(t *testing.T) error {
			c, v := code(t, cfg)
			e.skew.Store(int64(2 * time.Minute))
			defer e.skew.Store(0)
			_, err := cfg.Exchange(ctx, c, oauth2.VerifierOption(v))
			return err
		}, "invalid_grant"},
		{"code for another client", func(t *testing.T) error {
			c, v := code(t, cfg)
			id2, secret2 := e.register(t, `{"redirect_uris":["`+redirect+`"]}`)
			_, err := e.config(id2, secret2).Exchange(ctx, c, oauth2.VerifierOption(v))
			return err
		}, "invalid_grant"},
		{"wrong client secret", func(t *testing.T) error {
			c, v := code(t, cfg)
			_, err := e.config(id, "cap_cs_wrong").Exchange(ctx, c, oauth2.VerifierOption(v))
			return err
		}, "invalid_client"},
		{"resource mismatch at token", func(t *testing.T) error {
			c, v := code(t, cfg)
			_, err := cfg.Exchange(ctx, c, oauth2.VerifierOption(v), oauth2.SetAuthURLParam("resource", "https://other.example/mcp"))
			return err
		}, "invalid_target"},
		{"redirect_uri mismatch at token", func(t *testing.T) error {
			c, v := code(t, cfg)
			other := *cfg
			other.RedirectURL = "http://127.0.0.1:9/elsewhere"
			_, err := other.Exchange(ctx, c, oauth2.VerifierOption(v))
			return err
		}, "invalid_grant"},
		{"unknown code", func(t *testing.T) error {
			_, err := cfg.Exchange(ctx, "cap_ac_nope", oauth2.VerifierOption(oauth2.GenerateVerifier()))
			return err
		}, "invalid_grant"},
		{"token for another resource refused by Verify", func(t *testing.T) error {
			_, tok := e.grant(t, "alice")
			_, err := e.as.Verify(ctx, tok.AccessToken, "https://other.example/mcp")
			return err
		}, authserver.ErrInvalidToken.Error()},
		{"refresh token as a bearer refused by Verify", func(t *testing.T) error {
			_, tok := e.grant(t, "alice")
			_, err := e.as.Verify(ctx, tok.RefreshToken, e.resource())
			return err
		}, authserver.ErrInvalidToken.Error()},
		{"access token expired", func(t *testing.T) error {
			_, tok := e.grant(t, "alice")
			e.skew.Store(int64(2 * time.Hour))
			defer e.skew.Store(0)
			_, err := e.as.Verify(ctx, tok.AccessToken, e.resource())
			return err
		}, authserver.ErrInvalidToken.Error()},
		{"revoked access token", func(t *testing.T) error {
			cfg, tok := e.grant(t, "alice")
			resp, err := http.PostForm(e.srv.URL+"/revoke", url.Values{"token": {tok.AccessToken}, "client_id": {cfg.ClientID}, "client_secret": {cfg.ClientSecret}})
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("revoke: %v %v", resp, err)
			}
			_, err = e.as.Verify(ctx, tok.AccessToken, e.resource())
			return err
		}, authserver.ErrInvalidToken.Error()},
		{"revocation by another client is ignored", func(t *testing.T) error {
			_, tok := e.grant(t, "alice")
			id2, secret2 := e.register(t, `{"redirect_uris":["`+redirect+`"]}`)
			resp, err := http.PostForm(e.srv.URL+"/revoke", url.Values{"token": {tok.AccessToken}, "client_id": {id2}, "client_secret": {secret2}})
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("revoke: %v %v", resp, err)
			}
			_, err = e.as.Verify(ctx, tok.AccessToken, e.resource())
			return err
		}, ""},
		{"refresh reuse revokes the family", func(t *testing.T) error {
			cfg, tok := e.grant(t, "alice")
			old := *tok
			tok.Expiry = time.Now().Add(-time.Minute)
			tok2, err := cfg.TokenSource(ctx, tok).Token()
			if err != nil {
				t.Fatal(err)
			}
			old.Expiry = time.Now().Add(-time.Minute)
			_, err = cfg.TokenSource(ctx, &old).Token()
			if oauthErrCode(err) != "invalid_grant" {
				t.Errorf("reuse: %v", err)
			}
			// Now the rotated pair is dead too.
			tok2.Expiry = time.Now().Add(-time.Minute)
			if _, rerr := cfg.TokenSource(ctx, tok2).Token(); oauthErrCode(rerr) != "invalid_grant" {
				t.Errorf("refresh with the rotated token after reuse: %v", rerr)
			}
			_, err = e.as.Verify(ctx, tok2.AccessToken, e.resource())
			return err
		}, authserver.ErrInvalidToken.Error()},
		{"refresh by another client", func(t *testing.T) error {
			_, tok := e.grant(t, "alice")
			id2, secret2 := e.register(t, `{"redirect_uris":["`+redirect+`"]}`)
			tok.Expiry = time.Now().Add(-time.Minute)
			_, err := e.config(id2, secret2).TokenSource(ctx, tok).Token()
			return err
		}, "invalid_grant"},
		{"refresh expired", func(t *testing.T) error {
			cfg, tok := e.grant(t, "alice")
			e.skew.Store(int64(31 * 24 * time.Hour))
			defer e.skew.Store(0)
			tok.Expiry = time.Now().Add(-time.Minute)
			_, err := cfg.TokenSource(ctx, tok).Token()
			return err
		}, "invalid_grant"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.do(t)
			g := oauthErrCode(got)
			if errors.Is(got, authserver.ErrInvalidToken) {
				g = got.Error()
			}
			if diff := cmp.Diff(tt.want, g); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTenantsApart(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	_, a := e.grant(t, "alice")
	_, b := e.grant(t, "bob")
	ga, err := e.as.Verify(ctx, a.AccessToken, e.resource())
	if err != nil {
		t.Fatal(err)
	}
	gb, err := e.as.Verify(ctx, b.AccessToken, e.resource())
	if err != nil {
		t.Fatal(err)
	}
	if ga.Tenant != "alice" || gb.Tenant != "bob" {
		t.Errorf("tenants: %q %q", ga.Tenant, gb.Tenant)
	}
	// The stored token is the hash, never the value.
	if _, err := e.store.Token(ctx, a.AccessToken); !errors.Is(err, authserver.ErrNotFound) {
		t.Errorf("token stored by its value: %v", err)
	}
}

func TestRegistrationRefusals(t *testing.T) {
	e := newEnv(t)
	tests := []struct{ body, want string }{
		{`{}`, "invalid_redirect_uri: redirect_uris: give between 1 and 10 redirect URIs"},
		{`{"redirect_uris":["http://app.example/cb"]}`, `invalid_redirect_uri: redirect_uris[0]: "http://app.example/cb": http is allowed only on a loopback host (127.0.0.1, [::1], localhost); use https`},
		{`{"redirect_uris":["https://app.example/cb#x"]}`, `invalid_redirect_uri: redirect_uris[0]: "https://app.example/cb#x" has a fragment`},
		{`{"redirect_uris":["javascript:alert(1)"]}`, `invalid_redirect_uri: redirect_uris[0]: "javascript:alert(1)" has no host`},
		{`{"redirect_uris":["https://u:p@app.example/cb"]}`, `invalid_redirect_uri: redirect_uris[0]: "https://u:p@app.example/cb" has user info`},
		{`{"redirect_uris":["https://app.example/cb"],"grant_types":["client_credentials"]}`, `invalid_client_metadata: grant_types: "client_credentials" is not supported (authorization_code, refresh_token)`},
		{`{"redirect_uris":["https://app.example/cb"],"token_endpoint_auth_method":"private_key_jwt"}`, `invalid_client_metadata: token_endpoint_auth_method "private_key_jwt": use one of none, client_secret_basic, client_secret_post`},
		{`not json`, "invalid_client_metadata: parsing registration: invalid character 'o' in literal null (expecting 'u')"},
	}
	for _, tt := range tests {
		resp, err := http.Post(e.srv.URL+"/register", "application/json", strings.NewReader(tt.body))
		if err != nil {
			t.Fatal(err)
		}
		var r struct{ Error, ErrorDescription string }
		var raw map[string]string
		json.NewDecoder(resp.Body).Decode(&raw)
		resp.Body.Close()
		r.Error, r.ErrorDescription = raw["error"], raw["error_description"]
		if resp.StatusCode != 400 {
			t.Errorf("%s: status %d", tt.body, resp.StatusCode)
		}
		if diff := cmp.Diff(tt.want, r.Error+": "+r.ErrorDescription); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.body, diff)
		}
	}
}

// A resource with a trailing slash names the same resource; the grant binds
// the canonical form, which Verify checks exactly.
func TestResourceTrailingSlash(t *testing.T) {
	e := newEnv(t)
	id, secret := e.register(t, `{"redirect_uris":["`+redirect+`"]}`)
	cfg := e.config(id, secret)
	v := oauth2.GenerateVerifier()
	slash := oauth2.SetAuthURLParam("resource", e.resource()+"/")
	code, errc := outcome(t, e.consent(t, cfg.AuthCodeURL("s", oauth2.S256ChallengeOption(v), slash), "alice", "allow", nil))
	if errc != "" {
		t.Fatal(errc)
	}
	tok, err := cfg.Exchange(context.Background(), code, oauth2.VerifierOption(v), slash)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.as.Verify(context.Background(), tok.AccessToken, e.resource()); err != nil {
		t.Errorf("Verify: %v", err)
	}
}
