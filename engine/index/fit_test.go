package index

import (
	"flag"
	"fmt"
	"strings"
	"testing"

	"github.com/capabilities-sh/capabilities/internal/testenv"
)

// before42 is the ranking as issue 42 found it (e59590c): BM25F and the
// WordNet relatives, no action classes, never cut short.
var before42 = params{
	k1:      1.2,
	w:       [numFields]float64{fName: 3, fTitle: 0.5, fDesc: 1, fParam: 0.2, fParamDesc: 0.3, fNamespace: 1},
	b:       [numFields]float64{fName: 0.5, fTitle: 0.5, fDesc: 0.75, fParam: 0.75, fParamDesc: 0.75, fNamespace: 0},
	syn:     0.7,
	coord:   0.5,
	join:    true,
	analyze: [3]bool{true, true, true},
	rel: [numKinds]float32{kindSynonym: 1, kindDerived: 0.8, kindAttribute: 0.8, kindSimilar: 0.5,
		kindHypernym: 0.3, kindHyponym: 0.15, kindForm: 1},
	hop2:     0.5,
	relW:     0.2,
	relMiss:  0.6,
	relSelf:  1,
	relFloor: 0.3,
	relMaxDF: 0.02,
}

// tuneSlices are the slices of evalSlices that are the own set or the tune
// half: the report half is never scored here.
func tuneSlices(t testing.TB) []slice {
	var out []slice
	for _, s := range evalSlices(t, testenv.CorpusTools(t)) {
		if !strings.Contains(s.name, "report half") {
			out = append(out, s)
		}
	}
	return out
}

// TestTuneHalfFigures logs every tune-half slice before issue 42, with
// each of its signals alone, and with all of them (ours).
func TestTuneHalfFigures(t *testing.T) {
	if !testing.Verbose() {
		t.Skip("logs figures only: run with -v")
	}
	tools := testenv.CorpusTools(t)
	withActions := func(p params) params {
		p.actMatch, p.actNear, p.actClash = tuned.actMatch, tuned.actNear, tuned.actClash
		return p
	}
	bm := before42
	bm.rel = [numKinds]float32{}
	rows := []struct {
		name string
		p    params
	}{
		{"BM25F (e59590c, no WordNet)", bm},
		{"BM25F + actions", withActions(bm)},
		{"BM25F + WordNet (before, e59590c)", before42},
		{"BM25F + WordNet + actions", withActions(before42)},
		{"ours (fitted weights, actions)", tuned},
	}
	for _, s := range tuneSlices(t) {
		for i, r := range rows {
			name := ""
			if i == 0 {
				name = s.name
			}
			t.Logf("%-40s %-34s %v", name, r.name, evaluateOn(t, build(tools, Options{}, r.p), s.q, false))
		}
	}
}

var fitFrom = flag.String("fitfrom", "", "TestFit's starting point: name=value,… of its knobs")

var fitFix = flag.String("fitfix", "", "TestFit's knobs to leave as they are, comma-separated")

var fit = flag.Bool("fit", false, "fit the ranking's weights on the own set and the tune half by coordinate ascent (TestFit)")

// TestFit fits the ranking's weights (BM25F fields, synonyms,
// coordination, the WordNet signal, the action classes) by coordinate
// ascent on MRR@10 over the own set and the tune half together, the own
// set not allowed to fall below before42's; run with -fit. It prints the
// weights it found; copy them into tuned by hand.
func TestFit(t *testing.T) {
	if !*fit {
		t.Skip("run with -fit")
	}
	tools := testenv.CorpusTools(t)
	tuneHalf, _ := intents(t)
	floor := evaluateOn(t, build(tools, Options{}, before42), evalQueries, false).mrr
	score := func(p params) (float64, float64, float64) {
		ix := build(tools, Options{}, p)
		own := evaluateOn(t, ix, evalQueries, false).mrr
		tun := evaluateOn(t, ix, tuneHalf, false).mrr
		obj := tun + 0.5*own
		if own < floor {
			obj -= 10
		}
		return obj, own, tun
	}
	type knob struct {
		name string
		get  func(*params) *float64
		vals []float64
	}
	knobs := []knob{
		{"w.name", func(p *params) *float64 { return &p.w[fName] }, []float64{1, 1.5, 2, 3, 4}},
		{"w.title", func(p *params) *float64 { return &p.w[fTitle] }, []float64{0, 0.25, 0.5, 1}},
		{"w.desc", func(p *params) *float64 { return &p.w[fDesc] }, []float64{0.3, 0.5, 0.75, 1}},
		{"w.param", func(p *params) *float64 { return &p.w[fParam] }, []float64{0, 0.1, 0.2, 0.4}},
		{"w.paramDesc", func(p *params) *float64 { return &p.w[fParamDesc] }, []float64{0, 0.15, 0.3, 0.5}},
		{"w.namespace", func(p *params) *float64 { return &p.w[fNamespace] }, []float64{0.5, 1, 1.5, 2}},
		{"b.desc", func(p *params) *float64 { return &p.b[fDesc] }, []float64{0.5, 0.75, 0.9}},
		{"b.name", func(p *params) *float64 { return &p.b[fName] }, []float64{0.25, 0.5, 0.75}},
		{"syn", func(p *params) *float64 { return &p.syn }, []float64{0.3, 0.5, 0.7, 0.9}},
		{"coord", func(p *params) *float64 { return &p.coord }, []float64{0.25, 0.5, 0.75, 1, 1.5}},
		{"k1", func(p *params) *float64 { return &p.k1 }, []float64{0.8, 1.2, 1.6, 2}},
	}
	type knob32 struct {
		name string
		get  func(*params) *float32
		vals []float32
	}
	knobs32 := []knob32{
		{"relW", func(p *params) *float32 { return &p.relW }, []float32{0.1, 0.2, 0.3, 0.5}},
		{"relMiss", func(p *params) *float32 { return &p.relMiss }, []float32{0.3, 0.6, 1, 1.5}},
		{"actMatch", func(p *params) *float32 { return &p.actMatch }, []float32{0.2, 0.3, 0.5, 0.8, 1.2}},
		{"actNear", func(p *params) *float32 { return &p.actNear }, []float32{0, 0.1, 0.2, 0.3}},
		{"actClash", func(p *params) *float32 { return &p.actClash }, []float32{0, 0.1, 0.2, 0.3, 0.5}},
		{"relFloor", func(p *params) *float32 { return &p.relFloor }, []float32{0.1, 0.2, 0.3, 0.5, 0.7}},
		{"hop2", func(p *params) *float32 { return &p.hop2 }, []float32{0, 0.25, 0.5, 0.75}},
		{"relMaxDF", func(p *params) *float32 { return &p.relMaxDF }, []float32{0.01, 0.02, 0.05, 0.1}},
	}
	p := tuned
	if *fitFrom != "" {
		// Start from a previous fit: "name=value,…" of the knobs below.
		for _, kv := range strings.Split(*fitFrom, ",") {
			name, v, _ := strings.Cut(kv, "=")
			var x float64
			fmt.Sscan(v, &x)
			for _, k := range knobs {
				if k.name == name {
					*k.get(&p) = x
				}
			}
			for _, k := range knobs32 {
				if k.name == name {
					*k.get(&p) = float32(x)
				}
			}
		}
	}
	fixed := map[string]bool{}
	for _, name := range strings.Split(*fitFix, ",") {
		fixed[name] = true
	}
	best, own, tun := score(p)
	t.Logf("start: own %.3f tune %.3f", own, tun)
	for round := 0; round < 6; round++ {
		improved := false
		for _, k := range knobs {
			if fixed[k.name] {
				continue
			}
			for _, v := range k.vals {
				q := p
				*k.get(&q) = v
				if s, o, u := score(q); s > best+1e-9 {
					best, own, tun, p, improved = s, o, u, q, true
					t.Logf("round %d: %s = %v: own %.3f tune %.3f", round, k.name, v, o, u)
				}
			}
		}
		for _, k := range knobs32 {
			if fixed[k.name] {
				continue
			}
			for _, v := range k.vals {
				q := p
				*k.get(&q) = v
				if s, o, u := score(q); s > best+1e-9 {
					best, own, tun, p, improved = s, o, u, q, true
					t.Logf("round %d: %s = %v: own %.3f tune %.3f", round, k.name, v, o, u)
				}
			}
		}
		if !improved {
			break
		}
	}
	t.Logf("fitted: own %.3f tune %.3f", own, tun)
	fmt.Printf("k1 %v\nw %v\nb %v\nsyn %v coord %v\nrelW %v relMiss %v relFloor %v hop2 %v relMaxDF %v\nactMatch %v actNear %v actClash %v\n",
		p.k1, p.w, p.b, p.syn, p.coord, p.relW, p.relMiss, p.relFloor, p.hop2, p.relMaxDF, p.actMatch, p.actNear, p.actClash)
}

// TestReportHalfFigures logs the report half's slices before issue 42 and
// now: scores only, never which queries missed (-reporthalf; run once,
// after tuning).
func TestReportHalfFigures(t *testing.T) {
	if !*reportHalf {
		t.Skip("run with -reporthalf -v, once, after tuning")
	}
	tools := testenv.CorpusTools(t)
	for _, s := range evalSlices(t, tools) {
		if !strings.Contains(s.name, "report half") {
			continue
		}
		t.Logf("%-40s before (e59590c): %v", s.name, evaluateOn(t, build(tools, Options{}, before42), s.q, false))
		t.Logf("%-40s ours:             %v", "", evaluateOn(t, build(tools, Options{}, tuned), s.q, false))
	}
}

var reportHalf = flag.Bool("reporthalf", false, "log the report half's scores (TestReportHalfFigures)")
