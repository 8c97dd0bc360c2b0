package sandbox

import (
	"context"
	"slices"
	"testing"
	"time"
)

// p50 times each warm run and reports the median as p50-ms.
type p50 struct{ d []time.Duration }

func (p *p50) time(f func()) {
	start := time.Now()
	f()
	p.d = append(p.d, time.Since(start))
}

func (p *p50) report(b *testing.B) {
	slices.Sort(p.d)
	b.ReportMetric(float64(p.d[len(p.d)/2].Microseconds())/1000, "p50-ms")
}

// waitWarm stops the timer until a pre-warmed runtime is ready, so that the
// benchmark measures a warm execute (the budget) and not runtime creation.
func waitWarm(b *testing.B, d *Driver) {
	b.StopTimer()
	for len(d.ready) == 0 {
		time.Sleep(50 * time.Microsecond)
	}
	b.StartTimer()
}

// BenchmarkNewRuntime is the cost of one pre-warmed runtime (paid off the
// request path, by the warmers).
func BenchmarkNewRuntime(b *testing.B) {
	d := driver(b)
	b.ReportAllocs()
	for b.Loop() {
		v, err := d.newVM(nil)
		if err != nil {
			b.Fatal(err)
		}
		closeRuntime(v.rt)
	}
}

// BenchmarkTrivialRunSustained runs back to back, so it is bound by runtime creation.
func BenchmarkTrivialRunSustained(b *testing.B) {
	d := driver(b)
	h := &fakeHost{}
	b.ReportAllocs()
	for b.Loop() {
		out := d.Run(context.Background(), Request{JS: "return 1 + 1", Host: h, Namespaces: testNamespaces})
		if out.Status != StatusCompleted {
			b.Fatal(out.Error)
		}
	}
}

func BenchmarkTrivialRun(b *testing.B) { benchWarmRun(b, "return 1 + 1") }

func BenchmarkOneBridgeCall(b *testing.B) { benchWarmRun(b, "return await gh.echo({n: 1})") }

// benchWarmRun times js with a pre-warmed runtime ready and reports the p50.
func benchWarmRun(b *testing.B, js string) {
	d := driver(b)
	h := &fakeHost{}
	var p p50
	b.ReportAllocs()
	for b.Loop() {
		waitWarm(b, d)
		p.time(func() {
			out := d.Run(context.Background(), Request{JS: js, Host: h, Namespaces: testNamespaces})
			if out.Status != StatusCompleted {
				b.Fatal(out.Error)
			}
		})
	}
	p.report(b)
}

// BenchmarkBridgeCallsInRun isolates the bridge: 100 sequential calls in one
// run; (this − BenchmarkTrivialRun) / 100 is the cost of one bridge call.
func BenchmarkBridgeCallsInRun(b *testing.B) {
	d := driver(b)
	h := &fakeHost{}
	b.ReportAllocs()
	for b.Loop() {
		waitWarm(b, d)
		out := d.Run(context.Background(), Request{JS: "for (let i = 0; i < 100; i++) await gh.echo({n: i}); return 1", Host: h, Namespaces: testNamespaces})
		if out.Status != StatusCompleted {
			b.Fatal(out.Error)
		}
	}
}

func BenchmarkRunParallel(b *testing.B) {
	d := driver(b)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		h := &fakeHost{}
		for pb.Next() {
			out := d.Run(context.Background(), Request{JS: "return await gh.echo({n: 1})", Host: h, Namespaces: testNamespaces})
			if out.Status != StatusCompleted {
				b.Error(out.Error)
				return
			}
		}
	})
}

// BenchmarkRuntimeFromSnapshot is the cost of one runtime copied from the
// snapshot of its namespace set (what the warmers, and a run that finds no
// runtime ready, pay).
func BenchmarkRuntimeFromSnapshot(b *testing.B) {
	d := driver(b)
	nss := NewNamespaces(testNamespaces)
	v, err := d.build(nss)
	if err != nil {
		b.Fatal(err)
	}
	closeRuntime(v.rt)
	s := d.snaps.get(nss)
	b.ReportAllocs()
	for b.Loop() {
		v, err := d.fromSnapshot(s)
		if err != nil {
			b.Fatal(err)
		}
		closeRuntime(v.rt)
	}
}

// BenchmarkInstrument is the cost of rewriting QuickJS's wasm with the
// interrupt's countdown (interrupt.go), paid once per process.
func BenchmarkInstrument(b *testing.B) {
	driver(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := instrument(qjsWasm); err != nil {
			b.Fatal(err)
		}
	}
}
