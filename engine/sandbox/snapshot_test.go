package sandbox

import (
	"bytes"
	"context"
	"github.com/fastschema/qjs"
	"github.com/tetratelabs/wazero/api"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// A runtime copied from a snapshot is the runtime newVM builds: the first
// run of a new namespace set gets the runtime built the long way (the
// snapshot's template), the next ones copies, and all give the same result,
// logs and calls for the same code, seed and clock — the prelude's
// hardening, the namespaces, the seeded randomness and the logical clock
// included.
func TestCopiedRuntimeIsTheBuiltOne(t *testing.T) {
	d, err := New(Options{MemoryBytes: testMemoryBytes, Warm: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	nss := NewNamespaces(map[string][]string{"snap": {"ping"}, "gh": {"echo"}})
	js := `
const r = await gh.echo({ n: Math.random() });
console.log("tools", Object.keys(snap).join(","), typeof gh.echo);
let evalBlocked = false;
try { (0, eval)("1") } catch (e) { evalBlocked = e instanceof EvalError }
return { r, uuid: crypto.randomUUID(), now: Date.now(), evalBlocked, std: typeof std, os: typeof os,
  frozen: Object.isFrozen(snap), stack: new Error("x").stack.split("\n").length };`
	type result struct {
		Status Status
		Result string
		Logs   []string
	}
	var first result
	for i := range 6 {
		out := d.Run(context.Background(), Request{JS: js, Host: &fakeHost{}, NamespaceSet: nss, Seed: 5, Clock: time.UnixMilli(1_700_000_000_000)})
		got := result{out.Status, string(out.Result), out.Logs}
		if out.Error != nil {
			t.Fatalf("run %d: %v", i, out.Error)
		}
		if i == 0 {
			first = got
			continue
		}
		if diff := cmp.Diff(first, got); diff != "" {
			t.Errorf("run %d differs from the first (-first +this):\n%s", i, diff)
		}
	}
	// The warmer may build one runtime the long way beside the first run
	// (neither finds the snapshot yet); every other run gets a copy, or a
	// copy reset after its run (Driver.reset).
	if n := d.copies.Load() + d.reuses.Load(); n < 4 {
		t.Errorf("%d runtimes were copied from a snapshot or reset to it, want at least 4 of the 5 runs after the first", n)
	}
	if want := `"evalBlocked":true,"std":"undefined","os":"undefined","frozen":true`; !strings.Contains(first.Result, want) {
		t.Errorf("result %s, want it to contain %s", first.Result, want)
	}
}

// Runs made from the same snapshot share nothing: what run A changes —
// globals (a non-configurable one, a 1 MB string), built-in prototypes,
// built-ins replaced — run B does not see, however many runs alternate;
// the same checks in run A's own code see every change.
func TestCopiedRuntimesShareNothing(t *testing.T) {
	d := driver(t)
	before := d.copies.Load() + d.reuses.Load()
	pollute := `
globalThis.leaked = "A";
Object.prototype.polluted = "A";
Array.prototype.push = function () { return "A" };
try { JSON.stringify = () => "\"A\"" } catch {}
Object.defineProperty(globalThis, "sticky", { value: "A", configurable: false });
globalThis.big = "x".repeat(1 << 20);`
	check := `
const seen = [];
const add = (what) => { seen[seen.length] = what };
if (typeof leaked !== "undefined") add("global");
if (({}).polluted !== undefined) add("Object.prototype");
const a = []; a.push(1); if (a.length !== 1) add("Array.prototype.push");
if (JSON.stringify({ b: 1 }) !== '{"b":1}') add("JSON.stringify");
if (typeof sticky !== "undefined") add("non-configurable global");
if (typeof big !== "undefined") add("memory");
return seen`
	// The check sees every change made in its own run.
	if out, _ := run(t, pollute+check); string(out.Result) != `["global","Object.prototype","Array.prototype.push","JSON.stringify","non-configurable global","memory"]` {
		t.Fatalf("pollution and check in one run: %s %+v", out.Result, out.Error)
	}
	for i := range 10 {
		if out, _ := run(t, pollute+"return 1"); out.Status != StatusCompleted {
			t.Fatalf("run A %d: %+v", i, out.Error)
		}
		out, _ := run(t, check)
		if out.Status != StatusCompleted || string(out.Result) != "[]" {
			t.Fatalf("run B %d after run A saw what A changed: %s %+v", i, out.Result, out.Error)
		}
	}
	// Each run starts from the snapshot's memory: a new copy, or a copy
	// whose clean run ended reset to it; which of the two depends on how
	// fast the warmers are (9 new copies of 20 on a loaded CI machine),
	// not what is tested.
	if n := d.copies.Load() + d.reuses.Load() - before; n < 10 {
		t.Errorf("%d of 20 runs got a copied or reset runtime, want at least 10", n)
	}
}

// The sandbox runs the instrumented QuickJS (interrupt.go), compiled without
// CloseOnContextDone (no call out to Go at every loop header, no goroutine
// per call into the module), and a runaway guest is still stopped: a tight
// loop ends as timeout_compute, and a run after it completes.
func TestInterruptFlag(t *testing.T) {
	d := driver(t)
	if _, err := instrumentedQuickJS(); err != nil {
		t.Fatalf("QuickJS was not instrumented: %v", err)
	}
	before := ticks.Load()
	if out, _ := run(t, `let n = 0; for (let i = 0; i < 100000; i++) n += i; return n`); string(out.Result) != "4999950000" {
		t.Fatalf("a loop: %s %+v", out.Result, out.Error)
	}
	if ticks.Load() == before {
		t.Fatal("a loop of 100,000 iterations made no tick: the runtime runs the original QuickJS")
	}
	out := d.Run(context.Background(), Request{JS: `for (;;) {}`, Host: &fakeHost{}, Limits: Limits{ComputeMs: 50, WallMs: testWallMs}})
	if out.Error == nil || out.Error.Code != CodeComputeTimeout {
		t.Fatalf("a tight loop with 50 ms of compute: %+v, want %s", out.Error, CodeComputeTimeout)
	}
	if out, _ := run(t, `return 2`); string(out.Result) != "2" {
		t.Fatalf("the run after: %s %+v", out.Result, out.Error)
	}
}

// A copied runtime may start in the memory of a closed one (memoryPool),
// and sees nothing of it: the snapshot overwrites what the module starts
// with, and every page it grows is cleared, though the buffer behind it
// still holds the last run's data.
func TestRecycledMemoryHoldsNothingOfTheLastRun(t *testing.T) {
	// Warm 1: New's runtime stays ready, so no warmer builds (and takes
	// from the pool) while this test runs.
	d, err := New(Options{MemoryBytes: testMemoryBytes, Warm: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	s := d.snaps.get(emptyNamespaces)
	if s == nil {
		t.Fatal("no snapshot of the empty namespace set")
	}
	const marker = "q7Zx-left-by-the-last-run"
	last, err := d.fromSnapshot(s)
	if err != nil {
		t.Fatal(err)
	}
	res, err := last.rt.Eval("last.js", qjs.Code(`globalThis.kept = "`+marker+`".repeat(40000); kept.length`))
	if err != nil {
		t.Fatal(err)
	}
	res.Free()
	last.close()

	v, err := d.fromSnapshot(s)
	if err != nil {
		t.Fatal(err)
	}
	defer v.close()
	buf := v.mem.buf
	if cap(buf) < 2*len(s.mem) {
		t.Fatalf("the copy's memory has capacity %d: not the 1.5 MB the last runtime grew to (it was not recycled)", cap(buf))
	}
	if !bytes.Contains(buf[len(buf):cap(buf)], []byte(marker)) {
		t.Fatal("the recycled buffer does not hold the last runtime's string beyond the copy's memory: this test shows nothing")
	}
	if bytes.Contains(buf, []byte(marker)) {
		t.Fatal("the copy's memory holds the last runtime's string")
	}
	m := *fieldOf[api.Memory](v.rt.Mem(), "mem")
	if _, ok := m.Grow(uint32((cap(buf) - len(buf)) / 65536)); !ok {
		t.Fatal("growing the copy's memory failed")
	}
	grown, ok := m.Read(0, m.Size())
	if !ok || len(grown) <= len(buf) {
		t.Fatalf("reading the grown memory: %d bytes", len(grown))
	}
	if bytes.Contains(grown, []byte(marker)) {
		t.Fatal("memory the copy grew into holds the last runtime's string")
	}
	if !bytes.Equal(grown[:len(s.mem)], s.mem) {
		t.Error("the copy's memory is not its snapshot")
	}
}

// A copy reset after its run (Driver.reset) is its snapshot's runtime
// again: its memory is the snapshot's byte for byte, and nothing the last
// code did to globals, prototypes or the seeded randomness shows. Only a
// run that ended cleanly gives its runtime back to be reset.
func TestResetRuntimeSeesNothingOfTheLastRun(t *testing.T) {
	// Warm 1: New's runtime stays ready, so no warmer takes from d.used
	// while this test runs.
	d := resettingDriver(t, 1)
	defer d.Close()
	s := d.snaps.get(emptyNamespaces)
	if s == nil {
		t.Fatal("no snapshot of the empty namespace set")
	}
	eval := func(v *vm, js string) string {
		t.Helper()
		res, err := v.rt.Eval("test.js", qjs.Code(js))
		if err != nil {
			t.Fatal(err)
		}
		defer res.Free()
		return res.String()
	}
	const look = `[typeof leak, ({}).polluted, Array.prototype.extra, Math.random(), Date.now(), typeof hub, Object.isFrozen(hub)].join()`
	fresh, err := d.fromSnapshot(s)
	if err != nil {
		t.Fatal(err)
	}
	want := eval(fresh, look)
	fresh.close()

	v, err := d.fromSnapshot(s)
	if err != nil {
		t.Fatal(err)
	}
	defer v.close()
	if got := eval(v, `globalThis.leak = "secret-left-behind"; Object.prototype.polluted = 1; Array.prototype.extra = 2;
for (let i = 0; i < 100; i++) Math.random(); "dirty"`); got != "dirty" {
		t.Fatal(got)
	}
	if got := eval(v, look); got == want {
		t.Fatalf("the dirty code changed nothing (%s): this test shows nothing", got)
	}
	if err := d.reset(v); err != nil {
		t.Fatal(err)
	}
	m := *fieldOf[api.Memory](v.rt.Mem(), "mem")
	if mem, ok := m.Read(0, m.Size()); !ok || !bytes.Equal(mem, s.mem) {
		t.Fatal("the reset runtime's memory is not its snapshot")
	}
	if got := eval(v, look); got != want {
		t.Fatalf("after a reset: %s, want %s (a fresh copy's)", got, want)
	}

	// Only a clean end gives a runtime back: a stopped one, a trapped one,
	// one not copied from a snapshot are closed.
	for _, c := range []struct {
		name  string
		clean bool
		setup func(*vm)
		kept  int
	}{
		{"stopped", true, func(v *vm) { v.ks.trip(errComputeTimeout) }, 0},
		{"trapped", false, func(*vm) {}, 0},
		{"built", true, func(v *vm) { v.snap = nil }, 0},
		{"clean", true, func(*vm) {}, 1},
	} {
		u, err := d.fromSnapshot(s)
		if err != nil {
			t.Fatal(err)
		}
		c.setup(u)
		d.release(u, c.clean)
		if got := len(d.used); got != c.kept {
			t.Errorf("%s: %d runtimes kept for a reset, want %d", c.name, got, c.kept)
		}
		d.closeUsed()
	}
}
