package hub_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/oauth"
	"github.com/capabilities-sh/capabilities/engine/secret"
	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/capabilities-sh/capabilities/store"
)

// oauthServer is testdata/upstreams/oauth-resource.mjs: oauth2-mock-server
// and a resource server checking its tokens in front of server-everything.
// oauthServer is testenv's OAuth server, with its admin endpoints' counts.
type oauthServer struct{ *testenv.OAuthServer }

type oauthStats struct {
	Authorizations int      `json:"authorizations"`
	CodeGrants     int      `json:"codeGrants"`
	RefreshGrants  int      `json:"refreshGrants"`
	Refused        int      `json:"refused"`
	Resources      []string `json:"resources"`
	Scopes         []string `json:"scopes"`
	Seen           []string `json:"seen"`
}

func startOAuthServer(t testing.TB) *oauthServer {
	t.Helper()
	return &oauthServer{testenv.StartOAuthServer(t)}
}

func (s *oauthServer) admin(t *testing.T, what string) {
	t.Helper()
	resp, err := http.Post(s.Admin+"/"+what, "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
}

func (s *oauthServer) stats(t *testing.T) oauthStats {
	t.Helper()
	resp, err := http.Get(s.Admin + "/stats")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st oauthStats
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	return st
}

// followRedirects "opens" the authorization page: an HTTP client follows
// the authorization server's redirect to the hub's loopback listener, as a
// browser would once the person approved.
func followRedirects(u string) error {
	go func() {
		resp, err := http.Get(u)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	return nil
}

// BenchmarkTokenRefreshMockServer measures one refresh of a real sign-in
// against oauth2-mock-server (Node, RS256-signed JWTs) through
// oauth.Source: the lock, reading the stored tokens, the token request with
// the resource parameter, parsing, saving.
func BenchmarkTokenRefreshMockServer(b *testing.B) {
	srv := startOAuthServer(b)
	ctx := context.Background()
	tk, err := oauth.SignIn(ctx, oauth.Options{ServerURL: srv.MCP, ClientID: "bench", Open: followRedirects})
	if err != nil {
		b.Fatal(err)
	}
	st := oauth.NewMemoryStore(tk)
	src := oauth.NewSource(tk, st, oauth.SourceOptions{})
	cur := tk.AccessToken
	b.ResetTimer()
	for b.Loop() {
		nt, err := src.Refresh(ctx, cur)
		if err != nil {
			b.Fatal(err)
		}
		cur = nt.AccessToken
	}
}

// recordingSecrets remembers every value stored, to look for it later.
type recordingSecrets struct {
	secret.Store
	mu     sync.Mutex
	values []string
}

func (r *recordingSecrets) Set(ctx context.Context, ref, v string) error {
	r.mu.Lock()
	if tk, ok := oauth.Parse(v); ok {
		r.values = append(r.values, tk.Secrets()...)
	} else {
		r.values = append(r.values, v)
	}
	r.mu.Unlock()
	return r.Store.Set(ctx, ref, v)
}

// TestOAuthSignInJourney: an MCP server behind a real OAuth authorization
// server is added (it answers 401, so it is added with no tools and needs a
// sign-in), signed in to with a pre-registered public client (PKCE, the
// resource parameter on every authorization and token request), and called
// through execute. A second process whose tokens are near expiry refreshes
// them before its call; when the server stops accepting the access token
// (401) the hub refreshes once and the call succeeds; when the refresh token
// is revoked the run waits for a connection, saying to sign in again, and
// runs once the person did. No token is ever in the store's files, the
// run's envelope or the logs.
func TestOAuthSignInJourney(t *testing.T) {
	t.Parallel()
	srv := startOAuthServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(60*time.Second))
	defer cancel()
	dir := filepath.Join(t.TempDir(), "hub")
	st, _, err := store.Init(dir)
	if err != nil {
		t.Fatal(err)
	}
	secrets := &recordingSecrets{Store: secret.NewMemory(nil)}
	var logs testenv.Buffer
	h := hub.New(st, hub.Options{Secrets: secrets, Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	t.Cleanup(h.Close)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("hub log:\n%s", logs.String())
		}
	})

	p, err := h.Propose(ctx, hub.AddRequest{URL: srv.MCP, Namespace: "acme"})
	if err != nil {
		t.Fatalf("adding a server that wants a sign-in: %v", err)
	}
	if !p.SignIn || p.Source.Auth != model.AuthOAuth || len(p.Manifest.Tools) != 0 {
		t.Fatalf("proposal: signIn %v auth %q tools %d; want a sign-in, no tools", p.SignIn, p.Source.Auth, len(p.Manifest.Tools))
	}
	if err := h.Accept(ctx, p); err != nil {
		t.Fatal(err)
	}
	needs, err := h.SignInNeeded(ctx)
	if err != nil || len(needs) != 1 || needs[0].Namespace != "acme" {
		t.Fatalf("SignInNeeded before signing in = %+v, %v", needs, err)
	}

	if _, err := h.SignIn(ctx, hub.SignInRequest{Namespace: "acme", ClientID: "hub-test", Open: followRedirects}); err != nil {
		t.Fatalf("signing in: %v", err)
	}
	if needs, _ := h.SignInNeeded(ctx); len(needs) != 0 {
		t.Errorf("SignInNeeded after signing in = %+v", needs)
	}
	if ch, err := h.Refresh(ctx, "acme"); err != nil || ch[0].Error != "" || ch[0].Tools == 0 {
		t.Fatalf("listing the tools once signed in: %+v %v", ch, err)
	}
	r, err := h.PendingReview(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	if err := h.AcceptReview(ctx, r, nil, "test"); err != nil {
		t.Fatal(err)
	}
	echo := func(h *hub.Hub, msg string) *hub.Envelope {
		t.Helper()
		env, err := h.Execute(ctx, `return await acme.echo({message: "`+msg+`"})`)
		if err != nil {
			t.Fatalf("execute: %v", err)
		}
		return env
	}
	envs := []*hub.Envelope{}
	if env := echo(h, "one"); env.Status != "completed" || !strings.Contains(string(env.Result), "one") {
		t.Fatalf("a call once signed in: %+v", env)
	} else {
		envs = append(envs, env)
	}
	s := srv.stats(t)
	if s.CodeGrants != 1 || s.RefreshGrants != 0 {
		t.Errorf("after the sign-in: %d code grants, %d refreshes; want 1, 0", s.CodeGrants, s.RefreshGrants)
	}
	for _, want := range []string{"authorize:" + srv.MCP, "authorization_code:" + srv.MCP} {
		if !contains(s.Resources, want) {
			t.Errorf("no request with resource %s: %v", want, s.Resources)
		}
	}

	// The stored access token expires (its expiry is set in the past); a
	// second process (same store and keychain) refreshes it once, before
	// its call goes out.
	v, err := secrets.Get(ctx, "acme/default")
	if err != nil {
		t.Fatal(err)
	}
	tk, ok := oauth.Parse(v)
	if !ok || tk.RefreshToken == "" || tk.Expiry.IsZero() {
		t.Fatalf("the stored token set: ok %v, refresh token %v, expiry %v", ok, tk != nil && tk.RefreshToken != "", tk != nil && !tk.Expiry.IsZero())
	}
	tk.Expiry = time.Now().Add(-time.Minute)
	if err := secrets.Store.Set(ctx, "acme/default", tk.Marshal()); err != nil {
		t.Fatal(err)
	}
	h2 := hub.New(st, hub.Options{Secrets: secrets})
	t.Cleanup(h2.Close)
	if env := echo(h2, "two"); env.Status != "completed" {
		t.Fatalf("a call near expiry: %+v", env)
	} else {
		envs = append(envs, env)
	}
	if s := srv.stats(t); s.RefreshGrants != 1 || !contains(s.Resources, "refresh_token:"+srv.MCP) {
		t.Errorf("near expiry: %d refreshes (resources %v); want 1 with the resource", s.RefreshGrants, s.Resources)
	}

	// The server stops accepting every access token issued so far: the
	// first process's call gets a 401, adopts or refreshes, and succeeds.
	srv.admin(t, "expire")
	before := srv.stats(t).RefreshGrants
	if env := echo(h, "three"); env.Status != "completed" {
		t.Fatalf("a call after the server expired the token: %+v", env)
	} else {
		envs = append(envs, env)
	}
	if got := srv.stats(t).RefreshGrants - before; got != 1 {
		t.Errorf("after a 401: %d refreshes, want 1", got)
	}

	// Revoked: the refresh token is refused. The run waits for a sign-in.
	srv.admin(t, "revoke")
	env := echo(h, "four")
	if env.Status != "awaiting_connection" {
		t.Fatalf("a call after the refresh token was revoked: %+v", env)
	}
	b, _ := json.Marshal(env)
	if !strings.Contains(string(b), "sign in again: capabilities hub auth acme") {
		t.Errorf("the envelope does not say to sign in again: %s", b)
	}
	envs = append(envs, env)
	if needs, _ := h.SignInNeeded(ctx); len(needs) != 1 || needs[0].Connection != "default" || !strings.Contains(needs[0].Reason, "refused the refresh token") {
		t.Errorf("SignInNeeded after the revocation = %+v", needs)
	}
	if again, err := h.Resume(ctx, env.RunID); err != nil || again.Status != "awaiting_connection" {
		t.Errorf("a resume before signing in again: %v %+v", err, again)
	}
	if _, err := h.SignIn(ctx, hub.SignInRequest{Namespace: "acme", ClientID: "hub-test", Open: followRedirects}); err != nil {
		t.Fatalf("signing in again: %v", err)
	}
	env, err = h.Resume(ctx, env.RunID)
	if err != nil || env.Status != "completed" || !strings.Contains(string(env.Result), "four") {
		t.Fatalf("the run once signed in again: %v %+v", err, env)
	}
	envs = append(envs, env)
	if again := echo(h2, "five"); again.Status != "completed" {
		t.Errorf("the other process after the new sign-in: %+v", again)
	}

	// I1: no token in the store's files, the envelopes or the logs; each
	// one the hub holds is scrubbed.
	secrets.mu.Lock()
	values := append([]string(nil), secrets.values...)
	secrets.mu.Unlock()
	values = append(values, srv.stats(t).Seen...)
	if len(values) < 6 {
		t.Fatalf("only %d token values recorded", len(values))
	}
	for _, x := range []*hub.Hub{h, h2} { // the records of the runs that just ended, written
		runs, _ := x.Runs()
		runs.Flush()
	}
	var all bytes.Buffer
	_ = filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			b, _ := os.ReadFile(p)
			all.Write(b)
		}
		return nil
	})
	for _, e := range envs {
		b, _ := json.Marshal(e)
		all.Write(b)
	}
	all.WriteString(logs.String())
	for _, v := range values {
		if strings.Contains(all.String(), v) {
			t.Errorf("a token (%d bytes) is in the store, an envelope or the logs", len(v))
		}
	}
	v, _ = secrets.Get(ctx, "acme/default")
	cur, ok := oauth.Parse(v)
	if !ok {
		t.Fatal("the connection's secret is not a token set")
	}
	for _, v := range cur.Secrets() {
		if got := h.Scrub("x " + v + " y"); strings.Contains(got, v) {
			t.Errorf("the hub does not scrub a current token: %q", got)
		}
	}
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// TestOAuthOpenAPISignIn: an OpenAPI source whose document declares an
// oauth2 authorization code flow (at oauth2-mock-server) is signed in to
// with the document's endpoints (no discovery, no resource parameter); the
// operation then runs
// with the token, a token the API stops accepting is refreshed once, and a
// revoked sign-in makes the call wait again, saying to sign in again.
func TestOAuthOpenAPISignIn(t *testing.T) {
	t.Parallel()
	srv := startOAuthServer(t)
	api := strings.TrimSuffix(srv.MCP, "/mcp") + "/api"
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(60*time.Second))
	defer cancel()
	st, _, err := store.Init(filepath.Join(t.TempDir(), "hub"))
	if err != nil {
		t.Fatal(err)
	}
	h := hub.New(st, hub.Options{Secrets: secret.NewMemory(nil)})
	t.Cleanup(h.Close)
	p := addReviewed(t, h, hub.AddRequest{Document: api + "/openapi.json"})[0]
	ns := p.Source.Namespace

	// Before anyone signs in: the source is one to sign in to, and its
	// secured operation waits for the connection (never sent without a token).
	if p.Source.Auth != model.AuthOAuth {
		t.Errorf("the source's auth is %q, want %q (its document's only scheme is oauth2)", p.Source.Auth, model.AuthOAuth)
	}
	if needs, err := h.SignInNeeded(ctx); err != nil || len(needs) != 1 || needs[0].Namespace != ns {
		t.Errorf("SignInNeeded before signing in: %+v %v, want %s", needs, err, ns)
	}
	if env, err := h.Execute(ctx, `return await `+ns+`.whoami({})`); err != nil || env.Status != "awaiting_connection" {
		t.Fatalf("the operation before signing in: %v %+v, want awaiting_connection", err, env)
	}

	if _, err := h.SignIn(ctx, hub.SignInRequest{Namespace: ns, ClientID: "hub-test", Open: followRedirects}); err != nil {
		t.Fatalf("signing in with the document's flow: %v", err)
	}
	env, err := h.Execute(ctx, `return await `+ns+`.whoami({})`)
	if err != nil || env.Status != "completed" || !strings.Contains(string(env.Result), `"sub":"johndoe"`) {
		t.Fatalf("the operation once signed in: %v %+v", err, env)
	}
	s := srv.stats(t)
	if s.CodeGrants != 1 || !contains(s.Resources, "authorize:") || !contains(s.Resources, "authorization_code:") || !contains(s.Scopes, "read:me") {
		t.Errorf("the sign-in: %d code grants, resources %v, scopes %v; want 1, none sent, the flow's read:me", s.CodeGrants, s.Resources, s.Scopes)
	}

	srv.admin(t, "expire")
	if env, err := h.Execute(ctx, `return await `+ns+`.whoami({})`); err != nil || env.Status != "completed" {
		t.Fatalf("after the API stopped accepting the token: %v %+v", err, env)
	}
	if got := srv.stats(t).RefreshGrants; got != 1 {
		t.Errorf("%d refreshes after a 401, want 1", got)
	}

	srv.admin(t, "revoke")
	env, err = h.Execute(ctx, `return await `+ns+`.whoami({})`)
	if err != nil || env.Status != "awaiting_connection" {
		t.Fatalf("after the sign-in was revoked: %v %+v", err, env)
	}
	if b, _ := json.Marshal(env); !strings.Contains(string(b), "sign in again: capabilities hub auth "+ns) {
		t.Errorf("the envelope does not say to sign in again: %s", b)
	}
}
