package index

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/typegen"
	"github.com/capabilities-sh/capabilities/internal/testenv"
)

// tools10k replicates the corpus under renamed namespaces (github → github2,
// …) up to 10,000 tools.
func tools10k(b *testing.B) []model.Tool {
	base := testenv.CorpusTools(b)
	var out []model.Tool
	for copy := 1; len(out) < 10000; copy++ {
		for _, t := range base {
			if len(out) == 10000 {
				break
			}
			ns, tool, _ := model.SplitAddress(t.Address)
			if copy > 1 {
				t.Address = fmt.Sprintf("%s%d.%s", ns, copy, tool)
			}
			out = append(out, t)
		}
	}
	return out
}

func BenchmarkBuild10k(b *testing.B) {
	tools := tools10k(b)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		New(tools, Options{})
	}
}

// BenchmarkSearch10k runs the evaluation queries in turn over 10,000 tools
// and reports the median and 99th percentile latency. Signatures are made
// on a tool's first appearance in results and kept, so this measures the
// steady state (see BenchmarkSignature for a first appearance).
func BenchmarkSearch10k(b *testing.B) {
	ix := New(tools10k(b), Options{})
	for _, e := range evalQueries { // warm the signature cache
		ix.Search(Query{Text: e.q})
	}
	var lat []time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		q := evalQueries[i%len(evalQueries)].q
		i++
		start := time.Now()
		if _, err := ix.Search(Query{Text: q}); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	sort.Slice(lat, func(a, c int) bool { return lat[a] < lat[c] })
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds()), "p99-ns")
}

func BenchmarkSignature(b *testing.B) {
	tools := testenv.CorpusTools(b)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		typegen.Signature(&tools[i%len(tools)])
		i++
	}
}
