package index

import (
	"flag"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/internal/testenv"
)

var rrCV = flag.Bool("rrcv", false, "with -rrfit: fit on half the tune half and score the other half")

var rrLast [numRF]float32

var rrFit = flag.Bool("rrfit", false, "fit the reranker's weights on the own set and the tune half (TestRerankFit)")

// rrRow is one reranked candidate: whether it is a right answer, and its
// features.
type rrRow struct {
	right bool
	f     [numRF]float32
}

// rrRows are, for each query, the first ranking's best rrN candidates
// with their features, in the first ranking's order.
func rrRows(t testing.TB, tools []model.Tool, p params, queries []evalQuery) [][]rrRow {
	p.rr = [numRF]float32{rfScore: 1}
	ix := build(tools, Options{}, p)
	var out [][]rrRow
	for _, e := range queries {
		var rows []rrRow
		ix.rrDump = func(doc int32, f *[numRF]float32) {
			rows = append(rows, rrRow{contains(e.want, ix.docs[doc].tool.Address), *f})
		}
		if _, err := ix.Search(Query{Text: e.q, Limit: 10}); err != nil {
			t.Fatal(err)
		}
		out = append(out, rows)
	}
	return out
}

// rrMRR is MRR@10 of the rows reranked by w.
func rrMRR(rows [][]rrRow, w [numRF]float32) float64 {
	p := params{rr: w}
	var sum float64
	type sr struct {
		s     float32
		i     int
		right bool
	}
	var buf []sr
	for _, q := range rows {
		buf = buf[:0]
		for i, r := range q {
			buf = append(buf, sr{p.rrScore(&r.f), i, r.right})
		}
		slices.SortStableFunc(buf, func(a, b sr) int {
			switch {
			case a.s > b.s:
				return -1
			case a.s < b.s:
				return 1
			}
			return a.i - b.i
		})
		for k, r := range buf[:min(len(buf), 10)] {
			if r.right {
				sum += 1 / float64(k+1)
				break
			}
		}
	}
	return sum / float64(max(len(rows), 1))
}

// TestRerankFit fits the reranker's weights by coordinate ascent on MRR@10
// over the tune half plus half the own set, the own set not allowed below
// the first ranking's; run with -rrfit -v. It prints the weights; copy
// them into tuned by hand.
func TestRerankFit(t *testing.T) {
	if !*rrFit {
		t.Skip("run with -rrfit -v")
	}
	tools := testenv.CorpusTools(t)
	tuneHalf, _ := intents(t)
	p := tuned
	p.rrN = 20
	own, tun := rrRows(t, tools, p, evalQueries), rrRows(t, tools, p, tuneHalf)
	var held [][]rrRow
	if *rrCV {
		// fit on half the tune half, score the other half (both tune)
		var a, b [][]rrRow
		for i, r := range tun {
			if i%2 == 0 {
				a = append(a, r)
			} else {
				b = append(b, r)
			}
		}
		tun, held = a, b
	}
	defer func() {
		if held != nil {
			t.Logf("other half of the tune half: first ranking %.3f, reranked %.3f", rrMRR(held, [numRF]float32{rfScore: 1}), rrMRR(held, rrLast))
		}
	}()
	w := [numRF]float32{rfScore: 1}
	floor := rrMRR(own, w)
	score := func(w [numRF]float32) (float64, float64, float64) {
		o, u := rrMRR(own, w), rrMRR(tun, w)
		obj := u + 0.5*o
		if o < floor-1e-9 {
			obj -= 10
		}
		return obj, o, u
	}
	best, o, u := score(w)
	t.Logf("start: own %.3f tune %.3f", o, u)
	vals := []float32{-1, -0.5, -0.3, -0.2, -0.1, -0.05, 0, 0.05, 0.1, 0.2, 0.3, 0.5, 1}
	for round := 0; round < 8; round++ {
		improved := false
		for k := 1; k < numRF; k++ {
			for _, v := range vals {
				q := w
				q[k] = v
				if s, o2, u2 := score(q); s > best+1e-9 {
					best, o, u, w, improved = s, o2, u2, q, true
					t.Logf("round %d: feature %d = %v: own %.3f tune %.3f", round, k, v, o, u)
				}
			}
		}
		if !improved {
			break
		}
	}
	t.Logf("fitted: own %.3f tune %.3f", o, u)
	rrLast = w
	fmt.Printf("rr %#v\n", w)
}

// BenchmarkSearch10kRerank is BenchmarkSearch10k with the reranker off and
// on (as shipped), in one process.
func BenchmarkSearch10kRerank(b *testing.B) {
	tools := tools10k(b)
	off := tuned
	off.rrN = 0
	for _, r := range []struct {
		name string
		p    params
	}{{"off", off}, {"on", tuned}} {
		b.Run(r.name, func(b *testing.B) {
			ix := build(tools, Options{}, r.p)
			for _, e := range evalQueries { // warm the caches
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
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
			b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds()), "p99-ns")
		})
	}
}
