package sandbox

import (
	"context"
	"testing"
)

func BenchmarkTrivialRun(b *testing.B) {
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

func BenchmarkOneBridgeCall(b *testing.B) {
	d := driver(b)
	h := &fakeHost{}
	b.ReportAllocs()
	for b.Loop() {
		out := d.Run(context.Background(), Request{JS: "return await gh.echo({n: 1})", Host: h, Namespaces: testNamespaces})
		if out.Status != StatusCompleted {
			b.Fatal(out.Error)
		}
	}
}

// BenchmarkBridgeCallsInRun isolates the bridge: 100 sequential calls in one run.
func BenchmarkBridgeCallsInRun(b *testing.B) {
	d := driver(b)
	h := &fakeHost{}
	b.ReportAllocs()
	for b.Loop() {
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
