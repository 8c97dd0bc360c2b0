// Package sandbox runs the model's JavaScript in QuickJS compiled to
// WebAssembly (github.com/fastschema/qjs on wazero), one runtime per
// attempt (fresh, or reset to as it was), with every tool call going out
// through one bridge to a Host.
//
// Usage:
//
//	d, err := sandbox.New(sandbox.Options{})
//	defer d.Close()
//	out := d.Run(ctx, sandbox.Request{JS: prepared.JS, Seed: 42, Clock: start,
//		Namespaces: map[string][]string{"github": {"search_issues"}}, Host: h})
//
// A Driver keeps Options.Warm runtimes ready (prelude evaluated, the
// namespaces of the last run's NamespaceSet, or Expect's, installed) and
// shares the compiled wasm module. A run whose set differs builds its own.
// Only the first runtime of a namespace set is built from scratch (≈2.5 ms
// of CPU); the others are copies of its memory in a new module instance
// (≈0.25 ms), and a copy whose run ended cleanly is reset to that memory
// for another run (snapshot.go says why a copy is the same runtime and
// shares nothing with the runs before it). Run never evaluates code that returns a pending
// Promise (qjs busy-waits on those): the prelude starts the model's async
// function, tool calls are queued by the guest and run on goroutines (at most
// Limits.MaxConcurrent at once), and their results are delivered while the
// guest is idle.
//
// Determinism, for exact journal replay: everything the guest can observe
// derives from the code, Request.Seed, Request.Clock and the call results, so
// the nondeterministic reads need no journal of their own. Results that
// complete while the guest runs wait until it is idle, then are delivered in
// Seq order, one per guest entry, each followed by every job it enables (one
// batch would let the interleaving of the guest's continuations depend on how
// many results happened to be ready). Timers fire only when no call is in
// flight or undelivered, in order of due time; the logical clock jumps to a
// timer's due time when it fires, and the driver waits that long in real time
// (except while Request.ReplayCalls are being replayed). Hence the same code,
// seed, clock and answers give the same Seqs, result and logs.
//
// hub.search(query) and hub.describe(target) are calls to the reserved
// addresses AddressSearch and AddressDescribe, journaled like any other call.
// Logs are one string per console call; console.warn/error/debug lines start
// with "[warn] ", "[error] ", "[debug] ".
//
// Memory: runtimes are built with a QuickJS heap limit of Options.MemoryBytes
// and a hard cap on wasm linear memory of Options.MemoryBytes + 16 MB;
// Limits.MemoryBytes can only lower the cap (checked after each guest entry).
//
// QuickJS's wasm is compiled once per process, by the first New (see
// compileModule), and with Options.CacheDir once per machine: later
// processes load the machine code in ≈30 ms instead of compiling it in
// ≈0.6 s. New verifies that guest code can be interrupted and fails
// otherwise; do not create qjs runtimes outside this package in the same
// process.
//
// Pause: a CallResult with Pause stops issuing calls, waits for the calls in
// flight (their results still reach the host), and ends with StatusPaused.
// Cancel: when ctx is done the guest is stopped at once, calls in flight see
// their ctx cancelled, and the attempt ends with StatusCancelled.
package sandbox

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/capabilities-sh/capabilities/guest"
	"github.com/fastschema/qjs"
)

// Options configure a Driver. The zero value is usable.
type Options struct {
	// Warm is how many ready runtimes to keep (default 2).
	Warm int
	// MemoryBytes is the QuickJS heap limit runtimes are built with (default
	// 64 MB); linear memory is capped 16 MB above it.
	MemoryBytes int
	// MaxRunning is how many attempts run at once (default 8 per CPU, at
	// least 16): each holds a runtime, so this bounds the sandbox's memory.
	// The rest wait their turn in arrival order, for at most Limits.QueueMs.
	MaxRunning int
	// MaxComputing is how many of the running attempts may use the CPU at
	// once (default GOMAXPROCS+1): an attempt holds a compute turn while it
	// takes its runtime, starts its code and runs the guest, and gives it
	// back while it waits for tool calls or timers. Attempts wait for one in
	// arrival order, so under load each gets its turn instead of all
	// slowing down together (the time waited is not compute time).
	MaxComputing int
	// MaxRunningPerKey and MaxComputingPerKey cap the run slots and the
	// compute turns one admission key (Request.Key: a tenant, when one
	// Driver serves many) holds at once, even when more are free, so that
	// its flood or its infinite loops leave the others room; the defaults
	// are half of MaxRunning and half of MaxComputing (rounded down: on 2
	// CPUs, a tenant's loops get one of them), at least 1. Waiting attempts are served round robin across keys, in
	// arrival order within a key. The empty key has no cap: a Driver one
	// hub owns serves it exactly as if there were no keys.
	MaxRunningPerKey, MaxComputingPerKey int
	// NoFairness serves every key as one (no round robin, no cap): only
	// to measure what fairness does (BenchmarkTenantFlood).
	NoFairness bool
	// CacheDir, when set, keeps QuickJS's compiled machine code on disk
	// (wazero's compilation cache, in a subdirectory named for this
	// layout; wazero adds its version, architecture and OS), so only the
	// first process on a machine pays for compiling it (DefaultCacheDir).
	CacheDir string
}

// Driver runs attempts. It is safe for concurrent use.
type Driver struct {
	active     atomic.Int32 // attempts running now
	ended      atomic.Int64 // when the last attempt ended (Unix ns)
	peak       atomic.Int32 // the most attempts that ran at once
	running    *fairTurns   // a turn to run: Options.MaxRunning of them
	cpu        *fairTurns   // compute turns: Options.MaxComputing of them
	computing  atomic.Int32 // attempts holding a compute turn now
	peakCPU    atomic.Int32 // the most that held one at once
	maxRunning int
	root       *guestRoot
	memBytes   int
	prelude    []byte // guest.Prelude compiled to QuickJS bytecode once
	// expect is the namespace set ready runtimes are built with: the last
	// run's (or Expect's), since the next run most likely sees the same.
	expect atomic.Pointer[Namespaces]
	ready  chan *vm
	// slots bounds the runtimes that exist ready or being warmed to Warm:
	// a warmer takes a slot before it builds, take gives it back.
	slots chan struct{}
	// snaps holds the memory of a runtime of each recent namespace set,
	// which the next runtimes of that set are copied from (snapshot.go).
	snaps  snapshots
	copies atomic.Int64 // runtimes made from a snapshot
	spare  memoryPool   // the memory of closed runtimes, for copies
	// used holds copies whose run ended cleanly, for the warmers (or a run
	// that finds no runtime ready) to reset to their snapshot (reset):
	// the module instance, its call stacks and its memory serve again,
	// which a new instance's first run pays for (130–165 µs of a trivial
	// run's 230). Only when the compiled QuickJS is fixed (reuse).
	used   chan *vm
	reuse  bool
	reuses atomic.Int64 // runtimes reset for another run
	// anticipating is set while Anticipate warms a runtime up; warmups
	// counts the warm-ups made.
	anticipating atomic.Bool
	warmups      atomic.Int64
	stop         chan struct{}
	stopMu       sync.Mutex // held to close stop, and to add a warm-up to wg
	wg           sync.WaitGroup
	once         sync.Once
}

// New compiles the wasm module (once per process), creates the first runtime
// and starts keeping opts.Warm runtimes ready.
func New(opts Options) (*Driver, error) {
	if opts.Warm <= 0 {
		opts.Warm = 2
	}
	if opts.MemoryBytes <= 0 {
		opts.MemoryBytes = Limits{}.withDefaults().MemoryBytes
	}
	if opts.MaxRunning <= 0 {
		opts.MaxRunning = max(16, 8*runtime.NumCPU())
	}
	if opts.MaxComputing <= 0 {
		opts.MaxComputing = runtime.GOMAXPROCS(0) + 1
	}
	if opts.MaxRunningPerKey <= 0 {
		opts.MaxRunningPerKey = max(1, opts.MaxRunning/2)
	}
	if opts.MaxComputingPerKey <= 0 {
		opts.MaxComputingPerKey = max(1, opts.MaxComputing/2)
	}
	root, err := newGuestRoot()
	if err != nil {
		return nil, err
	}
	d := &Driver{root: root, memBytes: opts.MemoryBytes, running: newFairTurns(opts.MaxRunning, opts.MaxRunningPerKey, opts.NoFairness), maxRunning: opts.MaxRunning, cpu: newFairTurns(opts.MaxComputing, opts.MaxComputingPerKey, opts.NoFairness), ready: make(chan *vm, opts.Warm), slots: make(chan struct{}, opts.Warm), used: make(chan *vm, opts.Warm), stop: make(chan struct{})}
	if err := compileModule(root.dir, opts.MemoryBytes, opts.CacheDir); err != nil {
		_ = root.remove()
		return nil, err
	}
	qjsMutex.Lock()
	d.reuse, d.prelude = qjsFixed, qjsPrelude
	qjsMutex.Unlock()
	v, err := d.build(nil)
	if err != nil {
		_ = root.remove()
		return nil, err
	}
	d.slots <- struct{}{}
	d.ready <- v
	workers := min(opts.Warm, runtime.GOMAXPROCS(0))
	for range workers {
		d.wg.Add(1)
		go d.warm()
	}
	return d, nil
}

// Peak reports the most attempts that ran at once since the Driver was made.
func (d *Driver) Peak() int { return int(d.peak.Load()) }

// turn waits for a turn to run for key, for at most lim.QueueMs. It
// reports how long it waited, and an Error when no turn came or ctx ended
// first.
func (d *Driver) turn(ctx context.Context, key string, lim Limits) (time.Duration, *Error) {
	ch := d.running.enqueue(key, false)
	if ch == nil {
		return 0, nil
	}
	start := time.Now()
	t := time.NewTimer(time.Duration(lim.QueueMs) * time.Millisecond)
	defer t.Stop()
	select {
	case <-ch:
		return time.Since(start), nil
	case <-ctx.Done():
		d.running.abandon(key, ch)
		return time.Since(start), cancelledError()
	case <-t.C:
		d.running.abandon(key, ch)
		waited := time.Since(start).Round(time.Second)
		if held, limit := d.running.heldBy(key); held >= limit {
			return time.Since(start), &Error{Code: CodeBusy, Message: fmt.Sprintf("this account is running its maximum of %d executes at once; this one waited %s for a turn and did not start", limit, waited), Hint: "try again in a moment"}
		}
		return time.Since(start), &Error{Code: CodeBusy, Message: fmt.Sprintf("the hub is running its maximum of %d executes at once; this one waited %s for a turn and did not start", d.maxRunning, waited), Hint: "try again in a moment"}
	}
}

// doneRunning gives key's turn to run back.
func (d *Driver) doneRunning(key string) { d.running.release(key) }

// PeakComputing reports the most attempts that held a compute turn at once.
func (d *Driver) PeakComputing() int { return int(d.peakCPU.Load()) }

// compute waits for a compute turn for key (see Options.MaxComputing)
// until stop is closed; it reports false when stop came first. An attempt
// that already started (again: its calls answered) goes before attempts of
// its key that have not, so that started ones finish first.
func (d *Driver) compute(key string, again bool, stop <-chan struct{}) bool {
	if !d.cpu.acquire(key, again, stop) {
		return false
	}
	n := d.computing.Add(1)
	for p := d.peakCPU.Load(); n > p && !d.peakCPU.CompareAndSwap(p, n); p = d.peakCPU.Load() {
	}
	return true
}

func (d *Driver) doneComputing(key string) {
	d.computing.Add(-1)
	d.cpu.release(key)
}

// Close stops warming, frees the ready runtimes and removes the guest's
// empty directory. Runs still in progress finish; later runs fail.
func (d *Driver) Close() error {
	var err error
	d.once.Do(func() {
		d.stopMu.Lock()
		close(d.stop)
		d.stopMu.Unlock()
		d.wg.Wait()
		close(d.ready)
		for v := range d.ready {
			v.close()
		}
		d.closeUsed()
		err = d.root.remove()
	})
	return err
}

func (d *Driver) warm() {
	defer d.wg.Done()
	for {
		select { // a free slot: fewer than Warm runtimes ready or in the making
		case d.slots <- struct{}{}:
		case <-d.stop:
			return
		}
		if len(d.ready) > 0 { // the next attempt is covered: let running ones have the CPU
			d.waitIdle()
		}
		v, err := d.next(d.expect.Load())
		if err != nil {
			<-d.slots
			select { // back off; Run reports the error when it builds its own
			case <-time.After(100 * time.Millisecond):
				continue
			case <-d.stop:
				return
			}
		}
		d.ready <- v // never blocks: a slot was taken for it
	}
}

// waitIdle gives running attempts the CPU: building a runtime takes ~0.2 ms
// of CPU (a copy) to ~2.5 ms (a new namespace set), and beside an attempt on
// a small machine it slows the attempt (and the upstream servers it waits
// on), and then the answer: an attempt's end is not its request's (the run
// is recorded, the answer encoded and sent, and the client reads it on the
// same CPUs). So it waits while an attempt runs and until afterQuiet has
// passed since the last one ended, at most 50 ms. Warmers wait only while a
// runtime is ready: with none, the next attempt would build its own, on its
// own path, which costs it more.
func (d *Driver) waitIdle() {
	for i := 0; i < 50 && (d.active.Load() > 0 || time.Duration(time.Now().UnixNano()-d.ended.Load()) < afterQuiet); i++ {
		select {
		case <-d.stop:
			return
		case <-time.After(time.Millisecond):
		}
	}
}

// afterQuiet is how long warmers let an attempt's request finish.
const afterQuiet = 3 * time.Millisecond

// Expect tells the driver the namespace set the next runs will most likely
// see, so that the runtimes it keeps ready have those namespaces installed
// (Run does the same with the set of each new run). Ready runtimes made for
// another set are closed, and warmers build new ones. Do not call it
// concurrently with Close.
func (d *Driver) Expect(nss *Namespaces) {
	d.expect.Store(nss)
	for range cap(d.ready) {
		select {
		case v := <-d.ready:
			if v.nss.same(nss) {
				d.ready <- v // never blocks: its slot was kept
				continue
			}
			<-d.slots
			v.close()
		default:
			return
		}
	}
}

// take returns a ready runtime with nss installed, or builds one. Ready
// runtimes of a set no longer expected are closed; one of the expected set,
// when nss is another (a resumed run's), is left for the next run.
func (d *Driver) take(nss *Namespaces) (*vm, error) {
	select {
	case <-d.stop:
		return nil, errors.New("taking a runtime: the driver is closed")
	default:
	}
	for {
		select {
		case v, ok := <-d.ready:
			if !ok {
				return nil, errors.New("taking a runtime: the driver is closed")
			}
			if v.nss.same(nss) {
				<-d.slots
				return v, nil
			}
			if expect := d.expect.Load(); expect == nil || !v.nss.same(expect) {
				<-d.slots
				v.close()
				continue
			}
			d.ready <- v // never blocks: its slot was kept
			return d.next(nss)
		default:
			return d.next(nss)
		}
	}
}

// next makes a runtime with nss installed: a used one of that set, reset,
// else one built (build).
func (d *Driver) next(nss *Namespaces) (*vm, error) {
	if nss == nil {
		nss = emptyNamespaces
	}
	for {
		select {
		case v := <-d.used:
			if v.snap.nss.same(nss) && d.reset(v) == nil {
				return v, nil
			}
			v.close()
		default:
			return d.build(nss)
		}
	}
}

// release ends a run's use of v: to d.used, to be reset for another run,
// when it may be (resettable); else it is closed at once (a grown runtime's
// memory may be tens of MB).
func (d *Driver) release(v *vm, clean bool) {
	if clean && d.reuse && v.resettable() == nil {
		select {
		case <-d.stop:
		case d.used <- v:
			select {
			case <-d.stop: // Close may have emptied d.used before this
				d.closeUsed()
			default:
			}
			return
		default:
		}
	}
	v.close()
}

func (d *Driver) closeUsed() {
	for {
		select {
		case v := <-d.used:
			v.close()
		default:
			return
		}
	}
}

// vm is one runtime with the prelude evaluated and a namespace set's
// globals installed.
type vm struct {
	rt             *qjs.Runtime
	nss            *Namespaces
	snap           *snapshot // the snapshot it is a copy of; nil: built by newVM
	start, deliver *qjs.Value
	undefined      *qjs.Value
	att            *attempt
	mem            *cappedMemory
	ks             *killSwitch
}

// build makes a runtime with nss installed: a copy of the snapshot of nss
// when there is one, else built by newVM, and its memory kept as the
// snapshot of nss.
func (d *Driver) build(nss *Namespaces) (*vm, error) {
	if nss == nil {
		nss = emptyNamespaces
	}
	if s := d.snaps.get(nss); s != nil {
		return d.fromSnapshot(s)
	}
	v, err := d.newVM(nss)
	if err != nil {
		return nil, err
	}
	s, err := takeSnapshot(v)
	if err != nil {
		v.close()
		return nil, err
	}
	d.snaps.put(s)
	return v, nil
}

// newVM builds a runtime and installs the globals of nss (nil: an empty
// set). Installing costs ≈14 µs of CPU per namespace (each namespace's tools
// are read when the code first uses it), which a ready runtime has paid.
func (d *Driver) newVM(nss *Namespaces) (v *vm, err error) {
	if nss == nil {
		nss = emptyNamespaces
	}
	rt, mem, ks, err := newRuntime(d.root.dir, d.memBytes)
	if err != nil {
		return nil, err
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("preparing runtime: %v", r)
		}
		if err != nil {
			closeRuntime(rt)
		}
	}()
	v = &vm{rt: rt, nss: nss, mem: mem, ks: ks}
	rt.Context().SetFunc(guest.HostFunction, v.host)
	entry, err := rt.Eval("prelude.js", qjs.Bytecode(d.prelude))
	if err != nil {
		return nil, fmt.Errorf("evaluating prelude: %w", err)
	}
	v.start = entry.GetPropertyStr("start")
	v.deliver = entry.GetPropertyStr("deliver")
	v.undefined = rt.Context().NewUndefined()
	install := entry.GetPropertyStr("namespaces")
	res, err := rt.Context().Invoke(install, v.undefined, rt.Context().NewString(string(nss.setup)))
	if err != nil {
		return nil, fmt.Errorf("installing namespaces: %w", err)
	}
	res.Free()
	return v, nil
}

// compilePrelude compiles the prelude to bytecode, which loads several times
// faster than source in every new runtime, on rt (checkInterrupt's).
func compilePrelude(rt *qjs.Runtime) (_ []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("compiling prelude: %v", r)
		}
	}()
	b, err := rt.Compile("prelude.js", qjs.Code(guest.Prelude))
	if err != nil {
		return nil, fmt.Errorf("compiling prelude: %w", err)
	}
	return b, nil
}

// host is the one host function the prelude captures: __cap_host(op, payload).
func (v *vm) host(this *qjs.This) (*qjs.Value, error) {
	args := this.Args()
	if len(args) != 2 || v.att == nil {
		return nil, fmt.Errorf("bridge: bad call")
	}
	op := args[0].String()
	if op == "tools" {
		tools, err := v.att.toolsOf(args[1].String())
		if err != nil {
			return nil, err
		}
		return this.Context().NewString(tools), nil
	}
	res, err := v.att.onHost(op, args[1].String())
	if err != nil {
		return nil, err
	}
	if res >= 0 {
		return this.Context().NewInt64(int64(res)), nil
	}
	return this.Context().NewUndefined(), nil
}

// invoke calls one of the prelude's entry points, then drains the job queue
// with an Eval that returns at once (a constant, never a Promise).
func (v *vm) invoke(fn *qjs.Value, args ...*qjs.Value) error {
	c := v.rt.Context()
	res, err := c.Invoke(fn, v.undefined, args...)
	if err != nil {
		return err
	}
	res.Free()
	return v.drain()
}

func (v *vm) drain() error {
	res, err := v.rt.Eval("drain.js", qjs.Code("0"))
	if err != nil {
		return err
	}
	res.Free()
	return nil
}

// Trim lets go what an idle driver need not keep, and reports whether it
// did: nothing while an attempt runs. The ready runtimes stay (the next
// execute takes one, and Anticipate warms up with the other); the used
// ones waiting to be reset, the snapshots of namespace sets other than the
// expected one, and the spare memories go, for Go to give back.
func (d *Driver) Trim() bool {
	if d.active.Load() > 0 {
		return false
	}
	d.closeUsed()
	d.snaps.keep(d.expect.Load())
	d.spare.empty()
	return true
}
