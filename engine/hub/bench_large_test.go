package hub_test

import (
	"context"
	"runtime"
	"strconv"
	"testing"
	"time"
)

// BenchmarkLargeResult is one execute whose tool answers a 30 MB JSON text
// over stdio, the credential in every row (scrubbed whole, then kept as a
// handle): how much memory the hub takes for it, at its peak (sampled every
// 5 ms) and in all.
//
//	go test ./engine/hub -run '^$' -bench LargeResult -benchtime 3x
func BenchmarkLargeResult(b *testing.B) {
	const size = 30_000_000
	f := newFixtureEnv(b, map[string]string{"SCRIPTED_BIG": "30000000"})
	ctx := context.Background()
	var peak, total uint64
	for b.Loop() {
		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		stop, sampled := make(chan struct{}), make(chan uint64)
		go func() {
			var top uint64
			var ms runtime.MemStats
			t := time.NewTicker(5 * time.Millisecond)
			defer t.Stop()
			for {
				select {
				case <-stop:
					sampled <- top
					return
				case <-t.C:
				}
				runtime.ReadMemStats(&ms)
				top = max(top, ms.HeapInuse)
			}
		}()
		env, err := f.h.Execute(ctx, `const r = await leaky.big({}); return r.size`)
		close(stop)
		peak = max(peak, <-sampled)
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		total += after.TotalAlloc - before.TotalAlloc
		if n, _ := strconv.Atoi(string(env.Result)); err != nil || env.Status != "completed" || n < size*9/10 {
			b.Fatalf("execute: %v %s %s %+v", err, env.Status, env.Result, env.Error)
		}
	}
	b.ReportMetric(float64(peak)/size, "peak-heap/size")
	b.ReportMetric(float64(total)/float64(b.N)/size, "allocated/size")
}
