package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/oauth2"

	"github.com/capabilities-sh/capabilities/engine/authserver/pgstore"
	"github.com/capabilities-sh/capabilities/engine/egress"
	"github.com/capabilities-sh/capabilities/engine/hosted"
	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/identity"
	idstore "github.com/capabilities-sh/capabilities/engine/identity/pgstore"
	"github.com/capabilities-sh/capabilities/engine/inbox"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/secret"
	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/capabilities-sh/capabilities/store"
	"github.com/capabilities-sh/capabilities/store/postgres"
)

// realHosted is engine/hosted's Server as `hosted serve` mounts it (the
// inbox API behind the "hub" scope), on real PostgreSQL, people signing in
// through oauth2-mock-server, served over loopback http (which the hosted
// hub allows on loopback only) so the desktop app reaches it as is.
type realHosted struct {
	URL string
	Srv *hosted.Server
	IDP *testenv.IDP
}

// startRealHosted starts the hosted hub; egress to 127.0.0.1 is allowed
// (--allow-egress 127.0.0.1/32), so a tenant's remote source may be a
// local server.
func startRealHosted(t testing.TB) *realHosted {
	t.Helper()
	ctx := context.Background()
	pg := testenv.StartPostgres(t)
	idp := testenv.StartIDP(t)
	dbURL := pg.NewDatabase(t)
	if err := postgres.Migrate(ctx, dbURL); err != nil {
		t.Fatal(err)
	}
	root, err := postgres.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	var h http.Handler = http.NotFoundHandler()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) }))
	t.Cleanup(ts.Close)

	secretFile := filepath.Join(t.TempDir(), "idp-secret")
	if err := os.WriteFile(secretFile, []byte("hub-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	if testing.Verbose() {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	rp, err := identity.New(ctx, identity.Config{Issuer: idp.Issuer, ClientID: "hub", ClientSecretFile: secretFile,
		PublicURL: ts.URL, Key: bytes.Repeat([]byte{7}, 32), Store: idstore.New(root.Pool()), Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	kek, err := secret.NewKEK()
	if err != nil {
		t.Fatal(err)
	}
	guard, err := egress.Parse([]string{"127.0.0.1/32"})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := hosted.New(hosted.Config{
		PublicURL:  ts.URL,
		Stores:     func(_ context.Context, id string) (store.Store, error) { return root.Tenant(id), nil },
		KEK:        kek,
		Auth:       pgstore.New(root.Pool()),
		Identity:   rp,
		ConsentKey: bytes.Repeat([]byte{9}, 32),
		Egress:     guard,
		Inbox:      func(h hosted.HubFunc) http.Handler { return inbox.Handler(h) },
		Logger:     log,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	h = srv.Handler()
	return &realHosted{URL: ts.URL, Srv: srv, IDP: idp}
}

// Tenant is the tenant the IdP's subject sub signs in as.
func (r *realHosted) Tenant(sub string) string { return identity.TenantID(r.IDP.Issuer, sub) }

var consentInput = regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)">`)

// browser is the person's browser at hub login's authorization URL: it
// signs in as the IdP's subject sub (the hosted hub's /signin, the mock
// IdP, /signin/callback), reads the consent page, allows, and follows the
// redirect to hub login's loopback listener.
func (r *realHosted) browser(t testing.TB, sub string) func(string) error {
	r.IDP.NextSubject(t, sub)
	return func(authURL string) error {
		jar, _ := cookiejar.New(nil)
		hc := &http.Client{Jar: jar}
		res, err := hc.Get(authURL)
		if err != nil {
			return err
		}
		page, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK || !strings.Contains(string(page), `name="decision"`) {
			return fmt.Errorf("the consent page after signing in: %s: %s", res.Status, page)
		}
		form := url.Values{"decision": {"allow"}}
		for _, m := range consentInput.FindAllStringSubmatch(string(page), -1) {
			form.Set(m[1], html.UnescapeString(m[2]))
		}
		req, _ := http.NewRequest(http.MethodPost, r.URL+"/authorize", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", r.URL)
		hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		res, err = hc.Do(req)
		if err != nil {
			return err
		}
		res.Body.Close()
		if res.StatusCode != http.StatusSeeOther {
			return fmt.Errorf("posting the consent: %s", res.Status)
		}
		go func() {
			if r, err := http.Get(res.Header.Get("Location")); err == nil {
				r.Body.Close()
			}
		}()
		return nil
	}
}

// everythingWrite is the write tool of server-everything the scenario calls.
const everythingWrite = "toggle-simulated-logging"

// countedEverything is server-everything over streamable HTTP behind a
// reverse proxy that counts the tools/call requests for everythingWrite
// it passes on: how many times the upstream was asked to act.
func countedEverything(t testing.TB) (string, *atomic.Int64) {
	t.Helper()
	target, err := url.Parse(testenv.EverythingHTTP(t))
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	rp := &httputil.ReverseProxy{
		Rewrite:       func(pr *httputil.ProxyRequest) { pr.SetURL(&url.URL{Scheme: target.Scheme, Host: target.Host}) },
		FlushInterval: -1,
	}
	ps := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			b, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			if bytes.Contains(b, []byte(`"tools/call"`)) && bytes.Contains(b, []byte(`"`+everythingWrite+`"`)) {
				n.Add(1)
			}
			r.Body = io.NopCloser(bytes.NewReader(b))
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		// The hub's standing streams through the proxy end with it.
		ps.CloseClientConnections()
		ps.Close()
	})
	return ps.URL + target.Path, &n
}

// addSource adds the remote source at srcURL as namespace ns to the
// tenant's hub, its tools reviewed (as `hub push` would bring them).
func (r *realHosted) addSource(t testing.TB, tenant, ns, srcURL string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h, err := r.Srv.Hub(ctx, tenant)
	if err != nil {
		t.Fatal(err)
	}
	p, err := h.Propose(ctx, hub.AddRequest{Namespace: ns, URL: srcURL})
	if err != nil {
		t.Fatalf("adding %s: %v", srcURL, err)
	}
	if err := h.Accept(ctx, p); err != nil {
		t.Fatal(err)
	}
	rv, err := h.PendingReview(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := h.AcceptReview(ctx, rv, nil, "test"); err != nil {
		t.Fatal(err)
	}
}

// run reads a run's record from the tenant's hub.
func (r *realHosted) run(t testing.TB, tenant, id string) *model.Run {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h, err := r.Srv.Hub(ctx, tenant)
	if err != nil {
		t.Fatal(err)
	}
	eng, err := h.Runs()
	if err != nil {
		t.Fatal(err)
	}
	run, err := eng.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// executeWrite runs code through the tenant's /mcp (go-sdk's client, the
// bearer token an agent holds) and returns the run and its pending call:
// the code must pause on a write.
func (r *realHosted) executeWrite(t testing.TB, token, code string) (run, call string) {
	t.Helper()
	ctx := context.Background()
	hc := oauth2.NewClient(ctx, oauth2.StaticTokenSource(&oauth2.Token{AccessToken: token, TokenType: "Bearer"}))
	cl := mcp.NewClient(&mcp.Implementation{Name: "hosted-desktop-test", Version: "1"}, nil)
	cs, err := cl.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: r.URL + "/mcp", HTTPClient: hc, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatalf("connecting to the hosted hub's /mcp: %v", err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "execute", Arguments: map[string]any{"code": code}})
	if err != nil {
		t.Fatalf("execute: %v", err)
	}
	var env struct {
		RunID   string `json:"runId"`
		Status  string `json:"status"`
		Pending []struct{ ID, Address string }
	}
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &env); err != nil {
		t.Fatalf("execute's structured content %s: %v", b, err)
	}
	if env.Status != string(model.RunAwaitingApproval) || len(env.Pending) != 1 {
		t.Fatalf("execute = %s, want one call awaiting approval", b)
	}
	return env.RunID, env.Pending[0].ID
}
