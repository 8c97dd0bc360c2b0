package oauth_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/oauth"
	"github.com/google/go-cmp/cmp"
)

// asMeta is authorization server metadata for a test server at base.
func asMeta(base string, extra map[string]any) map[string]any {
	m := map[string]any{
		"issuer":                           base,
		"authorization_endpoint":           base + "/authorize",
		"token_endpoint":                   base + "/token",
		"response_types_supported":         []string{"code"},
		"code_challenge_methods_supported": []string{"S256"},
	}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// TestDiscover: where protected resource metadata and authorization
// server metadata are looked for, in which order, and what is refused.
func TestDiscover(t *testing.T) {
	t.Parallel()
	type want struct {
		Resource string
		Issuer   string
		Token    string
		Legacy   bool
		Fallback bool
		Scopes   []string
	}
	tests := []struct {
		name string
		// routes answers GET path → JSON body (status 200), given the
		// server's base URL; missing paths are 404.
		routes     func(base string) map[string]any
		challenge  func(base string) oauth.Challenge
		serverPath string
		want       func(base string) want
		wantErr    string
	}{
		{
			name: "challenge's resource_metadata, then RFC 8414 at the root",
			routes: func(b string) map[string]any {
				return map[string]any{
					"/meta/prm": map[string]any{"resource": b + "/mcp", "authorization_servers": []string{b}, "scopes_supported": []string{"a", "b"}},
					"/.well-known/oauth-authorization-server": asMeta(b, nil),
				}
			},
			challenge: func(b string) oauth.Challenge {
				return oauth.Challenge{Bearer: true, ResourceMetadata: b + "/meta/prm"}
			},
			want: func(b string) want {
				return want{Resource: b + "/mcp", Issuer: b, Token: b + "/token", Scopes: []string{"a", "b"}}
			},
		},
		{
			name: "path-inserted well-known PRM; issuer with a path: path-inserted AS metadata",
			routes: func(b string) map[string]any {
				return map[string]any{
					"/.well-known/oauth-protected-resource/mcp":       map[string]any{"resource": b + "/mcp", "authorization_servers": []string{b + "/tenant1"}},
					"/.well-known/oauth-authorization-server/tenant1": asMeta(b+"/tenant1", nil),
				}
			},
			want: func(b string) want {
				return want{Resource: b + "/mcp", Issuer: b + "/tenant1", Token: b + "/tenant1/token"}
			},
		},
		{
			name: "root PRM covering the server's path; OpenID discovery as the fallback",
			routes: func(b string) map[string]any {
				return map[string]any{
					"/.well-known/oauth-protected-resource": map[string]any{"resource": b + "/", "authorization_servers": []string{b + "/idp"}},
					"/idp/.well-known/openid-configuration": asMeta(b+"/idp", nil),
				}
			},
			want: func(b string) want {
				return want{Resource: b + "/", Issuer: b + "/idp", Token: b + "/idp/token"}
			},
		},
		{
			name: "no PRM (2025-03-26): the server's origin is the authorization server",
			routes: func(b string) map[string]any {
				return map[string]any{"/.well-known/oauth-authorization-server": asMeta(b+"/oauth", nil)}
			},
			want: func(b string) want {
				return want{Resource: b + "/mcp", Issuer: b + "/oauth", Token: b + "/oauth/token", Legacy: true}
			},
		},
		{
			name:   "no metadata at all (2025-03-26): the default endpoints",
			routes: func(string) map[string]any { return nil },
			want: func(b string) want {
				return want{Resource: b + "/mcp", Issuer: b, Token: b + "/token", Legacy: true, Fallback: true}
			},
		},
		{
			name: "PRM for another origin is refused",
			routes: func(b string) map[string]any {
				return map[string]any{"/.well-known/oauth-protected-resource/mcp": map[string]any{"resource": "https://evil.example.com/mcp", "authorization_servers": []string{b}}}
			},
			wantErr: "not for this server",
		},
		{
			name: "PRM for another path of the same origin is refused",
			routes: func(b string) map[string]any {
				return map[string]any{"/.well-known/oauth-protected-resource/mcp": map[string]any{"resource": b + "/other", "authorization_servers": []string{b}}}
			},
			wantErr: "not for this server",
		},
		{
			name: "an AS without PKCE is refused",
			routes: func(b string) map[string]any {
				m := asMeta(b, nil)
				delete(m, "code_challenge_methods_supported")
				return map[string]any{
					"/.well-known/oauth-protected-resource/mcp": map[string]any{"resource": b + "/mcp", "authorization_servers": []string{b}},
					"/.well-known/oauth-authorization-server":   m,
				}
			},
			wantErr: "PKCE",
		},
		{
			name: "an AS offering only plain PKCE is refused",
			routes: func(b string) map[string]any {
				return map[string]any{
					"/.well-known/oauth-protected-resource/mcp": map[string]any{"resource": b + "/mcp", "authorization_servers": []string{b}},
					"/.well-known/oauth-authorization-server":   asMeta(b, map[string]any{"code_challenge_methods_supported": []string{"plain"}}),
				}
			},
			wantErr: "S256",
		},
		{
			name: "PRM naming no authorization server",
			routes: func(b string) map[string]any {
				return map[string]any{"/.well-known/oauth-protected-resource/mcp": map[string]any{"resource": b + "/mcp"}}
			},
			wantErr: "names no authorization server",
		},
		{
			name: "AS metadata naming another issuer",
			routes: func(b string) map[string]any {
				return map[string]any{
					"/.well-known/oauth-protected-resource/mcp": map[string]any{"resource": b + "/mcp", "authorization_servers": []string{b}},
					"/.well-known/oauth-authorization-server":   asMeta("https://elsewhere.example.com", nil),
				}
			},
			wantErr: "does not match",
		},
		{
			name: "an AS at a plain-http remote address is refused",
			routes: func(b string) map[string]any {
				return map[string]any{"/.well-known/oauth-protected-resource/mcp": map[string]any{"resource": b + "/mcp", "authorization_servers": []string{"http://as.example.com"}}}
			},
			wantErr: "must use https",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var base string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if body, ok := tc.routes(base)[r.URL.Path]; ok {
					writeJSON(w, body)
					return
				}
				http.NotFound(w, r)
			}))
			defer srv.Close()
			base = srv.URL
			ch := oauth.Challenge{Bearer: true}
			if tc.challenge != nil {
				ch = tc.challenge(base)
			}
			md, err := oauth.Discover(context.Background(), srv.Client(), base+"/mcp", ch)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Discover error = %v, want one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := want{Resource: md.Resource, Issuer: md.AS.Issuer, Token: md.AS.TokenEndpoint, Legacy: md.Legacy, Fallback: md.Fallback, Scopes: md.ScopesSupported}
			if diff := cmp.Diff(tc.want(base), got); diff != "" {
				t.Errorf("Discover (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseChallenge(t *testing.T) {
	t.Parallel()
	tests := []struct {
		header string
		want   oauth.Challenge
	}{
		{`Bearer resource_metadata="https://x/.well-known/oauth-protected-resource", scope="a b"`, oauth.Challenge{Bearer: true, ResourceMetadata: "https://x/.well-known/oauth-protected-resource", Scopes: []string{"a", "b"}}},
		{`Bearer error="insufficient_scope", scope="write"`, oauth.Challenge{Bearer: true, Error: "insufficient_scope", Scopes: []string{"write"}}},
		{`Basic realm="x"`, oauth.Challenge{}},
		{`Bearer`, oauth.Challenge{Bearer: true}},
		{`Bearer scope="unterminated`, oauth.Challenge{}},
	}
	for _, tc := range tests {
		h := http.Header{}
		h.Set("WWW-Authenticate", tc.header)
		if diff := cmp.Diff(tc.want, oauth.ParseChallenge(h)); diff != "" {
			t.Errorf("ParseChallenge(%q) (-want +got):\n%s", tc.header, diff)
		}
	}
}

// tokenServer is a token endpoint that hands out access-N and refresh-N,
// refusing refresh tokens it did not issue last (rotation) or after revoke.
type tokenServer struct {
	*httptest.Server
	n        atomic.Int64
	mu       sync.Mutex
	live     string // the refresh token that works
	revoked  bool
	lastForm map[string][]string
}

func newTokenServer(t testing.TB) *tokenServer {
	ts := &tokenServer{live: "refresh-0"}
	ts.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		ts.mu.Lock()
		defer ts.mu.Unlock()
		ts.lastForm = r.PostForm
		if r.PostForm.Get("grant_type") != "refresh_token" || ts.revoked || r.PostForm.Get("refresh_token") != ts.live {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"error":"invalid_grant","error_description":"revoked"}`)
			return
		}
		n := ts.n.Add(1)
		ts.live = fmt.Sprintf("refresh-%d", n)
		writeJSON(w, map[string]any{"access_token": fmt.Sprintf("access-%d", n), "token_type": "Bearer", "expires_in": 3600, "refresh_token": ts.live})
	}))
	t.Cleanup(ts.Close)
	return ts
}

func startTokens(ts *tokenServer, origin string, expiry time.Time) *oauth.Tokens {
	return &oauth.Tokens{Kind: oauth.Kind, AccessToken: "access-0", RefreshToken: "refresh-0", Expiry: expiry, TokenURL: ts.URL, AuthStyle: "none", ClientID: "hub", Resource: origin + "/mcp", Origin: origin, Grant: "g1"}
}

// TestSourceRefreshes: a token near expiry is refreshed before use (with
// the resource parameter), a fresh one is not, the rotated refresh token is
// saved, and a refused refresh token asks for a new sign-in.
func TestSourceRefreshes(t *testing.T) {
	t.Parallel()
	ts := newTokenServer(t)
	st := &oauth.MemoryStore{}
	now := time.Now()
	src := oauth.NewSource(startTokens(ts, "http://mcp.test:80", now.Add(30*time.Second)), st, oauth.SourceOptions{})
	tk, err := src.Token(context.Background())
	if err != nil || tk.AccessToken != "access-1" || tk.RefreshToken != "refresh-1" {
		t.Fatalf("a token expiring within the skew: %+v, %v; want access-1 / refresh-1", tk, err)
	}
	if got := ts.lastForm["resource"]; len(got) != 1 || got[0] != "http://mcp.test:80/mcp" {
		t.Errorf("the refresh request's resource = %v", got)
	}
	if got := ts.lastForm["client_id"]; len(got) != 1 || got[0] != "hub" {
		t.Errorf("a public client's refresh carries client_id = %v", got)
	}
	if st.Saves() != 1 || st.Tokens().RefreshToken != "refresh-1" {
		t.Errorf("saved %d times, refresh token %q; want 1, refresh-1", st.Saves(), st.Tokens().RefreshToken)
	}
	if tk, _ := src.Token(context.Background()); tk.AccessToken != "access-1" || ts.n.Load() != 1 {
		t.Errorf("a fresh token was refreshed again: %s after %d refreshes", tk.AccessToken, ts.n.Load())
	}
	ts.mu.Lock()
	ts.revoked = true
	ts.mu.Unlock()
	_, err = src.Refresh(context.Background(), "access-1")
	if !errors.Is(err, oauth.ErrSignInRequired) || st.Reason() == "" {
		t.Fatalf("a revoked refresh token: %v (recorded %q); want a sign-in error, recorded", err, st.Reason())
	}
	if src.SignInErr() == nil {
		t.Error("SignInErr is nil after a refused refresh")
	}
}

// TestSourceAdoptsAnotherProcessRefresh: two sources over one store (two
// processes) refresh once between them; the second uses what the first
// stored without asking the authorization server.
func TestSourceAdoptsAnotherProcessRefresh(t *testing.T) {
	t.Parallel()
	ts := newTokenServer(t)
	st := &oauth.MemoryStore{}
	start := startTokens(ts, "http://mcp.test:80", time.Now().Add(10*time.Second))
	_ = st.Save(context.Background(), start)
	a := oauth.NewSource(start, st, oauth.SourceOptions{})
	b := oauth.NewSource(start, st, oauth.SourceOptions{})
	var wg sync.WaitGroup
	got := make([]string, 2)
	for i, s := range []*oauth.Source{a, b} {
		wg.Go(func() {
			tk, err := s.Token(context.Background())
			if err != nil {
				t.Error(err)
				return
			}
			got[i] = tk.AccessToken
		})
	}
	wg.Wait()
	if ts.n.Load() != 1 || got[0] != "access-1" || got[1] != "access-1" {
		t.Errorf("two processes: %d refreshes, tokens %v; want 1, both access-1", ts.n.Load(), got)
	}
}

// TestTransportOrigin: the token goes only to its origin — not to another
// host, not to another port, not after a redirect to another origin — and
// a 401 is answered with one refresh and one retry.
func TestTransportOrigin(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	seen := map[string][]string{} // server → Authorization headers
	record := func(name string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			seen[name] = append(seen[name], r.Header.Get("Authorization"))
			mu.Unlock()
		})
	}
	other := httptest.NewServer(record("other"))
	defer other.Close()
	var refuse atomic.Bool
	mcp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen["mcp"] = append(seen["mcp"], r.Header.Get("Authorization"))
		mu.Unlock()
		switch {
		case r.URL.Path == "/redirect":
			http.Redirect(w, r, other.URL+"/landed", http.StatusFound)
		case refuse.Load() && r.Header.Get("Authorization") == "Bearer access-0":
			w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
			w.WriteHeader(http.StatusUnauthorized)
		default:
			b, _ := io.ReadAll(r.Body)
			_, _ = w.Write(b)
		}
	}))
	defer mcp.Close()
	ts := newTokenServer(t)
	origin, _ := oauth.OriginOf(mcp.URL)
	src := oauth.NewSource(startTokens(ts, origin, time.Now().Add(time.Hour)), &oauth.MemoryStore{}, oauth.SourceOptions{})
	hc := &http.Client{Transport: &oauth.Transport{Source: src}}

	get := func(u string) {
		t.Helper()
		resp, err := hc.Get(u)
		if err != nil {
			t.Fatalf("GET %s: %v", u, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	get(mcp.URL + "/mcp")
	get(other.URL + "/direct")
	get(mcp.URL + "/redirect")
	// Same host, another port: another origin.
	get(strings.Replace(other.URL, "127.0.0.1", "localhost", 1) + "/by-name")

	mu.Lock()
	want := map[string][]string{"mcp": {"Bearer access-0", "Bearer access-0"}, "other": {"", "", ""}}
	if diff := cmp.Diff(want, seen); diff != "" {
		t.Errorf("Authorization headers seen (-want +got):\n%s", diff)
	}
	seen = map[string][]string{}
	mu.Unlock()

	refuse.Store(true)
	resp, err := hc.Post(mcp.URL+"/mcp", "application/json", strings.NewReader(`{"n":1}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != `{"n":1}` || ts.n.Load() != 1 {
		t.Errorf("after a 401: status %d body %q, %d refreshes; want 200, the body sent again, 1", resp.StatusCode, body, ts.n.Load())
	}
	mu.Lock()
	if diff := cmp.Diff([]string{"Bearer access-0", "Bearer access-1"}, seen["mcp"]); diff != "" {
		t.Errorf("a 401 then a retry with the refreshed token (-want +got):\n%s", diff)
	}
	mu.Unlock()
}

// TestTransportSignInRequired: without an interactive Challenge, a token
// the server keeps refusing after a refresh fails the request with a
// sign-in error rather than a 401 answer.
func TestTransportSignInRequired(t *testing.T) {
	t.Parallel()
	mcp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
		w.WriteHeader(http.StatusUnauthorized)
	}))
	defer mcp.Close()
	ts := newTokenServer(t)
	origin, _ := oauth.OriginOf(mcp.URL)
	src := oauth.NewSource(startTokens(ts, origin, time.Now().Add(time.Hour)), &oauth.MemoryStore{}, oauth.SourceOptions{})
	hc := &http.Client{Transport: &oauth.Transport{Source: src}}
	_, err := hc.Get(mcp.URL + "/mcp")
	if !errors.Is(err, oauth.ErrSignInRequired) {
		t.Fatalf("GET with a token the server refuses: %v; want a sign-in error", err)
	}
	if ts.n.Load() != 1 {
		t.Errorf("%d refreshes, want exactly 1", ts.n.Load())
	}
}

func TestOrigin(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"https://Example.COM/mcp":       "https://example.com:443",
		"https://example.com:443/x":     "https://example.com:443",
		"http://127.0.0.1:8080/mcp?x=1": "http://127.0.0.1:8080",
		"http://[::1]/mcp":              "http://[::1]:80",
	} {
		got, err := oauth.OriginOf(in)
		if err != nil || got != want {
			t.Errorf("OriginOf(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := oauth.OriginOf("/relative"); err == nil {
		t.Error("OriginOf accepted a relative URL")
	}
}

// BenchmarkTokenRefresh measures one refresh through Source: the lock,
// reading the stored tokens, the POST to a token endpoint on loopback
// (httptest), parsing and saving.
func BenchmarkTokenRefresh(b *testing.B) {
	ts := newTokenServer(b)
	st := &oauth.MemoryStore{}
	start := startTokens(ts, "http://mcp.test:80", time.Now().Add(time.Hour))
	_ = st.Save(context.Background(), start)
	src := oauth.NewSource(start, st, oauth.SourceOptions{})
	ctx := context.Background()
	cur := "access-0"
	b.ResetTimer()
	for b.Loop() {
		tk, err := src.Refresh(ctx, cur)
		if err != nil {
			b.Fatal(err)
		}
		cur = tk.AccessToken
	}
}

// FuzzParse: a stored secret is read as a token set only when it is one, a
// WWW-Authenticate header never makes the parser panic, and a token set
// survives storing.
func FuzzParse(f *testing.F) {
	f.Add(`{"kind":"oauth","accessToken":"a","refreshToken":"r","origin":"https://x:443","grant":"g"}`, `Bearer resource_metadata="https://x/.well-known/oauth-protected-resource", scope="a b"`)
	f.Add(`ghp_plainstatictoken`, `Basic realm="x", Bearer error="insufficient_scope"`)
	f.Add(`{"kind":"other"}`, `Bearer scope="unterminated`)
	f.Fuzz(func(t *testing.T, value, header string) {
		if tk, ok := oauth.Parse(value); ok {
			if tk.Kind != oauth.Kind {
				t.Fatalf("Parse accepted kind %q", tk.Kind)
			}
			again, ok := oauth.Parse(tk.Marshal())
			if !ok || !cmp.Equal(tk, again) {
				t.Fatalf("a token set changed when stored: %+v → %+v", tk, again)
			}
		}
		h := http.Header{}
		h.Set("WWW-Authenticate", header)
		ch := oauth.ParseChallenge(h)
		if !ch.Bearer && (ch.ResourceMetadata != "" || ch.Scopes != nil || ch.Error != "") {
			t.Fatalf("a challenge without Bearer has parameters: %+v", ch)
		}
	})
}
