package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// jitterHost answers gh.echo after a random delay, so results complete in a
// different order every time.
type jitterHost struct {
	mu    sync.Mutex
	calls []Call
	rng   *rand.Rand
}

func (h *jitterHost) CallTool(ctx context.Context, c Call) CallResult {
	h.mu.Lock()
	h.calls = append(h.calls, c)
	d := time.Duration(h.rng.IntN(20)) * time.Millisecond
	h.mu.Unlock()
	time.Sleep(d)
	return CallResult{Value: c.Args}
}

func TestDeterminism(t *testing.T) {
	js := `
const ids = [1, 2, 3, 4, 5, 6];
const seen = [];
const out = await Promise.all(ids.map(async id => {
  const a = await gh.echo({ id, step: 1 });
  seen.push(a.id);
  const b = await gh.echo({ id, step: 2, r: Math.random() });
  return b.r;
}));
await new Promise(r => setTimeout(r, 25));
console.log("seen", seen.join(","));
return { out, seen, uuid: crypto.randomUUID(), now: Date.now(), date: new Date().toISOString(),
  bytes: Array.from(crypto.getRandomValues(new Uint8Array(4))) };`
	type run struct {
		Result string
		Logs   []string
		Calls  []string
	}
	var runs []run
	for i := range 3 {
		h := &jitterHost{rng: rand.New(rand.NewPCG(uint64(i), 1))}
		out := driver(t).Run(context.Background(), Request{JS: js, Host: h, Namespaces: testNamespaces, Seed: 99, Clock: time.UnixMilli(1_700_000_000_000)})
		if out.Status != StatusCompleted {
			t.Fatalf("run %d: %v", i, out.Error)
		}
		r := run{Result: string(out.Result), Logs: out.Logs}
		for _, c := range h.calls {
			r.Calls = append(r.Calls, fmt.Sprintf("%d %s %s", c.Seq, c.Address, c.Args))
		}
		// the host sees calls in dispatch order; the journal is by Seq
		sortBySeq(r.Calls)
		runs = append(runs, r)
	}
	for i := 1; i < len(runs); i++ {
		if diff := cmp.Diff(runs[0], runs[i]); diff != "" {
			t.Errorf("run %d differs (-first +this):\n%s", i, diff)
		}
	}
	var res struct{ Now int64 }
	_ = json.Unmarshal([]byte(runs[0].Result), &res)
	if res.Now != 1_700_000_000_025 {
		t.Errorf("Date.now() = %d, want the clock start plus the 25 ms timer", res.Now)
	}
	other := driver(t).Run(context.Background(), Request{JS: `return Math.random()`, Host: &fakeHost{}, Seed: 100})
	same := driver(t).Run(context.Background(), Request{JS: `return Math.random()`, Host: &fakeHost{}, Seed: 99})
	if string(other.Result) == string(same.Result) {
		t.Errorf("seeds 99 and 100 give the same Math.random()")
	}
}

func sortBySeq(calls []string) {
	seq := func(s string) int { n, _ := strconv.Atoi(strings.Fields(s)[0]); return n }
	for i := 1; i < len(calls); i++ {
		for j := i; j > 0 && seq(calls[j]) < seq(calls[j-1]); j-- {
			calls[j], calls[j-1] = calls[j-1], calls[j]
		}
	}
}

func TestParallelCalls(t *testing.T) {
	// The host counts the calls in flight at once: 8 proves they ran in
	// parallel, without timing anything.
	out, h := run(t, `return await Promise.all(Array.from({ length: 8 }, () => gh.sleep({ ms: 500 })))`)
	if out.Status != StatusCompleted || out.Calls != 8 {
		t.Fatalf("got %+v", out)
	}
	if h.peak.Load() != 8 {
		t.Errorf("peak in flight = %d, want 8", h.peak.Load())
	}

	start := time.Now()
	out, h = run(t, `return await Promise.all(Array.from({ length: 9 }, () => gh.sleep({ ms: 300 })))`)
	if out.Status != StatusCompleted || h.peak.Load() != 8 || time.Since(start) < 600*time.Millisecond {
		t.Errorf("9 calls: status %s, peak %d, took %v; want at most 8 in flight, the 9th after the first", out.Status, h.peak.Load(), time.Since(start))
	}
}

func TestPause(t *testing.T) {
	out, h := run(t, `const [a] = await Promise.all([gh.sleep({ ms: 200 }), gh.pause({})]); await gh.echo({ after: true }); return a`)
	if out.Status != StatusPaused || out.Error != nil {
		t.Fatalf("got %+v", out)
	}
	seen := map[string]int{}
	for _, c := range h.calls {
		seen[c.Address] = c.Seq
	}
	if len(h.calls) != 2 || seen["gh.sleep"] != 1 || seen["gh.pause"] != 2 {
		t.Errorf("calls = %+v, want the sleep (completed) and the pause, nothing after", h.calls)
	}
	if out.Wall < 200*time.Millisecond {
		t.Errorf("paused after %v, before the call in flight settled", out.Wall)
	}
}

func TestCancel(t *testing.T) {
	for _, js := range []string{`for (;;) {}`, `await gh.sleep({ ms: 10000 })`, `await new Promise(r => setTimeout(r, 20000))`} {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(200*time.Millisecond, cancel)
		out := driver(t).Run(ctx, Request{JS: js, Host: &fakeHost{}, Namespaces: testNamespaces})
		// Uncancelled, each would end otherwise (timeout_compute, completed).
		if out.Status != StatusCancelled || out.Error.Code != CodeCancelled {
			t.Errorf("%s: %+v", js, out)
		}
		cancel()
	}
	assertHealthy(t, driver(t))
}

func TestToolErrors(t *testing.T) {
	out, _ := run(t, `try { await gh.fail({}) } catch (e) { return [e instanceof ToolError, e.code, e.address, e.status, e.hint, e.retryable, e.message] }`)
	if string(out.Result) != `[true,"not_found","gh.fail",404,"check the number",false,"no such issue"]` {
		t.Errorf("caught: %s %v", out.Result, out.Error)
	}
	out, _ = run(t, `await gh.fail({})`)
	if out.Error == nil || out.Error.Code != CodeTool || out.Error.Tool.Status != 404 || !strings.Contains(out.Error.Message, "gh.fail") {
		t.Errorf("uncaught: %+v", out.Error)
	}
}

func TestHubSearchAndDescribe(t *testing.T) {
	out, h := run(t, `return [await hub.search("echo"), await hub.describe("gh.echo")]`)
	if out.Status != StatusCompleted || len(h.calls) != 2 || string(h.calls[0].Args) != `{"query":"echo"}` || h.calls[1].Address != AddressDescribe {
		t.Errorf("got %s %+v %v", out.Result, h.calls, out.Error)
	}
}

func TestSyntaxErrorLocation(t *testing.T) {
	out, _ := run(t, "const a = 1;\nconst b = ;\nreturn a")
	if out.Error == nil || out.Error.Code != CodeSyntax || out.Error.Line != 2 {
		t.Errorf("got %+v", out.Error)
	}
}

func TestRuntimeErrorLocation(t *testing.T) {
	out, _ := run(t, "const a = 1;\nif (a) throw new RangeError(\"bad input\");\nreturn a")
	if out.Error == nil || out.Error.Line != 2 || out.Error.Message != `RangeError: bad input (line 2, column 18: if (a) throw new RangeError("bad input");)` {
		t.Errorf("got %+v", out.Error)
	}
	// Line 1 is shared with the wrapper's prefix: columns count from the
	// model's first character, once.
	out, _ = run(t, "  throw new Error(\"boom\")")
	if out.Error == nil || out.Error.Line != 1 || out.Error.Column != 13 || out.Error.Message != `Error: boom (line 1, column 13: throw new Error("boom"))` {
		t.Errorf("got %+v (line %d, column %d)", out.Error, out.Error.Line, out.Error.Column)
	}
}

// TestMemoryFlatOverManyRuns runs 1,000 attempts (100 under -short), one in
// ten killed by the compute limit and one in fifty by the memory cap, and
// checks that Go heap and process RSS do not grow with the number of runs.
//
// Thresholds: a leaked runtime costs at least its linear memory (~2 MB after
// the prelude, up to 32 MB for a memory bomb) plus its wazero module, so
// leaking even 5% of 1,000 runs would add > 100 MB. Allowing 48 MB of RSS
// growth (and 24 MB of live heap) absorbs allocator and GC noise while failing
// on any per-run leak.
func TestMemoryFlatOverManyRuns(t *testing.T) {
	n := 1000
	if testing.Short() {
		n = 100
	}
	d := driver(t)
	one := func(i int) {
		js, lim := `return (await gh.echo({ i: 1 })).i`, Limits{}
		switch {
		case i%50 == 0:
			js, lim = `const a = []; for (;;) a.push(new Uint8Array(1 << 20))`, bomb
		case i%10 == 0:
			js, lim = `for (;;) {}`, Limits{ComputeMs: 20}
		}
		out := d.Run(context.Background(), Request{JS: js, Host: &fakeHost{}, Namespaces: testNamespaces, Limits: lim})
		if out.Status == StatusCompleted == (i%10 == 0) {
			t.Fatalf("run %d: %+v", i, out)
		}
	}
	for i := range 50 { // warm up: pools, caches, GC pacing
		one(i + 1)
	}
	heap0, rss0 := memUse(t)
	for i := range n {
		one(i)
	}
	heap1, rss1 := memUse(t)
	t.Logf("%d runs: heap %d → %d MB, RSS %d → %d MB", n, heap0>>20, heap1>>20, rss0>>20, rss1>>20)
	if heap1 > heap0+24<<20 {
		t.Errorf("live heap grew by %d MB over %d runs", (heap1-heap0)>>20, n)
	}
	if rss1 > rss0+48<<20 && !raceDetector { // the race detector's shadow memory grows with the runs (75–85 MB over 1,000)
		t.Errorf("RSS grew by %d MB over %d runs", (rss1-rss0)>>20, n)
	}
}

// memUse is the live Go heap and the process's RSS once freed heap memory
// went back to the system (so that RSS shows memory held outside the Go
// heap, not how far the scavenger got).
func memUse(t *testing.T) (heap, rss int64) {
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		t.Fatal(err)
	}
	pages, _ := strconv.ParseInt(strings.Fields(string(b))[1], 10, 64)
	return int64(ms.HeapAlloc), pages * int64(os.Getpagesize())
}

type panicHost struct{}

func (panicHost) CallTool(context.Context, Call) CallResult { panic("boom") }

func TestHostFailuresBecomeToolErrors(t *testing.T) {
	for _, h := range []Host{nil, panicHost{}} {
		out := driver(t).Run(context.Background(), Request{JS: `try { await gh.echo({}) } catch (e) { return e.code }`, Host: h, Namespaces: testNamespaces})
		if string(out.Result) != `"internal_error"` {
			t.Errorf("host %T: %s %v", h, out.Result, out.Error)
		}
	}
}

func TestClosedDriver(t *testing.T) {
	d, err := New(Options{Warm: 1})
	if err != nil {
		t.Fatal(err)
	}
	if out := d.Run(context.Background(), Request{JS: `return 1`}); string(out.Result) != "1" {
		t.Fatalf("got %+v", out)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if out := d.Run(context.Background(), Request{JS: `return 1`}); out.Error == nil || !strings.Contains(out.Error.Message, "closed") {
		t.Errorf("run after Close: %+v", out)
	}
}

func TestReplaySkipsTimerWaits(t *testing.T) {
	// The wait before the replayed call is long, so that a replay that waited
	// cannot take less than it, however fast or slow the machine.
	js := `await new Promise(r => setTimeout(r, 3000)); const a = await gh.echo({ n: 1 });
await new Promise(r => setTimeout(r, 300)); return [a.n, Date.now()]`
	live := driver(t).Run(context.Background(), Request{JS: js, Host: &fakeHost{}, Namespaces: testNamespaces})
	replay := driver(t).Run(context.Background(), Request{JS: js, Host: &fakeHost{}, Namespaces: testNamespaces, ReplayCalls: 1})
	if string(live.Result) != string(replay.Result) || string(live.Result) != "[1,3300]" {
		t.Fatalf("live %s, replay %s; want both [1,3300]", live.Result, replay.Result)
	}
	if live.Wall < 3300*time.Millisecond || replay.Wall < 300*time.Millisecond || replay.Wall >= 3000*time.Millisecond {
		t.Errorf("live took %v (want ≥ 3.3 s), replay %v (want only the 300 ms after the replayed call, not the 3 s before it)", live.Wall, replay.Wall)
	}
}
