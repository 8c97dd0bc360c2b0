package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/mcpserver"
	"github.com/capabilities-sh/capabilities/store"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkServeToolsListAfterStart20Sources: the time from starting
// `serve --stdio` (a fresh process) to the answer of tools/list, with 20
// sources configured. serve must not wait on upstreams.
func BenchmarkServeToolsListAfterStart20Sources(b *testing.B) {
	h := newHub(b)
	for i := range 20 {
		h.addScripted(fmt.Sprintf("s%02d", i), i%2 == 0)
	}
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		s := h.serveStdio()
		s.initialize()
		res := s.request("tools/list", map[string]any{})
		elapsed := time.Since(start)
		if len(toolNames(res)) != 3 {
			b.Fatalf("tools/list: %v", res)
		}
		b.StopTimer()
		b.ReportMetric(float64(elapsed.Microseconds())/1000, "ms-to-tools/list")
		s.close()
		b.StartTimer()
	}
}

// inProcess opens the hub of h in this process and connects a go-sdk client
// to its MCP server over an in-memory transport.
func inProcess(tb testing.TB, h *hubEnv) (*hub.Hub, *mcp.ClientSession) {
	tb.Helper()
	st, err := store.Open(filepath.Join(h.home, "hub"))
	if err != nil {
		tb.Fatal(err)
	}
	eng := hub.New(st, hub.Options{})
	tb.Cleanup(eng.Close)
	srv := mcpserver.New(eng, mcpserver.Options{})
	ct, stt := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := srv.MCP().Connect(ctx, stt, nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = cs.Close() })
	return eng, cs
}

// BenchmarkExecuteOverHubCall: one read tool called directly through the
// hub (what `hub call` does, without process start) against MCP execute of
// code that makes the same call, through the go-sdk client and server over
// an in-memory transport; both with a warm upstream.
func BenchmarkExecuteOverHubCall(b *testing.B) {
	h := newHub(b)
	h.addScripted("reader", false)
	eng, cs := inProcess(b, h)
	ctx := context.Background()
	args := json.RawMessage(`{"message":"hi"}`)
	if _, err := eng.Call(ctx, "reader.echo", args, ""); err != nil { // start the upstream
		b.Fatal(err)
	}
	b.Run("hub.Call", func(b *testing.B) {
		for b.Loop() {
			if _, err := eng.Call(ctx, "reader.echo", args, ""); err != nil {
				b.Fatal(err)
			}
		}
	})
	exec := func(b *testing.B, code string) {
		for b.Loop() {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "execute", Arguments: map[string]any{"code": code}})
			if err != nil || res.IsError {
				b.Fatalf("execute: %v %+v", err, res)
			}
		}
	}
	b.Run("mcp.execute-one-call", func(b *testing.B) { exec(b, `return await reader.echo({message: "hi"})`) })
	b.Run("mcp.execute-trivial", func(b *testing.B) { exec(b, `return 1`) })
	b.Run("mcp.search", func(b *testing.B) {
		for b.Loop() {
			if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "search", Arguments: map[string]any{"query": "echo a message"}}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkExecuteWarmMCP: MCP execute with a warm runtime ready, new code
// every 8 ms, through the go-sdk client and server in this process (both
// sides' JSON and the in-memory transport count), trivial code and code
// making one upstream call. It reports the p50s.
func BenchmarkExecuteWarmMCP(b *testing.B) {
	h := newHub(b)
	h.addScripted("reader", false)
	_, cs := inProcess(b, h)
	ctx := context.Background()
	var trivial, oneCall []time.Duration
	exec := func(code string) time.Duration {
		time.Sleep(8 * time.Millisecond)
		start := time.Now()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "execute", Arguments: map[string]any{"code": code}})
		d := time.Since(start)
		if err != nil || res.IsError {
			b.Fatalf("execute: %v %+v", err, res)
		}
		return d
	}
	i := 0
	for b.Loop() {
		i++
		trivial = append(trivial, exec(fmt.Sprintf("return %d", i)))
		oneCall = append(oneCall, exec(fmt.Sprintf(`return await reader.echo({message: "hi %d"})`, i)))
	}
	p50 := func(d []time.Duration) float64 {
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		return float64(d[len(d)/2].Microseconds()) / 1000
	}
	b.ReportMetric(p50(trivial), "trivial-p50-ms")
	b.ReportMetric(p50(oneCall), "one-call-p50-ms")
}

type bearer struct {
	token string
	next  http.RoundTripper
}

func (t bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+t.token)
	return t.next.RoundTrip(r)
}

// TestHTTPLoad: 32 concurrent go-sdk clients, each with its own session on
// `serve --http`, make 1,000 executes (each one upstream call) between
// them: no errors; p50/p99 latency and throughput are logged (recorded in
// docs/bench-mcp.md, not asserted). -short does 200.
func TestHTTPLoad(t *testing.T) {
	t.Parallel()
	const clients = 32
	total := 1000
	if testing.Short() {
		total = 200
	}
	h := newHub(t)
	h.addScripted("reader", false)
	url, token := h.serveHTTP()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	hc := &http.Client{Transport: bearer{token, http.DefaultTransport}}

	sessions := make([]*mcp.ClientSession, clients)
	for i := range sessions {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: fmt.Sprintf("load-%d", i), Version: "1"}, nil).
			Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc, DisableStandaloneSSE: true}, nil)
		if err != nil {
			t.Fatalf("client %d: %v", i, err)
		}
		defer cs.Close()
		sessions[i] = cs
	}
	var (
		next    atomic.Int64
		mu      sync.Mutex
		lat     []time.Duration
		errs    []string
		wg      sync.WaitGroup
		started = time.Now()
	)
	for i := range clients {
		wg.Add(1)
		go func(cs *mcp.ClientSession) {
			defer wg.Done()
			for next.Add(1) <= int64(total) {
				t0 := time.Now()
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "execute", Arguments: map[string]any{"code": `return await reader.echo({message: "load"})`}})
				d := time.Since(t0)
				mu.Lock()
				lat = append(lat, d)
				if err != nil {
					errs = append(errs, err.Error())
				} else if res.IsError {
					b, _ := json.Marshal(res.Content)
					errs = append(errs, string(b))
				}
				mu.Unlock()
			}
		}(sessions[i])
	}
	wg.Wait()
	wall := time.Since(started)
	if len(errs) > 0 {
		t.Fatalf("%d of %d executes failed; first: %s", len(errs), total, errs[0])
	}
	if len(lat) != total {
		t.Fatalf("%d executes, want %d", len(lat), total)
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	pct := func(p float64) time.Duration { return lat[int(p*float64(len(lat)-1))] }
	t.Logf("HTTP load: %d clients, %d executes, 0 errors, p50 %v, p99 %v, max %v, wall %v, %.0f executes/s",
		clients, total, pct(0.50).Round(10*time.Microsecond), pct(0.99).Round(10*time.Microsecond), lat[len(lat)-1].Round(10*time.Microsecond), wall.Round(time.Millisecond), float64(total)/wall.Seconds())
}
