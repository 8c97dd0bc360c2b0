package dashboard_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/console"
	"github.com/capabilities-sh/capabilities/engine/dashboard"
	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/identity"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/secret"
	"github.com/capabilities-sh/capabilities/engine/source"
	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/capabilities-sh/capabilities/store"
)

// nextPerson makes the provider's next ID tokens name sub, with an email
// address and a name made from it.
func nextPerson(t testing.TB, p *testenv.IDP, sub string) {
	t.Helper()
	p.Next(t, map[string]any{"sub": sub, "email": sub + "@example.com", "name": sub})
}

// tenantHub is one tenant's hub in a temporary home with one real upstream,
// the scripted MCP server as namespace "up" (echo reads, record writes),
// reviewed, with a credential.
type tenantHub struct {
	h     *hub.Hub
	calls string // the upstream appends a line per call it acts on
}

func newTenantHub(t testing.TB) *tenantHub {
	t.Helper()
	dir := t.TempDir()
	st, _, err := store.Init(filepath.Join(dir, "hub"))
	if err != nil {
		t.Fatal(err)
	}
	th := &tenantHub{calls: filepath.Join(dir, "calls.jsonl")}
	th.h = hub.New(st, hub.Options{
		Logger:  slog.New(slog.DiscardHandler),
		Secrets: secret.NewMemory(nil),
		Source:  source.Options{ConnectTimeout: testenv.Timeout(30 * time.Second), CallTimeout: testenv.Timeout(60 * time.Second)},
	})
	t.Cleanup(th.h.Close)
	ctx := context.Background()
	p, err := th.h.Propose(ctx, hub.AddRequest{
		Command:   testenv.Scripted(t),
		Namespace: "up",
		SecretEnv: "SCRIPTED_TOKEN",
		Env:       map[string]string{"SCRIPTED_TOOLS": "4", "SCRIPTED_CALLS": th.calls, "SCRIPTED_STATE": filepath.Join(dir, "state.json")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := th.h.Accept(ctx, p); err != nil {
		t.Fatal(err)
	}
	r, err := th.h.PendingReview(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := th.h.AcceptReview(ctx, r, nil, "test"); err != nil {
		t.Fatal(err)
	}
	if _, err := th.h.Auth(ctx, hub.AuthRequest{Namespace: "up", Value: "sk-dashboard-test-1a2b3c4d"}); err != nil {
		t.Fatal(err)
	}
	return th
}

// pending runs code that must pause on a write and returns the run's id.
func (th *tenantHub) pending(t testing.TB, code string) string {
	t.Helper()
	env, err := th.h.Execute(context.Background(), code)
	if err != nil {
		t.Fatal(err)
	}
	if env.Status != string(model.RunAwaitingApproval) || len(env.Pending) == 0 {
		t.Fatalf("the run did not wait for a decision: %s %+v", env.Status, env.Error)
	}
	return env.RunID
}

func (th *tenantHub) upstreamCalls(t testing.TB) int {
	t.Helper()
	b, err := os.ReadFile(th.calls)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

func (th *tenantHub) run(t testing.TB, id string) *model.Run {
	t.Helper()
	runs, err := th.h.Runs()
	if err != nil {
		t.Fatal(err)
	}
	r, err := runs.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// server is the hosted hub's front as engine/hosted mounts it: the
// identity routes beside the dashboard at "/", over plain HTTP on loopback
// (the RP allows it there), one hub per tenant.
type server struct {
	srv     *httptest.Server
	handler http.Handler // what srv serves
	idp     *testenv.IDP
	rp      *identity.RP
	offset  atomic.Int64 // added to the session clock
	logs    *testenv.Buffer

	mu     sync.Mutex
	hubs   map[string]*tenantHub
	opened map[string]int // Hub calls by tenant
}

const sessionTTL = time.Hour

func newServer(t testing.TB) *server {
	t.Helper()
	s := &server{idp: testenv.StartIDP(t), hubs: map[string]*tenantHub{}, opened: map[string]int{}, logs: &testenv.Buffer{}}
	var handler http.Handler = http.NotFoundHandler()
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.ServeHTTP(w, r) }))
	t.Cleanup(s.srv.Close)
	secretFile := filepath.Join(t.TempDir(), "idp-secret")
	if err := os.WriteFile(secretFile, []byte("idp-client-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(s.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	rp, err := identity.New(context.Background(), identity.Config{
		Issuer: s.idp.Issuer, ClientID: "hub", ClientSecretFile: secretFile,
		PublicURL: s.srv.URL, Key: key, SessionTTL: sessionTTL, Logger: log,
		Now: func() time.Time { return time.Now().Add(time.Duration(s.offset.Load())) },
	})
	if err != nil {
		t.Fatal(err)
	}
	s.rp = rp
	d, err := dashboard.New(dashboard.Config{RP: rp, PublicURL: s.srv.URL, Hub: s.hub, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/signin", rp.Handler())
	mux.Handle("/signin/", rp.Handler())
	mux.Handle("/signout", rp.Handler())
	mux.Handle("/", d)
	handler = mux
	s.handler = mux
	return s
}

// tenant is the hub of the person with this subject at the test's provider,
// made on first use.
func (s *server) tenant(t testing.TB, sub string) (string, *tenantHub) {
	t.Helper()
	id := identity.TenantID(s.idp.Issuer, sub)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hubs[id] == nil {
		s.hubs[id] = newTenantHub(t)
	}
	return id, s.hubs[id]
}

// hub is dashboard.Config.Hub: only the tenants the test made have a hub.
func (s *server) hub(_ context.Context, tenant string) (*hub.Hub, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.opened[tenant]++
	th := s.hubs[tenant]
	if th == nil {
		return nil, os.ErrNotExist
	}
	return th.h, nil
}

// browser is a person's browser: a cookie jar, redirects followed.
type browser struct {
	t    testing.TB
	s    *server
	c    *http.Client
	csrf string
}

func (s *server) browser(t testing.TB) *browser {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &browser{t: t, s: s, c: &http.Client{Jar: jar, Timeout: testenv.Timeout(30 * time.Second)}}
}

// signIn opens the dashboard, which sends the browser through the provider
// and back, signed in as sub; then reads the CSRF token as the page does.
func (b *browser) signIn(sub string) {
	b.t.Helper()
	nextPerson(b.t, b.s.idp, sub)
	resp, err := b.c.Get(b.s.srv.URL + "/")
	if err != nil {
		b.t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Request.URL.String() != b.s.srv.URL+"/" || !strings.Contains(string(page), `<script type="module" src="/app.js">`) {
		b.t.Fatalf("signing in through the dashboard: %s at %s:\n%s", resp.Status, resp.Request.URL, page)
	}
	var sess console.Session
	b.getJSON("/api/session", &sess)
	if sess.CSRF == "" || sess.Channel != "dashboard" {
		b.t.Fatalf("the session: %+v; want a CSRF token and the channel dashboard", sess)
	}
	b.csrf = sess.CSRF
}

// do sends a request as the page does (same-origin, Origin on a POST, the
// CSRF token), then applies mods.
func (b *browser) do(method, path string, body any, mods ...func(*http.Request)) (int, []byte) {
	b.t.Helper()
	var rd io.Reader
	if body != nil {
		j, err := json.Marshal(body)
		if err != nil {
			b.t.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, b.s.srv.URL+path, rd)
	if err != nil {
		b.t.Fatal(err)
	}
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	if method != http.MethodGet {
		req.Header.Set("Origin", b.s.srv.URL)
		req.Header.Set("Content-Type", "application/json")
		if b.csrf != "" {
			req.Header.Set(console.CSRFHeader, b.csrf)
		}
	}
	for _, m := range mods {
		m(req)
	}
	res, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		b.t.Fatal(err)
	}
	return res.StatusCode, data
}

func (b *browser) getJSON(path string, v any) {
	b.t.Helper()
	code, data := b.do(http.MethodGet, path, nil)
	if code != http.StatusOK {
		b.t.Fatalf("GET %s: %d %s", path, code, data)
	}
	if err := json.Unmarshal(data, v); err != nil {
		b.t.Fatalf("GET %s: %v in %s", path, err, data)
	}
}
