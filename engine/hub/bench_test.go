package hub_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/policy"
	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/capabilities-sh/capabilities/store"
)

// hubWith20 makes a file store holding 20 sources whose manifests are the
// corpus's real ones (19 servers, one of them twice): 501+ tools.
func hubWith20(b *testing.B) string {
	b.Helper()
	dir := filepath.Join(b.TempDir(), "hub")
	st, _, err := store.Init(dir)
	if err != nil {
		b.Fatal(err)
	}
	ms := testenv.CorpusManifests(b)
	ctx := context.Background()
	for i := 0; i < 20; i++ {
		m := ms[i%len(ms)]
		ns := m.Namespace
		if i >= len(ms) {
			ns = fmt.Sprintf("%s%d", ns, i)
		}
		src := model.Source{Namespace: ns, Kind: model.KindStdio, Command: "node", Args: []string{"server.js"}}
		if err := st.Put(ctx, store.Sources, ns, src); err != nil {
			b.Fatal(err)
		}
		m.Namespace = ns
		rec := hub.Manifest{Manifest: m, Health: "ok", CheckedAt: time.Now()}
		if err := st.Put(ctx, store.Manifests, ns, rec); err != nil {
			b.Fatal(err)
		}
	}
	return dir
}

// BenchmarkListSources20 is `hub list` on an open hub: read 20 sources and
// their cached manifests from the file store.
func BenchmarkListSources20(b *testing.B) {
	dir := hubWith20(b)
	st, err := store.Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	h := hub.New(st, hub.Options{})
	defer h.Close()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		recs, err := h.Sources(ctx)
		if err != nil || len(recs) != 20 {
			b.Fatalf("Sources = %d, %v", len(recs), err)
		}
	}
}

// BenchmarkStartToListed is a fresh process's path to a listed state: open
// the store, build the engine, read every source and tool. No upstream is
// started.
func BenchmarkStartToListed(b *testing.B) {
	dir := hubWith20(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		st, err := store.Open(dir)
		if err != nil {
			b.Fatal(err)
		}
		h := hub.New(st, hub.Options{})
		tools, err := h.Tools(ctx)
		if err != nil || len(tools) < 500 {
			b.Fatalf("Tools = %d, %v", len(tools), err)
		}
		h.Close()
	}
}

// benchHub is a hub with the scripted upstream as "up", reviewed, warm.
func benchHub(b *testing.B) *hub.Hub {
	b.Helper()
	return benchHubEnv(b, nil)
}

// benchHubEnv is benchHub with the upstream's environment.
func benchHubEnv(b *testing.B, env map[string]string) *hub.Hub {
	b.Helper()
	st, _, err := store.Init(filepath.Join(b.TempDir(), "hub"))
	if err != nil {
		b.Fatal(err)
	}
	h := hub.New(st, hub.Options{})
	b.Cleanup(h.Close)
	ctx := context.Background()
	p, err := h.Propose(ctx, hub.AddRequest{Namespace: "up", Command: testenv.Scripted(b), Env: env})
	if err != nil {
		b.Fatal(err)
	}
	if err := h.Accept(ctx, p); err != nil {
		b.Fatal(err)
	}
	r, _ := h.PendingReview(ctx, "")
	if err := h.AcceptReview(ctx, r, nil, "bench"); err != nil {
		b.Fatal(err)
	}
	// Warm: the upstream is started and the sandbox compiled.
	if env, err := h.Execute(ctx, `return await up.echo({message: "warm"})`); err != nil || env.Status != "completed" {
		b.Fatalf("warm-up: %v %+v", err, env)
	}
	return h
}

// BenchmarkHubCall is one tool call through the hub without the sandbox
// (`hub call`'s path): validation, policy-free lookup, the upstream round trip.
func BenchmarkHubCall(b *testing.B) {
	h := benchHub(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := h.Call(ctx, "up.echo", []byte(`{"message":"hi"}`), ""); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkExecuteOneCall is execute with code calling the same tool once:
// run record, sandbox attempt, policy, journal, envelope.
func BenchmarkExecuteOneCall(b *testing.B) {
	h := benchHub(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		env, err := h.Execute(ctx, `return await up.echo({message: "hi"})`)
		if err != nil || env.Status != "completed" {
			b.Fatalf("%v %+v", err, env)
		}
	}
}

// BenchmarkExecuteOneWrite is BenchmarkExecuteOneCall with a call that is
// not read-only (allowed by a rule, so nobody is asked): its intent is
// journaled and synced before it goes out, its outcome after.
func BenchmarkExecuteOneWrite(b *testing.B) {
	h := benchHubEnv(b, map[string]string{"SCRIPTED_TOOLS": "4"})
	ctx := context.Background()
	if _, err := h.SetRule(ctx, "up.record", policy.Allow, "", "bench"); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		env, err := h.Execute(ctx, `return await up.record({item: "hi"})`)
		if err != nil || env.Status != "completed" {
			b.Fatalf("%v %+v", err, env)
		}
	}
}

// BenchmarkExecuteTrivial is execute with code that calls nothing.
func BenchmarkExecuteTrivial(b *testing.B) {
	h := benchHub(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		env, err := h.Execute(ctx, `return 1 + 1`)
		if err != nil || env.Status != "completed" {
			b.Fatalf("%v %+v", err, env)
		}
	}
}

// benchWarm measures execute latency with a pre-warmed runtime ready for
// each call: calls are spaced 8 ms apart (GAP=25ms sets another pause), time
// for the warmers to rebuild. Spaced further, this VM lets its vCPUs and the
// upstream process go idle and every wake-up adds time; BENCHMARKS.md shows
// both. It reports p50 and p99.
func benchWarm(b *testing.B, code string) {
	benchWarmCode(b, func(int) string { return code })
}

// benchWarmCode is benchWarm with new code for every execute (code(i)), so
// that nothing about the code can be reused from an earlier run.
func benchWarmCode(b *testing.B, code func(i int) string) {
	benchWarmOn(b, benchHub(b), code)
}

// benchWarmOn is benchWarmCode on the hub h.
func benchWarmOn(b *testing.B, h *hub.Hub, code func(i int) string) {
	ctx := context.Background()
	benchSpaced(b, func(i int) {
		env, err := h.Execute(ctx, code(i))
		if err != nil || env.Status != "completed" {
			b.Fatalf("%v %+v", err, env)
		}
	})
}

// benchSpaced times op(i), each after a pause of gap, and reports the p50
// and p99.
func benchSpaced(b *testing.B, op func(i int)) {
	var lat []time.Duration
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		time.Sleep(gap)
		b.StartTimer()
		start := time.Now()
		op(len(lat))
		lat = append(lat, time.Since(start))
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}

func BenchmarkExecuteTrivialWarm(b *testing.B) {
	benchWarmCode(b, func(i int) string { return fmt.Sprintf("return %d + 1", i) })
}

func BenchmarkExecuteOneCallWarm(b *testing.B) {
	benchWarmCode(b, func(i int) string { return fmt.Sprintf(`return await up.echo({message: "hi %d"})`, i) })
}

// BenchmarkHubCallWarm is BenchmarkHubCall spaced as benchWarm spaces
// executes: the floor of BenchmarkExecuteOneCallWarm.
func BenchmarkHubCallWarm(b *testing.B) {
	h := benchHub(b)
	ctx := context.Background()
	benchSpaced(b, func(i int) {
		if _, err := h.Call(ctx, "up.echo", fmt.Appendf(nil, `{"message":"hi %d"}`, i), ""); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkExecuteSameCodeWarm sends the same code every time, as a model
// retrying it or a resume does.
func BenchmarkExecuteSameCodeWarm(b *testing.B) {
	benchWarm(b, `return await up.echo({message: "hi"})`)
}

// gap is the pause before each warm execute: $GAP (a Go duration), else 8 ms.
var gap = func() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("GAP")); err == nil {
		return d
	}
	return 8 * time.Millisecond
}()
