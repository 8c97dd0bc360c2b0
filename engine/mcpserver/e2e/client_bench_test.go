package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/capabilities-sh/capabilities/store"
)

// BenchmarkTSClient measures the hub the way an agent meets it: the
// TypeScript SDK 1.x client (testdata/clients/bench_client.mjs) starting
// `hub serve --stdio`, or talking to a running `hub serve --http`, over hubs
// of three sizes. Every hub has the scripted upstream as "up" (the tool
// called through execute, and directly for the floor); "1-source" has
// nothing else, "corpus" adds the 19 corpus servers' manifests (501 tools),
// "10k-tools" adds the corpus 20 times under renamed namespaces (380
// namespaces, 10,020 tools). Those sources are never started: trivial code
// and search do not need them. "19-live" is "corpus" with 18 more scripted
// upstreams (live1…live18), and all 19 scripted ones are called once
// before the series, so 19 upstreams are live while they run (issue 38:
// an execute should cost the same with 1 or 19 live, and upstreams a run
// does not call should see no traffic from it); over stdio it also reports
// the CPU time the upstreams used during the series (upstream-cpu-ms). "1-source-5000-runs" is "1-source" with the
// history of a busy week: 5,000 finished runs, which no process has pruned
// in the last hour (each start is the hour's first, so its first execute
// starts the automatic prune).
//
// Reported per run (the script starts a fresh process each time, so the
// first execute is included): start → tools/list, the first execute, and
// p50/p90 of trivial executes, one-call executes, search and the direct call,
// back to back and with BENCH_GAP_MS (50) between calls; BENCH_N (30) each.
//
//	go test ./engine/mcpserver/e2e -run '^$' -bench BenchmarkTSClient -benchtime 1x -count 3
//
// Each iteration is a start: with -benchtime 2x the second start finds the
// namespaces the first one kept (see ageStore).
func BenchmarkTSClient(b *testing.B) {
	for _, size := range []struct {
		name   string
		copies int
		runs   int
		live   int
	}{{"1-source", 0, 0, 1}, {"1-source-5000-runs", 0, 5000, 1}, {"corpus", 1, 0, 1}, {"19-live", 1, 0, 19}, {"10k-tools", 20, 0, 1}} {
		h := newHub(b)
		h.addScripted("up", false)
		live := []string{"up.echo"}
		for i := 1; i < size.live; i++ {
			ns := "live" + strconv.Itoa(i)
			h.addScripted(ns, false)
			live = append(live, ns+".echo")
		}
		addCorpusCopies(b, h, size.copies)
		addRuns(b, h, size.runs)
		ageStore(b, h)
		for _, mode := range []string{"stdio", "http"} {
			b.Run(size.name+"/"+mode, func(b *testing.B) {
				env := []string{"BENCH_TOOL=up.echo"}
				if size.live > 1 {
					env = append(env, "BENCH_LIVE="+strings.Join(live, ","))
				}
				direct, _ := json.Marshal(testenv.Scripted(b))
				env = append(env, "BENCH_DIRECT="+string(direct))
				if mode == "http" {
					url, token := h.serveHTTP()
					env = append(env, "BENCH_URL="+url, "BENCH_TOKEN="+token)
				}
				for b.Loop() {
					if err := os.Remove(filepath.Join(h.home, "hub", "blobs", "runs-pruned.json")); err != nil && !errors.Is(err, fs.ErrNotExist) {
						b.Fatal(err)
					}
					var res benchResult
					h.client(&res, env, "bench_client.mjs")
					res.report(b)
				}
			})
		}
	}
}

type benchStats struct {
	N        int
	P50, P90 float64
	Min, Max float64
}

type benchResult struct {
	StartMs        float64
	FirstExecuteMs float64
	UpstreamCPUMs  *float64 `json:"upstreamCpuMs"`
	Series         map[string]benchStats
}

func (r benchResult) report(b *testing.B) {
	b.ReportMetric(r.StartMs, "start-ms")
	b.ReportMetric(r.FirstExecuteMs, "first-execute-ms")
	names := make([]string, 0, len(r.Series))
	for name := range r.Series {
		names = append(names, name)
	}
	sort.Strings(names)
	line := fmt.Sprintf("start %.1f ms, first execute %.1f ms", r.StartMs, r.FirstExecuteMs)
	if r.UpstreamCPUMs != nil {
		b.ReportMetric(*r.UpstreamCPUMs, "upstream-cpu-ms")
		line += fmt.Sprintf(", upstreams' CPU during the series %.0f ms", *r.UpstreamCPUMs)
	}
	for _, name := range names {
		s := r.Series[name]
		b.ReportMetric(s.P50, name+"-p50-ms")
		b.ReportMetric(s.P90, name+"-p90-ms")
		line += fmt.Sprintf("; %s p50 %.2f p90 %.2f (min %.2f, max %.2f, n %d)", name, s.P50, s.P90, s.Min, s.Max, s.N)
	}
	b.Log(line)
}

// ageStore dates the hub's sources and manifests an hour back, as on a hub
// whose sources were added long before serve starts: serve keeps the
// namespaces of a quiet store for its next start (engine/hub/nscache.go),
// so with -benchtime 2x the second start's first execute does not wait for
// the catalog.
func ageStore(tb testing.TB, h *hubEnv) {
	tb.Helper()
	past := time.Now().Add(-time.Hour)
	for _, k := range []store.Kind{store.Sources, store.Manifests} {
		if err := os.Chtimes(filepath.Join(h.home, "hub", string(k)), past, past); err != nil {
			tb.Fatal(err)
		}
	}
}

// addRuns writes n finished runs into the hub's store, one a minute back
// from now (all within the retention).
func addRuns(tb testing.TB, h *hubEnv, n int) {
	tb.Helper()
	if n == 0 {
		return
	}
	st, err := store.Open(filepath.Join(h.home, "hub"))
	if err != nil {
		tb.Fatal(err)
	}
	defer st.Close()
	testenv.PutFinishedRuns(tb, st, n)
}

// addCorpusCopies writes the corpus's manifests into the hub's store, copies
// times (the second copy's namespaces end in 1, …), as sources that would run
// "node server.js" if anything started them.
func addCorpusCopies(tb testing.TB, h *hubEnv, copies int) {
	tb.Helper()
	if copies == 0 {
		return
	}
	st, err := store.Open(filepath.Join(h.home, "hub"))
	if err != nil {
		tb.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	for k := range copies {
		for _, m := range testenv.CorpusManifests(tb) {
			ns := m.Namespace
			if k > 0 {
				ns += strconv.Itoa(k)
			}
			src := model.Source{Namespace: ns, Kind: model.KindStdio, Command: "node", Args: []string{"server.js"}}
			if err := st.Put(ctx, store.Sources, ns, src); err != nil {
				tb.Fatal(err)
			}
			tools := make([]model.Tool, len(m.Tools))
			for i, t := range m.Tools {
				_, name, _ := model.SplitAddress(t.Address)
				t.Address = ns + "." + name
				tools[i] = t
			}
			m.Namespace, m.Tools = ns, tools
			if err := st.Put(ctx, store.Manifests, ns, hub.Manifest{Manifest: m, Health: "ok", CheckedAt: time.Now()}); err != nil {
				tb.Fatal(err)
			}
		}
	}
}
