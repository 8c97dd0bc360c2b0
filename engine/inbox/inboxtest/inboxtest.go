// Package inboxtest serves engine/inbox over real hubs for tests: one hub
// per tenant, each on its own in-memory store with the scripted MCP server
// as namespace "up" (echo reads, record writes), behind go-sdk's bearer
// middleware with fixed tokens. engine/inbox's tests and the desktop app's
// use it.
package inboxtest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/inbox"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/secret"
	"github.com/capabilities-sh/capabilities/engine/source"
	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/capabilities-sh/capabilities/store"
	"github.com/modelcontextprotocol/go-sdk/auth"
)

// Tenant is one tenant's hub.
type Tenant struct {
	ID    string
	Hub   *hub.Hub
	Store store.Store
	calls string // the upstream appends a line per call it acts on
}

// Server is the inbox served over the tenants' hubs.
type Server struct {
	URL     string
	Tenants map[string]*Tenant
	Logs    *testenv.Buffer

	srv     *httptest.Server
	mu      sync.Mutex
	revoked map[string]bool
}

// DropStreams closes every client's connection (an event stream ends, as
// when a proxy or the network drops it).
func (s *Server) DropStreams() { s.srv.CloseClientConnections() }

// Token is tenant's bearer token with the scope "hub"; MCPToken one with
// the scope "mcp" only.
func Token(tenant string) string    { return "tok-hub-" + tenant }
func MCPToken(tenant string) string { return "tok-mcp-" + tenant }

// New starts the inbox over a hub per tenant named, each on its own
// in-memory store.
func New(t testing.TB, opts inbox.Options, tenants ...string) *Server {
	t.Helper()
	return NewOn(t, opts, func(testing.TB, string) store.Store { return store.NewMem() }, tenants...)
}

// NewOn starts the inbox over a hub per tenant named, each on the store
// stores gives it (a PostgreSQL tenant view, in the hosted hub's shape).
// Like the hosted server, each hub follows its decisions (FinishDecided).
func NewOn(t testing.TB, opts inbox.Options, stores func(t testing.TB, tenant string) store.Store, tenants ...string) *Server {
	t.Helper()
	s := &Server{Tenants: map[string]*Tenant{}, Logs: &testenv.Buffer{}, revoked: map[string]bool{}}
	log := slog.New(slog.NewTextHandler(s.Logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	dir := t.TempDir()
	for _, id := range tenants {
		s.Tenants[id] = newTenant(t, id, stores(t, id), filepath.Join(dir, id+"-calls.jsonl"), log)
	}
	hubFor := s.HubFor
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		s.mu.Lock()
		revoked := s.revoked[token]
		s.mu.Unlock()
		if revoked {
			return nil, fmt.Errorf("verifying the token: revoked: %w", auth.ErrInvalidToken)
		}
		exp := time.Now().Add(time.Hour)
		for id := range s.Tenants {
			switch token {
			case Token(id):
				return &auth.TokenInfo{UserID: id, Scopes: []string{"mcp", inbox.Scope}, Expiration: exp}, nil
			case MCPToken(id):
				return &auth.TokenInfo{UserID: id, Scopes: []string{"mcp"}, Expiration: exp}, nil
			}
		}
		return nil, fmt.Errorf("verifying the token: unknown: %w", auth.ErrInvalidToken)
	}
	if opts.Logger == nil {
		opts.Logger = log
	}
	h := auth.RequireBearerToken(verify, nil)(inbox.New(hubFor, opts))
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	s.URL, s.srv = srv.URL, srv
	return s
}

// HubFor is the tenant's hub, as hosted.Server.Hub gives it (to mount
// the inbox behind another middleware: a real authorization server's).
func (s *Server) HubFor(_ context.Context, tenant string) (*hub.Hub, error) {
	tn, ok := s.Tenants[tenant]
	if !ok {
		return nil, fmt.Errorf("opening the hub of tenant %q: no such tenant", tenant)
	}
	return tn.Hub, nil
}

// Revoke makes token refused from now on (a person signed out).
func (s *Server) Revoke(token string) {
	s.mu.Lock()
	s.revoked[token] = true
	s.mu.Unlock()
}

func newTenant(t testing.TB, id string, st store.Store, calls string, log *slog.Logger) *Tenant {
	t.Helper()
	h := hub.New(st, hub.Options{
		Logger:  log.With("tenant", id),
		Secrets: secret.NewMemory(nil),
		Source:  source.Options{ConnectTimeout: testenv.Timeout(30 * time.Second), CallTimeout: testenv.Timeout(60 * time.Second)},
	})
	t.Cleanup(h.Close)
	fctx, stop := context.WithCancel(context.Background())
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		if err := h.FinishDecided(fctx); err != nil {
			log.Warn("following decisions", "tenant", id, "err", err)
		}
	}()
	t.Cleanup(func() { stop(); <-finished })
	ctx := context.Background()
	p, err := h.Propose(ctx, hub.AddRequest{
		Command:   testenv.Scripted(t),
		Namespace: "up",
		Env:       map[string]string{"SCRIPTED_TOOLS": "4", "SCRIPTED_CALLS": calls},
	})
	if err != nil {
		t.Fatal(err)
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
	return &Tenant{ID: id, Hub: h, Store: st, calls: calls}
}

// Pending runs code that must pause on a write, and returns the run's id
// and its pending call.
func (tn *Tenant) Pending(t testing.TB, code string) (run, call string) {
	t.Helper()
	env, err := tn.Hub.Execute(context.Background(), code)
	if err != nil {
		t.Fatal(err)
	}
	if env.Status != string(model.RunAwaitingApproval) || len(env.Pending) == 0 {
		t.Fatalf("the run did not wait for a decision: %s %+v", env.Status, env.Error)
	}
	return env.RunID, env.Pending[0].ID
}

// Run reads a run's record.
func (tn *Tenant) Run(t testing.TB, id string) *model.Run {
	t.Helper()
	eng, err := tn.Hub.Runs()
	if err != nil {
		t.Fatal(err)
	}
	r, err := eng.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// UpstreamCalls counts the calls the tenant's upstream acted on.
func (tn *Tenant) UpstreamCalls(t testing.TB) int {
	t.Helper()
	b, err := os.ReadFile(tn.calls)
	if errors.Is(err, os.ErrNotExist) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}
