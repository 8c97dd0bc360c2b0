package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/oauth2"

	"github.com/capabilities-sh/capabilities/engine/hosted"
	"github.com/capabilities-sh/capabilities/engine/hosted/hostedtest"
	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/inbox"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/internal/testenv"
)

// realHosted is engine/hosted's Server as `hosted serve` mounts it (the
// inbox API behind the "hub" scope), on real PostgreSQL, people signing in
// through oauth2-mock-server, served over loopback http (which the hosted
// hub allows on loopback only) so the desktop app reaches it as is.
type realHosted struct {
	*hostedtest.Env
}

// startRealHosted starts the hosted hub; egress to 127.0.0.1 is allowed
// (--allow-egress 127.0.0.1/32), so a tenant's remote source may be a
// local server.
func startRealHosted(t testing.TB) *realHosted {
	t.Helper()
	return &realHosted{hostedtest.Start(t, hostedtest.Options{Plain: true, Allow: []string{"127.0.0.1/32"},
		Config: func(cfg *hosted.Config, _ *hostedtest.Env) {
			cfg.Inbox = func(h hosted.HubFunc) http.Handler { return inbox.Handler(h) }
		}})}
}

// browser is the person's browser at hub login's authorization URL: it
// signs in as the IdP's subject sub (the hosted hub's /signin, the mock
// IdP, /signin/callback), reads the consent page, allows, and follows the
// redirect to hub login's loopback listener.
func (r *realHosted) browser(t testing.TB, sub string) func(string) error {
	r.IDP.NextSubject(t, sub)
	return func(authURL string) error {
		loc, err := r.Consent(authURL)
		if err != nil {
			return err
		}
		go func() {
			if r, err := http.Get(loc); err == nil {
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
	h, err := r.Server.Hub(ctx, tenant)
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
	h, err := r.Server.Hub(ctx, tenant)
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
