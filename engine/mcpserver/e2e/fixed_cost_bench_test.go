package e2e

import (
	"fmt"
	"os"
	"sort"
	"testing"
)

// BenchmarkFixedCost is what a request costs beyond the hub's own work, as
// the TypeScript SDK 1.x client sees it (testdata/clients/fixed_cost.mjs),
// on an empty hub: `hub serve --http` (a session, protocol 2025-11-25, the
// calls the hub answers itself: engine/mcpserver/sessioncall.go) and `hub
// serve --stdio` (the floor). For each of trivial execute, search, describe
// and ping: the mean of BENCH_N (300) back to back, the client's and the
// server's CPU a request, and the p50 of 40 requests 50 ms apart (issue 38
// item 3: each ≤ 2 ms over HTTP).
//
//	go test ./engine/mcpserver/e2e -run '^$' -bench BenchmarkFixedCost -benchtime 1x -count 3
//
// Each -count starts another serve on a new hub.
func BenchmarkFixedCost(b *testing.B) {
	for _, mode := range []string{"http", "stdio"} {
		b.Run(mode, func(b *testing.B) {
			h := newHub(b)
			env := []string{"BIN=" + binPath}
			if n := os.Getenv("BENCH_N"); n != "" {
				env = append(env, "N="+n)
			}
			if mode == "http" {
				url, token := h.serveHTTP()
				env = append(env, "URL="+url, "TOKEN="+token)
			}
			for b.Loop() {
				var res map[string]struct {
					B2bMs, ClientCPUMs, ServerCPUMs, GapP50Ms float64
				}
				h.client(&res, env, "fixed_cost.mjs")
				ops := make([]string, 0, len(res))
				for op := range res {
					ops = append(ops, op)
				}
				sort.Strings(ops)
				line := ""
				for _, op := range ops {
					r := res[op]
					b.ReportMetric(r.B2bMs, op+"-b2b-ms")
					b.ReportMetric(r.GapP50Ms, op+"-gap-p50-ms")
					b.ReportMetric(r.ClientCPUMs, op+"-client-cpu-ms")
					b.ReportMetric(r.ServerCPUMs, op+"-server-cpu-ms")
					line += fmt.Sprintf("; %s back to back %.2f, 50 ms apart %.2f, client CPU %.2f, server CPU %.2f ms", op, r.B2bMs, r.GapP50Ms, r.ClientCPUMs, r.ServerCPUMs)
				}
				b.Log(mode + line)
			}
		})
	}
}
