package sandbox

import (
	"runtime"
	"time"

	"github.com/fastschema/qjs"
)

// Anticipate tells the driver that a run will likely start soon: a request
// that names execute has arrived and is being decoded. It returns at once.
//
// After a quiet spell the machine has forgotten QuickJS: its machine code
// and the Go and wazero paths into it are out of the CPU's caches (other
// processes, and on a shared VM other tenants, filled them), and the same
// trivial compile and start that takes 73–82 µs right after another run
// takes 415–430 µs 50 ms after one. So when no attempt has run for
// anticipateQuiet and two runtimes are ready, one of them runs warmCode on
// another goroutine, beside the request's decoding, and is then reset to
// its snapshot (or closed, when it may not be: the set's first runtime,
// built the long way), so nothing of it reaches a run. The run takes the
// other ready runtime, on code the warm-up brought back into the caches.
//
// It does nothing while attempts run or just ran (the caches are warm, and
// the CPU is theirs), on one CPU (the warm-up would delay the decoding it
// is meant to run beside), or when runtimes are not reset (reuse).
func (d *Driver) Anticipate() {
	if !d.reuse || runtime.GOMAXPROCS(0) < 2 || len(d.ready) < 2 || d.active.Load() > 0 ||
		time.Duration(time.Now().UnixNano()-d.ended.Load()) < anticipateQuiet {
		return
	}
	if !d.anticipating.CompareAndSwap(false, true) {
		return
	}
	d.stopMu.Lock() // Close waits for the warm-up (d.wg) before it closes d.ready
	select {
	case <-d.stop:
		d.stopMu.Unlock()
		d.anticipating.Store(false)
		return
	default:
	}
	d.wg.Add(1)
	d.stopMu.Unlock()
	go func() {
		defer d.wg.Done()
		defer d.anticipating.Store(false)
		var v *vm
		select {
		case v = <-d.ready: // its slot stays taken
		default:
			return // a run took them meanwhile
		}
		clean := false
		func() {
			defer func() { _ = recover() }() // a trap: v is closed below
			if res, err := v.rt.Eval("warm.js", qjs.Code(warmCode)); err == nil {
				res.Free()
				clean = true
			}
		}()
		d.warmups.Add(1)
		// Reset here rather than by a warmer: waking one (and its polling
		// for an idle moment) while the run goes on cost the run what the
		// warm-up gained.
		if clean && v.resettable() == nil && d.reset(v) == nil {
			d.ready <- v // never blocks: its slot was kept
			return
		}
		<-d.slots
		v.close()
	}()
}

// anticipateQuiet is how long after the last attempt Anticipate warms up:
// sooner, the caches still hold most of what a run needs.
const anticipateQuiet = 5 * time.Millisecond

// warmCode goes through what every run does: compiling an async function,
// running it to its first await, the job queue, JSON both ways.
const warmCode = `(async function () {
  const v = await Promise.resolve({ a: [1, "b"], c: { d: true } });
  return JSON.stringify(JSON.parse(JSON.stringify(v))).length;
})()`
