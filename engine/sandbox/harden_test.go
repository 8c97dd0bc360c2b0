package sandbox

import (
	"context"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Gap 1: std/os/bjson globals, dynamic import, and the mounted CWD.
func TestGapStdOsGlobalsImportAndMountedCWD(t *testing.T) {
	out, _ := run(t, `return ["std", "os", "bjson", "setTimeout"].map(n => typeof globalThis[n]).join()`)
	if string(out.Result) != `"undefined,undefined,undefined,function"` {
		t.Errorf("globals: %s %v", out.Result, out.Error)
	}
	for _, js := range []string{`return await import("qjs:std")`, `return await import("./x.js")`} {
		out, _ := run(t, js)
		if out.Error == nil || out.Error.Code != CodeImport {
			t.Errorf("%s: %+v", js, out)
		}
	}
	entries, err := os.ReadDir(driver(t).root.dir)
	if err != nil || len(entries) != 0 {
		t.Errorf("guest filesystem root %s: %v entries, err %v; want empty", driver(t).root.dir, len(entries), err)
	}
}

// Gap 2: eval and every Function constructor path throw.
func TestGapEvalAndFunctionConstructors(t *testing.T) {
	out, _ := run(t, `
const paths = [
  () => eval("1"),
  () => Function("return 1"),
  () => (async () => {}).constructor("return 1"),
  () => (function* () {}).constructor("yield 1"),
  () => (async function* () {}).constructor("yield 1"),
  () => Reflect.construct(Function, ["return 1"]),
];
return paths.map(p => { try { p(); return "escaped" } catch (e) { return e.name } }).join()`)
	if string(out.Result) != `"EvalError,EvalError,EvalError,EvalError,EvalError,EvalError"` {
		t.Errorf("got %s %v", out.Result, out.Error)
	}
}

// Gap 3: MaxExecutionTime does nothing; compute time is enforced by the driver
// and is paused while calls are in flight.
func TestGapExecutionTimeEnforcedAndPausedDuringCalls(t *testing.T) {
	h := &fakeHost{}
	out := driver(t).Run(context.Background(), Request{JS: `await gh.sleep({ ms: 600 }); return 1`, Host: h, Namespaces: testNamespaces, Limits: Limits{ComputeMs: 300}})
	if out.Status != StatusCompleted {
		t.Errorf("a 600 ms call under a 300 ms compute limit: %+v", out.Error)
	}
	out = driver(t).Run(context.Background(), Request{JS: `for (;;) {}`, Host: h, Namespaces: testNamespaces, Limits: Limits{ComputeMs: 300}})
	if out.Error == nil || out.Error.Code != CodeComputeTimeout {
		t.Errorf("infinite loop: %+v", out)
	}
}

// Gap 3: MemoryLimit is not cumulative; the capped allocator is.
func TestGapMemoryLimitCumulative(t *testing.T) {
	out := driver(t).Run(context.Background(), Request{JS: `const a = []; for (;;) a.push(new Uint8Array(1 << 20))`, Host: &fakeHost{}, Limits: bomb})
	if out.Error == nil || out.Error.Code != CodeMemory {
		t.Errorf("got %+v", out)
	}
	assertHealthy(t, driver(t))
}

// Gap 4: deep recursion corrupts a runtime; each attempt gets a fresh one.
func TestGapRecursionFreshRuntimePerAttempt(t *testing.T) {
	out, _ := run(t, `function f(n) { return n === 0 ? 0 : 1 + f(n - 1) } return f(100)`)
	if string(out.Result) != "100" {
		t.Errorf("100 frames: %s %v", out.Result, out.Error)
	}
	out, _ = run(t, `function f(n) { return 1 + f(n + 1) } return f(0)`)
	if out.Error == nil || out.Error.Code != CodeStackOverflow {
		t.Errorf("deep recursion: %+v", out)
	}
	out, _ = run(t, `globalThis.leak = 1; return 1`)
	out, _ = run(t, `return typeof leak`)
	if string(out.Result) != `"undefined"` {
		t.Errorf("state leaked between attempts: %s", out.Result)
	}
}

// Gap 5: Runtime.Close leaks and panics after a killed run; closeRuntime
// neither leaks nor panics. (Memory over 1,000 runs: TestMemoryFlatOverManyRuns.)
func TestGapCloseAfterKilledRun(t *testing.T) {
	for range 5 {
		out := driver(t).Run(context.Background(), Request{JS: `for (;;) {}`, Host: &fakeHost{}, Limits: Limits{ComputeMs: 50}})
		if out.Error == nil || out.Error.Code != CodeComputeTimeout {
			t.Fatalf("got %+v", out)
		}
	}
	assertHealthy(t, driver(t))
}

// Gap 6: qjs re-creates a wazero function per call; the cache reuses it and
// stays correct when the host function re-enters the same export.
func TestGapFunctionCache(t *testing.T) {
	out, _ := run(t, `let s = 0; for (let i = 0; i < 50; i++) s += (await gh.echo({ i })).i; console.log("s", s); return s`)
	if string(out.Result) != "1225" || len(out.Logs) != 1 {
		t.Errorf("got %s %v %v", out.Result, out.Logs, out.Error)
	}
}

// Gap 7: an Eval returning a Promise busy-waits; the driver never lets one
// wait, so a run awaiting a slow call uses almost no compute time.
func TestGapNoBusyWaitOnPromises(t *testing.T) {
	out, _ := run(t, `await gh.sleep({ ms: 500 }); await new Promise(r => setTimeout(r, 300)); return 1`)
	if out.Status != StatusCompleted || out.Wall < 800*time.Millisecond {
		t.Fatalf("got %+v", out)
	}
	if out.Compute > 200*time.Millisecond {
		t.Errorf("compute %v while waiting 800 ms: busy-waiting", out.Compute)
	}
}

// Compute time is the guest's CPU time: when the machine is busy with other
// work, the guest gets less of it and its clock runs slower too, so a memory
// bomb still fills memory before its compute time runs out. Busy goroutines
// leave the guest a small share of the CPUs (about a tenth on the 2-core VM);
// with wall-clock compute time the bomb (about 1.1 s of CPU) ended as
// timeout_compute.
func TestComputeTimeIsTheGuestsCPUTime(t *testing.T) {
	d := driver(t)
	var stop atomic.Bool
	var wg sync.WaitGroup
	for range 2 * runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() { // busy: spins until stopped
			defer wg.Done()
			for !stop.Load() {
			}
		}()
	}
	defer func() {
		stop.Store(true)
		wg.Wait()
	}()
	lim := Limits{ComputeMs: 2000, WallMs: testWallMs, MemoryBytes: testMemoryBytes}
	out := d.Run(context.Background(), Request{JS: `const a = []; for (let i = 0; ; i++) a.push({ i, s: "x".repeat(4096) + i })`, Host: &fakeHost{}, Limits: lim})
	if out.Error == nil || out.Error.Code != CodeMemory {
		t.Fatalf("a memory bomb on a busy machine: %+v (compute %v, wall %v), want memory_limit", out.Error, out.Compute, out.Wall)
	}
	t.Logf("compute %v, wall %v", out.Compute, out.Wall)
}
