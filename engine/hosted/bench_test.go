package hosted_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/capabilities-sh/capabilities/engine/authserver"
	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/mcpserver"
	"github.com/capabilities-sh/capabilities/engine/secret"
	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/capabilities-sh/capabilities/store/postgres"
)

// bearer adds a fixed bearer token to each request.
type bearer struct {
	base  http.RoundTripper
	token string
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

// runExecute calls execute("return 1") b.N times on cs and reports the
// client-measured latency's median and p99 besides the mean (ns/op).
func runExecute(b *testing.B, cs *mcp.ClientSession) {
	ctx := context.Background()
	args := &mcp.CallToolParams{Name: "execute", Arguments: map[string]any{"code": "return 1"}}
	for range 3 { // warm: the sandbox, the catalog, the connection
		if res, err := cs.CallTool(ctx, args); err != nil || res.IsError {
			b.Fatalf("execute: %v %+v", err, res)
		}
	}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for b.Loop() {
		t0 := time.Now()
		res, err := cs.CallTool(ctx, args)
		lat = append(lat, time.Since(t0))
		if err != nil || res.IsError {
			b.Fatalf("execute: %v %+v", err, res)
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

// BenchmarkExecuteEndpoint: the client-measured latency of one execute
// through the hosted endpoint (HTTPS, an OAuth access token checked against
// PostgreSQL, the tenant's hub resolved) against a local serve --http
// (loopback HTTP, the hub's bearer token), both on the same database and
// the same code, which calls no upstream: the difference is the endpoint.
func BenchmarkExecuteEndpoint(b *testing.B) {
	in := &infra{pg: testenv.StartPostgres(b), idp: testenv.StartIDP(b)}
	e := newEnv(b, in, envOpts{})

	b.Run("hosted-oauth-tls", func(b *testing.B) {
		c := e.signIn(b, "bench", nil)
		runExecute(b, e.mcpSession(b, c))
	})

	for _, sealed := range []bool{false, true} {
		name := "local-serve-http"
		if sealed {
			name += "-sealed"
		}
		b.Run(name, func(b *testing.B) { benchLocal(b, in, sealed) })
	}
}

// benchLocal is serve --http's endpoint on a PostgreSQL store; sealed
// keeps its secrets sealed in the store as the hosted hub's are.
func benchLocal(b *testing.B, in *infra, sealed bool) {
	ctx := context.Background()
	u := in.pg.NewDatabase(b)
	if err := postgres.Migrate(ctx, u); err != nil {
		b.Fatal(err)
	}
	root, err := postgres.Open(ctx, u)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { root.Close() })
	var secrets secret.Store = secret.NewMemory(nil)
	if sealed {
		kek, err := secret.NewKEK()
		if err != nil {
			b.Fatal(err)
		}
		if secrets, err = secret.OpenSealed(ctx, root.Tenant(""), "", kek); err != nil {
			b.Fatal(err)
		}
	}
	h := hub.New(root.Tenant(""), hub.Options{Secrets: secrets})
	b.Cleanup(h.Close)
	srv := mcpserver.New(h, mcpserver.Options{})
	b.Cleanup(srv.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.ServeHTTP(sctx, ln, "local-token", mcpserver.HTTPLimits{}) }()
	b.Cleanup(func() { cancel(); <-done })
	cl := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	cs, err := cl.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + ln.Addr().String() + "/mcp",
		HTTPClient: &http.Client{Transport: bearer{http.DefaultTransport, "local-token"}}, MaxRetries: -1}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cs.Close() })
	runExecute(b, cs)
}

// BenchmarkTokenValidation: what checking an access token costs on every
// request: Verify (one PostgreSQL lookup by the token's SHA-256), and the
// whole middleware in front of /mcp (go-sdk's RequireBearerToken, scopes).
func BenchmarkTokenValidation(b *testing.B) {
	in := &infra{pg: testenv.StartPostgres(b), idp: testenv.StartIDP(b)}
	e := newEnv(b, in, envOpts{})
	c := e.signIn(b, "bench", nil)
	ctx := context.Background()
	as := e.srv.Auth()

	b.Run("verify", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := as.Verify(ctx, c.tok.AccessToken, e.srv.Resource()); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("middleware", func(b *testing.B) {
		h := as.RequireScopes(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}), authserver.ScopeMCP)
		req := httptest.NewRequest("POST", e.srv.Resource(), nil)
		req.Header.Set("Authorization", "Bearer "+c.tok.AccessToken)
		b.ReportAllocs()
		for b.Loop() {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			if w.Code != http.StatusOK {
				b.Fatalf("middleware: %d %s", w.Code, w.Body)
			}
		}
	})
}
