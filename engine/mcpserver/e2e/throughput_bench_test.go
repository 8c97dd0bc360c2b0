package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/mcpserver"
	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/capabilities-sh/capabilities/store"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkHTTPThroughput: 32 go-sdk clients, each with its own session on
// `hub serve --http`, make BENCH_N (1,000) executes between them as fast as
// they are answered, after 64 to warm up: trivial code (`return 1`) and code
// making one upstream call. It reports executes/s and the p50/p90/p99
// latency each client saw, over the whole load and in its steady state
// (the executes that started once the first 64 were answered: the load
// starts with all 32 clients sending at the same instant, a burst that
// queues 32 executes at once), and fails when an execute fails (a
// timeout_compute included: trivial code queued behind others must wait
// for its turn, not run out of time).
//
// With BENCH_INPROCESS=1 the hub is served in this process (the same
// handler `serve --http` mounts), so -cpuprofile covers the server (its
// packages are engine/, store/, go-sdk's server side and net/http's):
//
//	go test ./engine/mcpserver/e2e -run '^$' -bench HTTPThroughput -benchtime 1x -count 3
//	BENCH_INPROCESS=1 go test ./engine/mcpserver/e2e -run '^$' -bench 'HTTPThroughput/trivial' -benchtime 1x -cpuprofile /tmp/cpu.out
func BenchmarkHTTPThroughput(b *testing.B) {
	const clients = 32
	total := 1000
	if n, err := strconv.Atoi(os.Getenv("BENCH_N")); err == nil && n > 0 {
		total = n
	}
	h := newHub(b)
	h.addScripted("reader", false)
	var url, token string
	if os.Getenv("BENCH_INPROCESS") == "1" {
		url, token = serveHTTPInProcess(b, h)
	} else {
		url, token = h.serveHTTP()
	}
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(5*time.Minute))
	defer cancel()
	hc := &http.Client{Transport: bearer{token, &http.Transport{MaxIdleConnsPerHost: clients}}}
	sessions := make([]*mcp.ClientSession, clients)
	for i := range sessions {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: fmt.Sprintf("load-%d", i), Version: "1"}, nil).
			Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc, DisableStandaloneSSE: true}, nil)
		if err != nil {
			b.Fatalf("client %d: %v", i, err)
		}
		defer cs.Close()
		sessions[i] = cs
	}
	for _, c := range []struct{ name, code string }{
		{"trivial", `return 1`},
		{"one-call", `return await reader.echo({message: "load"})`},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				load(ctx, b, sessions, c.code, 64) // warm-up: runtimes, the upstream, sessions
				r := load(ctx, b, sessions, c.code, total)
				b.ReportMetric(r.rate, "executes/s")
				b.ReportMetric(ms(r.pct(0.50)), "p50-ms")
				b.ReportMetric(ms(r.pct(0.90)), "p90-ms")
				b.ReportMetric(ms(r.pct(0.99)), "p99-ms")
				b.ReportMetric(r.steadyRate, "steady-executes/s")
				b.ReportMetric(ms(r.steadyPct(0.99)), "steady-p99-ms")
				b.Logf("%d clients, %d executes of %s: %.0f/s, p50 %.1f p90 %.1f p99 %.1f max %.1f ms, %d failed; steady (the %d that started after the first %d answers): %.0f/s, p50 %.1f p90 %.1f p99 %.1f ms",
					clients, total, c.name, r.rate, ms(r.pct(0.50)), ms(r.pct(0.90)), ms(r.pct(0.99)), ms(r.lat[len(r.lat)-1]), len(r.errs),
					len(r.steady), 2*clients, r.steadyRate, ms(r.steadyPct(0.50)), ms(r.steadyPct(0.90)), ms(r.steadyPct(0.99)))
			}
		})
	}
}

type loadResult struct {
	lat  []time.Duration // sorted
	errs []string
	rate float64 // executes per second
	// steady is lat of the executes that started once every client had
	// had two answered, sorted, and steadyRate their rate: the load
	// without its start, when all the clients send their first execute at
	// the same instant (a burst no steady load has).
	steady     []time.Duration
	steadyRate float64
}

// steadyPct is the p-th quantile of r.steady.
func (r loadResult) steadyPct(p float64) time.Duration {
	return r.steady[int(p*float64(len(r.steady)-1))]
}

func (r loadResult) pct(p float64) time.Duration { return r.lat[int(p*float64(len(r.lat)-1))] }

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// load makes total executes of code from all sessions at once, each session
// sending its next as soon as its last is answered. Every failed execute
// fails b.
func load(ctx context.Context, b *testing.B, sessions []*mcp.ClientSession, code string, total int) loadResult {
	b.Helper()
	var (
		next atomic.Int64
		mu   sync.Mutex
		r    loadResult
		wg   sync.WaitGroup
	)
	type span struct{ start, end time.Duration }
	var spans []span
	started := time.Now()
	for _, cs := range sessions {
		wg.Go(func() {
			for next.Add(1) <= int64(total) {
				t0 := time.Now()
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "execute", Arguments: map[string]any{"code": code}})
				d := time.Since(t0)
				mu.Lock()
				r.lat = append(r.lat, d)
				spans = append(spans, span{t0.Sub(started), t0.Sub(started) + d})
				switch {
				case err != nil:
					r.errs = append(r.errs, err.Error())
				case res.IsError || !strings.Contains(fmt.Sprint(res.StructuredContent), "completed"):
					out, _ := json.Marshal(res)
					r.errs = append(r.errs, string(out))
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(started)
	r.rate = float64(total) / elapsed.Seconds()
	slices.Sort(r.lat)
	// Steady: what started after the 2×clients-th answer.
	ends := make([]time.Duration, len(spans))
	for i, sp := range spans {
		ends[i] = sp.end
	}
	slices.Sort(ends)
	if k := 2 * len(sessions); len(ends) > 4*k {
		cut := ends[k-1]
		for _, sp := range spans {
			if sp.start >= cut {
				r.steady = append(r.steady, sp.end-sp.start)
			}
		}
		slices.Sort(r.steady)
		r.steadyRate = float64(len(r.steady)) / (elapsed - cut).Seconds()
	}
	if len(r.errs) > 0 {
		b.Fatalf("%d of %d executes of %q failed; first: %s", len(r.errs), total, code, r.errs[0])
	}
	return r
}

// serveHTTPInProcess serves h's hub over HTTP from this process, as `hub
// serve --http` does (Prepare, then the MCP handler with a bearer token).
func serveHTTPInProcess(tb testing.TB, h *hubEnv) (url, token string) {
	tb.Helper()
	dir := filepath.Join(h.home, "hub")
	st, err := store.Open(dir)
	if err != nil {
		tb.Fatal(err)
	}
	eng := hub.New(st, hub.Options{})
	tb.Cleanup(eng.Close)
	ctx, cancel := context.WithCancel(context.Background())
	eng.Prepare(ctx)
	srv := mcpserver.New(eng, mcpserver.Options{})
	token, _, err = mcpserver.HTTPToken(dir)
	if err != nil {
		tb.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.ServeHTTP(ctx, ln, token, mcpserver.HTTPLimits{})
	}()
	tb.Cleanup(func() { cancel(); <-done; srv.Close() })
	return "http://" + ln.Addr().String() + "/mcp", token
}
