package hostedlogin_test

import (
	"context"
	"errors"
	"fmt"
	"html"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/authserver"
	"github.com/capabilities-sh/capabilities/engine/hostedlogin"
	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/oauth"
	"github.com/capabilities-sh/capabilities/engine/push"
	"github.com/capabilities-sh/capabilities/engine/secret"
	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/capabilities-sh/capabilities/store"
	"github.com/google/go-cmp/cmp"
)

// hostedHub is a hosted hub as `hosted serve` mounts one: the
// authorization server (engine/authserver, scopes "mcp hub"), /mcp and
// push.Handler behind its middleware. The test's session is a cookie
// naming the tenant.
type hostedHub struct {
	srv *httptest.Server
	as  *authserver.Server
	mu  sync.Mutex
	hub map[string]*hub.Hub
}

func newHostedHub(t *testing.T) *hostedHub {
	t.Helper()
	hh := &hostedHub{hub: map[string]*hub.Hub{}}
	var h http.Handler
	hh.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) }))
	t.Cleanup(hh.srv.Close)
	as, err := authserver.New(authserver.Config{
		Issuer: hh.srv.URL,
		Scopes: []string{"mcp", "hub"},
		Store:  authserver.NewMemory(),
		Person: func(r *http.Request) (string, bool) {
			c, err := r.Cookie("person")
			if err != nil {
				return "", false
			}
			return c.Value, true
		},
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	hh.as = as
	mux := http.NewServeMux()
	mux.Handle("/", as.Handler())
	mux.Handle("/mcp", as.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "mcp") })))
	mux.Handle("/api/", as.Middleware(push.Handler(func(ctx context.Context, tenant string) (*hub.Hub, error) {
		hh.mu.Lock()
		defer hh.mu.Unlock()
		if x, ok := hh.hub[tenant]; ok {
			return x, nil
		}
		x := hub.New(store.NewMem(), hub.Options{Secrets: secret.NewMemory(nil)})
		t.Cleanup(x.Close)
		hh.hub[tenant] = x
		return x, nil
	})))
	h = mux
	return hh
}

var hidden = regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)">`)

// Browser is the scripted browser step: it opens the authorization page
// as the signed-in tenant, posts the consent form with decision, and
// follows the redirect to the loopback listener.
func browser(tenant, decision string) func(string) error {
	return func(authURL string) error {
		hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		req, _ := http.NewRequest("GET", authURL, nil)
		req.AddCookie(&http.Cookie{Name: "person", Value: tenant})
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		page, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("the authorization page: %s: %s", resp.Status, page)
		}
		if !strings.Contains(string(page), "hub") {
			return fmt.Errorf("the consent page does not name the scope hub:\n%s", page)
		}
		form := url.Values{"decision": {decision}}
		for _, m := range hidden.FindAllStringSubmatch(string(page), -1) {
			form.Set(m[1], html.UnescapeString(m[2]))
		}
		u, _ := url.Parse(authURL)
		origin := u.Scheme + "://" + u.Host
		req, _ = http.NewRequest("POST", origin+"/authorize", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", origin)
		req.AddCookie(&http.Cookie{Name: "person", Value: tenant})
		resp, err = hc.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusSeeOther {
			return fmt.Errorf("posting the consent: %s", resp.Status)
		}
		// The browser follows the redirect to the loopback listener (in
		// the background: SignIn is waiting for it).
		go func() {
			if r, err := http.Get(resp.Header.Get("Location")); err == nil {
				r.Body.Close()
			}
		}()
		return nil
	}
}

func TestLoginSaveLoadClientRefresh(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(time.Minute))
	defer cancel()
	hh := newHostedHub(t)
	dir := filepath.Join(t.TempDir(), "hub")
	secrets := secret.NewMemory(nil)

	l, err := hostedlogin.SignIn(ctx, hostedlogin.Options{URL: hh.srv.URL + "/", Open: browser("tn_alice", "allow")})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"mcp", "hub"}, l.Scopes); d != "" {
		t.Errorf("scopes (-want +got):\n%s", d)
	}
	if l.URL != hh.srv.URL || l.ClientID == "" || l.Tokens().RefreshToken == "" {
		t.Fatalf("login: %+v", l)
	}
	if err := hostedlogin.Save(ctx, secrets, dir, l); err != nil {
		t.Fatal(err)
	}
	// The list holds no token; the secret store does.
	data, err := os.ReadFile(filepath.Join(dir, hostedlogin.ListFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, tok := range []string{l.Tokens().AccessToken, l.Tokens().RefreshToken} {
		if strings.Contains(string(data), tok) {
			t.Fatalf("%s holds a token:\n%s", hostedlogin.ListFile, data)
		}
	}
	if fi, err := os.Stat(filepath.Join(dir, hostedlogin.ListFile)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("list file mode: %v %v", fi.Mode(), err)
	}
	list, err := hostedlogin.List(dir)
	if err != nil || len(list) != 1 || list[0].URL != hh.srv.URL || list[0].Tokens() != nil {
		t.Fatalf("list: %+v %v", list, err)
	}

	got, err := hostedlogin.Load(ctx, secrets, dir, hh.srv.URL+"/mcp")
	if err != nil {
		t.Fatal(err)
	}
	c := &push.Client{URL: got.URL, HTTP: got.Client(ctx)}
	st, err := c.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Tenant != "tn_alice" {
		t.Fatalf("status as %q", st.Tenant)
	}

	// An expired access token is refreshed (rotated) and saved.
	old := got.Tokens().AccessToken
	got.Tokens().Expiry = time.Now().Add(-time.Minute)
	c = &push.Client{URL: got.URL, HTTP: got.Client(ctx)}
	if _, err := c.Status(ctx); err != nil {
		t.Fatal(err)
	}
	again, err := hostedlogin.Load(ctx, secrets, dir, hh.srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if again.Tokens().AccessToken == old || again.Tokens().RefreshToken == l.Tokens().RefreshToken {
		t.Fatal("the tokens were not refreshed and saved")
	}

	if err := hostedlogin.Delete(ctx, secrets, dir, hh.srv.URL); err != nil {
		t.Fatal(err)
	}
	if _, err := hostedlogin.Load(ctx, secrets, dir, hh.srv.URL); !errors.Is(err, hostedlogin.ErrNotLoggedIn) {
		t.Fatalf("after delete: %v", err)
	}
	if err := hostedlogin.Delete(ctx, secrets, dir, hh.srv.URL); !errors.Is(err, hostedlogin.ErrNotLoggedIn) {
		t.Fatalf("delete twice: %v", err)
	}
}

func TestLoginDenied(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(time.Minute))
	defer cancel()
	hh := newHostedHub(t)
	_, err := hostedlogin.SignIn(ctx, hostedlogin.Options{URL: hh.srv.URL, Open: browser("tn_alice", "deny")})
	if err == nil || !strings.Contains(err.Error(), "access_denied") {
		t.Fatalf("got %v", err)
	}
}

// A revoked sign-in is a SignInError: sign in again.
func TestRevokedLoginSaysSignInAgain(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(time.Minute))
	defer cancel()
	hh := newHostedHub(t)
	dir := t.TempDir()
	secrets := secret.NewMemory(nil)
	l, err := hostedlogin.SignIn(ctx, hostedlogin.Options{URL: hh.srv.URL, Open: browser("tn_alice", "allow")})
	if err != nil {
		t.Fatal(err)
	}
	if err := hostedlogin.Save(ctx, secrets, dir, l); err != nil {
		t.Fatal(err)
	}
	// Another party uses the refresh token first (a stolen copy): the
	// rotation's reuse detection revokes the grant.
	tk := l.Tokens()
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tk.RefreshToken}, "client_id": {tk.ClientID}, "resource": {tk.Resource}}
	if tk.ClientSecret != "" {
		form.Set("client_secret", tk.ClientSecret)
	}
	resp, err := http.PostForm(tk.TokenURL, form)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("refreshing: %s", resp.Status)
	}
	// The access token expired: the refresh is what is refused.
	l.Tokens().Expiry = time.Now().Add(-time.Minute)
	if err := hostedlogin.Save(ctx, secrets, dir, l); err != nil {
		t.Fatal(err)
	}
	c := &push.Client{URL: l.URL, HTTP: l.Client(ctx)}
	if _, err := c.Status(ctx); !errors.Is(err, oauth.ErrSignInRequired) {
		t.Fatalf("after revocation: %v", err)
	}
}

func TestNormalizeURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://Hub.Example.com/":    "https://hub.example.com",
		"https://hub.example.com/mcp": "https://hub.example.com",
		"https://x.example/team/mcp/": "https://x.example/team",
		"http://127.0.0.1:8080":       "http://127.0.0.1:8080",
	} {
		if got, err := hostedlogin.NormalizeURL(in); err != nil || got != want {
			t.Errorf("%s: %q %v, want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"http://hub.example.com", "hub.example.com", "ftp://x", "https://u:p@x.example", "https://x.example/?a=1"} {
		if _, err := hostedlogin.NormalizeURL(bad); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}
