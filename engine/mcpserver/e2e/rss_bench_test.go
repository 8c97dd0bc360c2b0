package e2e

import (
	"testing"
)

// BenchmarkIdleRSS measures what `hub serve --stdio` holds once an agent
// has used it and left it idle (testdata/clients/rss_client.mjs): a hub of
// the scripted upstream "up" and the 19 corpus servers' manifests, started
// by the TypeScript SDK client, which lists tools, searches (the index is
// built), executes trivial code and one call of up.echo, waits 3 s and reads
// VmRSS (the hub trims once idle for 2 s: engine/hub/quiet.go). It also
// reports a trivial execute right after another (busy-ms) and one right
// after the idle time (after-idle-ms). Each iteration is a fresh serve.
//
//	go test ./engine/mcpserver/e2e -run '^$' -bench BenchmarkIdleRSS -benchtime 1x -count 5
func BenchmarkIdleRSS(b *testing.B) {
	h := newHub(b)
	h.addScripted("up", false)
	addCorpusCopies(b, h, 1)
	ageStore(b, h)
	for b.Loop() {
		var res struct {
			AfterStartKB, IdleKB, PeakKB float64
			BusyMs, AfterIdleMs          float64
		}
		h.client(&res, []string{"BENCH_TOOL=up.echo"}, "rss_client.mjs")
		b.ReportMetric(res.AfterStartKB/1024, "start-MB")
		b.ReportMetric(res.IdleKB/1024, "idle-MB")
		b.ReportMetric(res.PeakKB/1024, "peak-MB")
		b.ReportMetric(res.BusyMs, "busy-ms")
		b.ReportMetric(res.AfterIdleMs, "after-idle-ms")
	}
}
