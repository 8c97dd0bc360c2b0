package hosted_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/capabilities-sh/capabilities/engine/authserver"
	"github.com/capabilities-sh/capabilities/engine/egress"
	"github.com/capabilities-sh/capabilities/engine/hosted"
	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/secret"
	"github.com/capabilities-sh/capabilities/engine/source"
	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/capabilities-sh/capabilities/store"
)

// TestHosted runs the hosted hub's tests on one PostgreSQL server and one
// identity provider.
func TestHosted(t *testing.T) {
	in := &infra{pg: testenv.StartPostgres(t), idp: testenv.StartIDP(t)}
	for _, c := range []struct {
		name string
		f    func(*testing.T, *infra)
	}{
		{"Journey", testJourney},
		{"TenantsApart", testTenantsApart},
		{"APIMounts", testAPIMounts},
		{"EgressRefusedByDefault", testEgressRefusedByDefault},
		{"SecretsSealedPerTenant", testSecretsSealedPerTenant},
		{"IdleHubCloses", testIdleHubCloses},
		{"MaxOpen", testMaxOpen},
	} {
		t.Run(c.name, func(t *testing.T) { c.f(t, in) })
	}
}

// addEverything adds server-everything over streamable HTTP to the
// tenant's hub, its tools reviewed (as `hub push` would bring them).
func addEverything(t testing.TB, e *env, tenant, url string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h, err := e.srv.Hub(ctx, tenant)
	if err != nil {
		t.Fatal(err)
	}
	p, err := h.Propose(ctx, hub.AddRequest{Namespace: "everything", URL: url})
	if err != nil {
		t.Fatalf("adding server-everything: %v", err)
	}
	if err := h.Accept(ctx, p); err != nil {
		t.Fatal(err)
	}
	r, err := h.PendingReview(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := h.AcceptReview(ctx, r, nil, "test"); err != nil {
		t.Fatal(err)
	}
}

// testJourney: a connector registers, its person signs in through the
// identity provider and consents, it gets a token (audience /mcp, scope
// mcp), refreshes it, and runs search, describe and execute against the
// tenant's remote source; a write asks.
func testJourney(t *testing.T, in *infra) {
	everything := testenv.EverythingHTTP(t)
	e := newEnv(t, in, envOpts{allow: []string{"127.0.0.1/32"}})
	ctx := context.Background()

	// /mcp without a token: 401 pointing at the resource metadata.
	resp, err := e.tls.Get(e.url + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	chs, err := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	if resp.StatusCode != http.StatusUnauthorized || err != nil || len(chs) != 1 || chs[0].Params["resource_metadata"] != e.url+"/.well-known/oauth-protected-resource/mcp" {
		t.Fatalf("/mcp without a token: %s %v %v", resp.Status, chs, err)
	}
	prm, err := oauthex.GetProtectedResourceMetadata(ctx, chs[0].Params["resource_metadata"], e.url+"/mcp", e.tls)
	if err != nil || len(prm.AuthorizationServers) != 1 || prm.AuthorizationServers[0] != e.url {
		t.Fatalf("protected resource metadata: %+v %v", prm, err)
	}

	alice := e.signIn(t, "alice", nil)
	a := e.tenant("alice")
	g, err := e.srv.Auth().Verify(ctx, alice.tok.AccessToken, e.url+"/mcp")
	if err != nil || g.Tenant != a || strings.Join(g.Scopes, " ") != "mcp" {
		t.Fatalf("alice's grant: %+v %v (want tenant %s, scope mcp only)", g, err, a)
	}
	addEverything(t, e, a, everything)

	// Refresh: an expired access token is renewed through the refresh
	// token (rotated) by the client itself, before its first request.
	old := *alice.tok
	expired := old
	expired.Expiry = time.Now().Add(-time.Minute)
	alice.ts = alice.cfg.TokenSource(context.WithValue(ctx, oauth2.HTTPClient, e.tls), &expired)
	cs := e.mcpSession(t, alice)
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	if diff := cmp.Diff([]string{"describe", "execute", "search"}, names); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	now, err := alice.ts.Token()
	if err != nil || now.AccessToken == old.AccessToken || now.RefreshToken == old.RefreshToken {
		t.Fatalf("the client did not refresh its expired token (rotating the refresh token): %v", err)
	}
	// The spent refresh token is refused (reuse revokes the grant).
	_, err = alice.cfg.TokenSource(context.WithValue(ctx, oauth2.HTTPClient, e.tls), &expired).Token()
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) || re.ErrorCode != "invalid_grant" {
		t.Errorf("reusing a spent refresh token: %v, want invalid_grant", err)
	}
	// Reuse revoked the whole grant: sign in again.
	alice = e.signIn(t, "alice", nil)
	cs = e.mcpSession(t, alice)

	text, _ := call(t, cs, "search", map[string]any{"query": "echo a message"})
	if !strings.Contains(text, "everything.echo(") {
		t.Fatalf("search: no everything.echo:\n%s", text)
	}
	text, _ = call(t, cs, "describe", map[string]any{"targets": []string{"everything.echo"}})
	if !strings.Contains(text, "message") {
		t.Fatalf("describe everything.echo:\n%s", text)
	}
	_, env := call(t, cs, "execute", map[string]any{"code": `return await everything.echo({message: "hi"})`})
	if env == nil || env.Status != "completed" || !strings.Contains(string(env.Result), "Echo: hi") {
		t.Fatalf("execute (a read): %+v", env)
	}
	write := model.ToolIdent("toggle-simulated-logging")
	text, env = call(t, cs, "execute", map[string]any{"code": "return await everything." + write + "({})"})
	if env == nil || env.Status != "awaiting_approval" || len(env.Pending) != 1 || env.Pending[0].Address != "everything."+write {
		t.Fatalf("execute (a write) = %+v, want awaiting_approval", env)
	}
	if !strings.Contains(text, "dashboard") || strings.Contains(text, "http") || strings.Contains(text, "hub approve") {
		t.Errorf("the pending text should say the person decides in the dashboard, with no address and no terminal command (a hosted hub's person has none):\n%s", text)
	}
	// I2: no MCP path records a decision on a hosted hub: an answer to a
	// form, as an elicitation result, is refused, and the run still waits.
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "execute", Arguments: map[string]any{"resume": env.RunID},
		RequestState:   "forged",
		InputResponses: mcp.InputResponseMap{env.Pending[0].ID: &mcp.ElicitResult{Action: "accept", Content: map[string]any{"choice": "always"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || !strings.Contains(fmt.Sprint(res.Content[0].(*mcp.TextContent).Text), "does not take approvals through the client") {
		t.Errorf("a decision sent through the MCP client: %+v", res.Content)
	}
	if _, again := call(t, cs, "execute", map[string]any{"resume": env.RunID}); again == nil || again.Status != "awaiting_approval" {
		t.Errorf("after the refused answer, the run = %+v, want still awaiting_approval", again)
	}
}

// testTenantsApart (I5): tenant B, with valid tokens of its own, aims at
// tenant A's runs, handles, sessions and API; every attempt is refused,
// and so are a token for another resource and A's mcp-only token at the
// person's API.
func testTenantsApart(t *testing.T, in *infra) {
	everything := testenv.EverythingHTTP(t)
	e := newEnv(t, in, envOpts{allow: []string{"127.0.0.1/32"}, handleBytes: 64})
	ctx := context.Background()
	alice, bob := e.signIn(t, "alice", nil), e.signIn(t, "bob", []string{"mcp", "hub"})
	a, b := e.tenant("alice"), e.tenant("bob")
	if a == b {
		t.Fatal("two subjects, one tenant")
	}
	addEverything(t, e, a, everything)
	csA, csB := e.mcpSession(t, alice), e.mcpSession(t, bob)

	// A's run waiting for a decision, and a handle of A's (a result over
	// 64 bytes).
	write := model.ToolIdent("toggle-simulated-logging")
	_, pending := call(t, csA, "execute", map[string]any{"code": "return await everything." + write + "({})"})
	if pending == nil || pending.Status != "awaiting_approval" {
		t.Fatalf("A's write: %+v", pending)
	}
	secretText := "alice-only-" + strings.Repeat("x", 100)
	_, big := call(t, csA, "execute", map[string]any{"code": `const r = await everything.echo({message: "` + secretText + `"}); return r.handle`})
	var handle string
	if big == nil || big.Status != "completed" || json_unquote(big.Result, &handle) != nil || !strings.HasPrefix(handle, "handle-") {
		t.Fatalf("A's large result is not a handle: %+v", big)
	}
	// A reads its own handle: the id is right, so B's refusal below is
	// about the tenant.
	_, own := call(t, csA, "execute", map[string]any{"code": `return await hub.read("` + handle + `", {offset: 0, length: 60})`})
	if own == nil || own.Status != "completed" || !strings.Contains(string(own.Result), "alice-only") {
		t.Fatalf("A reading its own handle: %+v", own)
	}

	refusals := []struct {
		name  string
		code  map[string]any
		tool  string
		check func(text string, env *envelope) bool // true: refused
	}{
		{"resume A's run", map[string]any{"resume": pending.RunID}, "execute", func(text string, env *envelope) bool {
			return env == nil || (env.Status != "awaiting_approval" && env.Status != "completed" && len(env.Pending) == 0)
		}},
		{"read A's handle", map[string]any{"code": `return await hub.read("` + handle + `", {offset: 0, length: 60})`}, "execute", func(text string, env *envelope) bool {
			return env != nil && env.Status == "failed" && !strings.Contains(text+string(env.Result), "alice-only")
		}},
		{"search A's tools", map[string]any{"query": "echo"}, "search", func(text string, _ *envelope) bool {
			return !strings.Contains(text, "everything.")
		}},
		{"describe A's tools", map[string]any{"targets": []string{"everything.echo"}}, "describe", func(text string, _ *envelope) bool {
			return !strings.Contains(text, "declare const everything")
		}},
		{"call A's source", map[string]any{"code": `return await everything.echo({message: "from bob"})`}, "execute", func(text string, env *envelope) bool {
			return env != nil && env.Status == "failed"
		}},
	}
	for _, r := range refusals {
		text, env := call(t, csB, r.tool, r.code)
		if !r.check(text, env) {
			t.Errorf("B: %s was not refused: %q %+v", r.name, text, env)
		}
		t.Logf("B: %s: %.200s", r.name, text)
	}

	// A's MCP session (a stateful one, as a 2025-06-18 client opens), aimed
	// at with B's token: not found; with A's own, served.
	rpc := func(c *connector, session, body string) (*http.Response, string) {
		req, _ := http.NewRequest("POST", e.url+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		resp, err := e.client(c).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(b)
	}
	resp, body := rpc(alice, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"a","version":"1"}}}`)
	sessionA := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || sessionA == "" {
		t.Fatalf("A's initialize: %s %q %s", resp.Status, sessionA, body)
	}
	rpc(alice, sessionA, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	if resp, body := rpc(alice, sessionA, list); resp.StatusCode != http.StatusOK || !strings.Contains(body, "execute") {
		t.Fatalf("A in its own session: %s %s", resp.Status, body)
	}
	if resp, body := rpc(bob, sessionA, list); resp.StatusCode != http.StatusNotFound {
		t.Errorf("B with A's session id: %s %s, want 404", resp.Status, body)
	}

	// A's profile, by its name, with B's token: B has no such profile;
	// A reaches it.
	hA, err := e.srv.Hub(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	if err := hA.PutProfile(ctx, hub.Profile{Name: "alices", Mode: hub.ModeDirect, Namespaces: []string{"everything"}}, true); err != nil {
		t.Fatal(err)
	}
	profileList := func(c *connector) (*http.Response, string) {
		req, _ := http.NewRequest("POST", e.url+"/mcp/alices", strings.NewReader(list))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		resp, err := e.client(c).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(b)
	}
	if resp, body := profileList(bob); resp.StatusCode != http.StatusNotFound || !strings.Contains(body, "alices") || strings.Contains(body, "echo") {
		t.Errorf("B at A's profile /mcp/alices: %s %s, want 404", resp.Status, body)
	}
	if resp, body := profileList(alice); resp.StatusCode == http.StatusNotFound {
		t.Errorf("A at its own profile /mcp/alices: %s %s", resp.Status, body)
	}

	// A token issued for another resource, for A's tenant: refused at /mcp.
	other := "cap_at_other-resource-token-0123456789"
	sum := sha256.Sum256([]byte(other))
	if err := e.srvAuthStore().CreateTokens(ctx, authserver.Token{Hash: hex.EncodeToString(sum[:]), Kind: authserver.Access,
		ClientID: "c", Tenant: a, Resource: "https://other.example/mcp", Scope: "mcp hub", Family: "f", Expires: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	status := func(token, method, path string) int {
		req, _ := http.NewRequest(method, e.url+path, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := e.tls.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, c := range []struct {
		name, token, method, path string
		want                      int
	}{
		{"another resource's token at /mcp", other, "POST", "/mcp", http.StatusUnauthorized},
		{"another resource's token at /api/status", other, "GET", "/api/status", http.StatusUnauthorized},
		{"A's mcp token at /api/status", alice.tok.AccessToken, "GET", "/api/status", http.StatusForbidden},
		{"A's mcp token at /api/push/plan", alice.tok.AccessToken, "POST", "/api/push/plan", http.StatusForbidden},
		{"A's mcp token at /api/inbox", alice.tok.AccessToken, "GET", "/api/inbox", http.StatusForbidden},
		{"A's mcp token at /api/inbox/decide", alice.tok.AccessToken, "POST", "/api/inbox/decide", http.StatusForbidden},
		{"no token at /api/inbox/events", "", "GET", "/api/inbox/events", http.StatusUnauthorized},
		{"a made-up token at /mcp", "cap_at_madeup", "POST", "/mcp", http.StatusUnauthorized},
	} {
		if got := status(c.token, c.method, c.path); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
}

// json_unquote reads a JSON string.
func json_unquote(raw []byte, s *string) error {
	v := strings.TrimSpace(string(raw))
	if len(v) < 2 || v[0] != '"' {
		return fmt.Errorf("not a JSON string: %s", raw)
	}
	*s = strings.Trim(v, `"`)
	return nil
}

func (e *env) srvAuthStore() authserver.Store { return e.auth }

// testAPIMounts: the person's API gets the tenant from the token
// (auth.TokenInfo, scope hub) and the tenant's hub from the HubFunc; the
// dashboard is mounted at "/".
func testAPIMounts(t *testing.T, in *infra) {
	var seen atomic.Value
	e := newEnv(t, in, envOpts{mount: func(c *hosted.Config) {
		api := func(hubs hosted.HubFunc) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				ti := auth.TokenInfoFromContext(r.Context())
				h, err := hubs(r.Context(), ti.UserID)
				if err != nil {
					http.Error(w, err.Error(), 500)
					return
				}
				seen.Store(ti.UserID)
				fmt.Fprintf(w, "%s %s %v", r.URL.Path, ti.UserID, h != nil)
			})
		}
		c.Push, c.Inbox = api, api
		c.Dashboard = func(hosted.HubFunc) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "dashboard "+r.URL.Path) })
		}
	}})
	bob := e.signIn(t, "bob", []string{"hub"})
	for _, p := range []string{"/api/status", "/api/push/plan", "/api/inbox", "/api/inbox/events"} {
		resp, err := e.client(bob).Get(e.url + p)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if want := p + " " + e.tenant("bob") + " true"; resp.StatusCode != 200 || string(b) != want {
			t.Errorf("GET %s: %s %q, want %q", p, resp.Status, b, want)
		}
	}
	// A hub-only token is not an MCP token.
	resp, err := e.client(bob).Post(e.url+"/mcp", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("a hub-only token at /mcp: %s, want 403", resp.Status)
	}
	resp, err = e.tls.Get(e.url + "/inbox")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "dashboard /inbox" {
		t.Errorf("GET /inbox: %q, want the dashboard", b)
	}
}

// testEgressRefusedByDefault (I4): without --allow-egress, a source on
// 127.0.0.1 is refused at connect time, and the server sees nothing.
func testEgressRefusedByDefault(t *testing.T, in *infra) {
	var hits atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	t.Cleanup(up.Close)
	e := newEnv(t, in, envOpts{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h, err := e.srv.Hub(ctx, e.tenant("carol"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = h.Propose(ctx, hub.AddRequest{Namespace: "local", URL: up.URL + "/mcp"})
	if !errors.Is(err, egress.ErrRefused) && (err == nil || !strings.Contains(err.Error(), "refused")) {
		t.Fatalf("adding a loopback source on a hosted hub: %v, want an egress refusal", err)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the loopback server got %d requests", n)
	}
	// Stdio: refused before anything starts.
	_, err = h.Propose(ctx, hub.AddRequest{Namespace: "shell", Command: []string{"sh", "-c", "touch should-not-exist"}})
	if !errors.Is(err, source.ErrStdioRefused) || !strings.Contains(err.Error(), "stdio sources cannot run on a hosted hub; add a remote (streamable HTTP) or OpenAPI source") {
		t.Errorf("adding a stdio source: %v", err)
	}
	// A stdio source that reached the store another way (say a push)
	// does not start either.
	st := h.Store()
	if err := st.Put(ctx, store.Sources, "shell", model.Source{Namespace: "shell", Kind: model.KindStdio, Command: "sh"}); err != nil {
		t.Fatal(err)
	}
	h.Invalidate()
	ch, err := h.Refresh(ctx, "shell")
	if err == nil && (len(ch) != 1 || !strings.Contains(ch[0].Error, "stdio sources cannot run on a hosted hub")) {
		t.Errorf("refreshing a stdio source: %+v", ch)
	} else if err != nil && !strings.Contains(err.Error(), "stdio sources cannot run on a hosted hub") {
		t.Errorf("refreshing a stdio source: %v", err)
	}
}

// testSecretsSealedPerTenant: a tenant's secrets are sealed in its own
// store under the KEK, bound to the tenant.
func testSecretsSealedPerTenant(t *testing.T, in *infra) {
	e := newEnv(t, in, envOpts{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h, err := e.srv.Hub(ctx, e.tenant("dave"))
	if err != nil {
		t.Fatal(err)
	}
	sealed, ok := h.Secrets().(*secret.Sealed)
	if !ok {
		t.Fatalf("the tenant's secrets are %T, want *secret.Sealed", h.Secrets())
	}
	if err := sealed.Set(ctx, "api/work", "s3cr3t-value"); err != nil {
		t.Fatal(err)
	}
	if fp, ok, err := secret.IsSealed(ctx, h.Store()); err != nil || !ok || fp == "" {
		t.Errorf("the tenant's store holds no sealed key record: %q %v %v", fp, ok, err)
	}
	ids, err := h.Store().List(ctx, store.Blobs)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		var raw map[string]any
		if err := h.Store().Get(ctx, store.Blobs, id, &raw); err == nil {
			if b := fmt.Sprint(raw); strings.Contains(b, "s3cr3t-value") {
				t.Errorf("blob %s holds the secret in clear", id)
			}
		}
	}
}

// testMaxOpen: past MaxOpen, opening a tenant's hub closes the least
// recently used idle one, never one in use.
func testMaxOpen(t *testing.T, in *infra) {
	e := newEnv(t, in, envOpts{maxOpen: 2})
	ctx := context.Background()
	open := func(sub string) context.CancelFunc {
		c, cancel := context.WithCancel(ctx)
		if _, err := e.srv.Hub(c, e.tenant(sub)); err != nil {
			t.Fatal(err)
		}
		return cancel
	}
	waitFor := func(what string, n func() int, want int) {
		t.Helper()
		deadline := time.Now().Add(testenv.Timeout(10 * time.Second))
		for n() != want && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if got := n(); got != want {
			t.Fatalf("%d hubs %s, want %d", got, what, want)
		}
	}
	waitOpen := func(want int) { t.Helper(); waitFor("open", e.srv.Open, want) }
	inUse := open("u1")
	defer inUse()
	open("u2")() // opened and let go at once: idle
	waitOpen(2)
	waitFor("idle", e.srv.Idle, 1)
	stay := open("u3") // closes u2, the idle one
	defer stay()
	waitOpen(2)
	more := open("u4") // u1 and u3 are in use: a third stays open
	defer more()
	waitOpen(3)
}

// testIdleHubCloses: a tenant's hub unused for IdleTimeout is closed, and
// the next request opens it again over the same store.
func testIdleHubCloses(t *testing.T, in *infra) {
	e := newEnv(t, in, envOpts{idle: 50 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	h, err := e.srv.Hub(ctx, e.tenant("erin"))
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Store().Put(ctx, store.Blobs, "mark", map[string]string{"v": "1"}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if n := e.srv.Open(); n != 1 {
		t.Errorf("a hub in use was closed: %d open", n)
	}
	cancel()
	deadline := time.Now().Add(testenv.Timeout(10 * time.Second))
	for e.srv.Open() != 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := e.srv.Open(); n != 0 {
		t.Fatalf("an idle hub stayed open: %d", n)
	}
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	h2, err := e.srv.Hub(ctx2, e.tenant("erin"))
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]string
	if err := h2.Store().Get(ctx2, store.Blobs, "mark", &v); err != nil || v["v"] != "1" {
		t.Errorf("the reopened hub does not see the tenant's store: %v %v", v, err)
	}
	if _, err := e.srv.Hub(ctx2, ""); err == nil {
		t.Errorf("the empty tenant (the shared store) was served")
	}
}
