package hub_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/sandbox"
)

// BenchmarkTenantFlood: two tenants' hubs on one shared sandbox.Driver
// (hub.Options.Driver, the hosted server's way), 16 clients each. The
// flooding tenant's clients run 50 ms busy loops back to back; the quiet
// tenant's run trivial executes, b.N of them in all. Reported: the quiet
// tenant's p50 and p99 per execute, and the flood's executes per second,
// with the Driver's fair admission (fair) and without it (unfair: one
// queue for both, no cap per tenant), and with no flood (alone). ns/op is
// wall time per quiet execute.
//
//	go test ./engine/hub -run '^$' -bench BenchmarkTenantFlood -benchtime 400x
func BenchmarkTenantFlood(b *testing.B) {
	for _, mode := range []struct {
		name   string
		opts   sandbox.Options
		floods int
	}{
		{"alone", sandbox.Options{}, 0},
		{"fair", sandbox.Options{}, tenantClients},
		{"unfair", sandbox.Options{NoFairness: true}, tenantClients},
	} {
		b.Run(mode.name, func(b *testing.B) { benchTenantFlood(b, mode.opts, mode.floods) })
	}
}

const tenantClients = 16

func benchTenantFlood(b *testing.B, opts sandbox.Options, flooders int) {
	opts.CacheDir = sandbox.DefaultCacheDir()
	d, err := sandbox.New(opts)
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	busy := busyLoop(b, d, 50*time.Millisecond)
	flood := tenantHub(b, d, "tn_flood", sandbox.Limits{})
	defer flood.Close()
	quiet := tenantHub(b, d, "tn_quiet", sandbox.Limits{})
	defer quiet.Close()
	ctx := context.Background()
	const trivial = "let x = 1; return x + 1"
	for _, h := range []*hub.Hub{flood, quiet} { // each hub's first execute builds its engine
		if env, err := h.Execute(ctx, trivial); err != nil || env.Status != "completed" {
			b.Fatalf("first execute: %+v, %v", env, err)
		}
	}

	stop := make(chan struct{})
	var floods atomic.Int64
	var fwg sync.WaitGroup
	for range flooders {
		fwg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				env, err := flood.Execute(ctx, busy)
				if err != nil || env.Status != "completed" {
					b.Errorf("a flood execute: %+v, %v", env, err)
					return
				}
				floods.Add(1)
			}
		})
	}
	time.Sleep(200 * time.Millisecond) // the flood under way

	lat := make([]time.Duration, b.N)
	var next atomic.Int64
	var qwg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	floodsBefore := floods.Load()
	for range tenantClients {
		qwg.Go(func() {
			for i := int(next.Add(1)) - 1; i < b.N; i = int(next.Add(1)) - 1 {
				t := time.Now()
				env, err := quiet.Execute(ctx, trivial)
				lat[i] = time.Since(t)
				if err != nil || env.Status != "completed" {
					b.Errorf("a quiet execute: %+v, %v", env, err)
					return
				}
			}
		})
	}
	qwg.Wait()
	b.StopTimer()
	elapsed := time.Since(start)
	floodsDone := floods.Load() - floodsBefore
	close(stop)
	fwg.Wait()
	slices.Sort(lat)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(lat[len(lat)/2]), "quiet-p50-ms")
	b.ReportMetric(ms(lat[len(lat)*99/100]), "quiet-p99-ms")
	b.ReportMetric(float64(floodsDone)/elapsed.Seconds(), "flood-executes/s")
}

// busyLoop returns code that computes for about dur, measured on d.
func busyLoop(b *testing.B, d *sandbox.Driver, dur time.Duration) string {
	b.Helper()
	js := func(n int) string {
		return fmt.Sprintf("let s = 0; for (let i = 0; i < %d; i++) s = (s + i) %% 1000003; return s", n)
	}
	n := 100_000
	for range 3 {
		out := d.Run(context.Background(), sandbox.Request{Key: "calibrating", JS: js(n)})
		if out.Status != sandbox.StatusCompleted {
			b.Fatalf("calibrating the busy loop: %+v", out.Error)
		}
		n = int(float64(n) * float64(dur) / float64(max(out.Compute, time.Microsecond)))
	}
	return js(n)
}
