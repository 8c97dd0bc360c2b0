package index

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/capabilities-sh/capabilities/internal/testenv"
)

// The expansion table (issue 42, expand.go) is learned like npmrel.bin
// (npmrel_test.go) from the npm tool corpus and the 19 manifests, one
// document per tool: for every term in ≥ npmRelMinDF tools, its npmExpK
// strongest PPMI partners, any term of the corpus (not only the
// manifests'), the link's kind its rank. TestNpmExpGenerate is the
// generator:
//
//	go test ./engine/index -run TestNpmExpGenerate -npmexpgen internal/toolcorpus/corpus.jsonl.gz -v

var npmExpGen = flag.String("npmexpgen", "", "generate testdata/npmexp.bin from this tool corpus (JSONL, .gz allowed)")

const (
	npmExpFile = "testdata/npmexp.bin"
	npmExpK    = 8
)

// toolDocs are the corpus' tools and the manifests' as term sets.
func toolDocs(t testing.TB, corpus string) (docs [][]string, servers, ntools int) {
	a := newAnalyzer(true, true, true)
	var buf []byte
	terms := func(s string) []string {
		set := map[string]bool{}
		buf = a.each(s, buf, func(t string) { set[t] = true })
		out := make([]string, 0, len(set))
		for w := range set {
			out = append(out, w)
		}
		slices.Sort(out)
		return out
	}
	for _, l := range readToolCorpus(t, corpus) {
		if len(l.Tools) > 0 {
			servers++
		}
		for _, tl := range l.Tools {
			doc := tl.Name + " " + tl.Description
			for k, v := range tl.Params {
				doc += " " + k + " " + v
			}
			docs = append(docs, terms(doc))
			ntools++
		}
	}
	for _, tl := range testenv.CorpusTools(t) {
		docs = append(docs, terms(manifestDoc(tl)))
	}
	return docs, servers, ntools
}

func TestNpmExpGenerate(t *testing.T) {
	if *npmExpGen == "" {
		t.Skip("run with -npmexpgen internal/toolcorpus/corpus.jsonl.gz to regenerate " + npmExpFile)
	}
	docs, servers, ntools := toolDocs(t, *npmExpGen)
	terms, rows := npmPPMI(docs)
	links := map[string]map[string]int{}
	for i, r := range rows {
		for k, c := range r[:min(len(r), npmExpK)] {
			if links[terms[i]] == nil {
				links[terms[i]] = map[string]int{}
			}
			links[terms[i]][terms[c.j]] = min(k, 7)
		}
	}
	b := writeTable("NPX1", links)
	if err := os.WriteFile(npmExpFile, b, 0o644); err != nil {
		t.Fatalf("writing %s: %v", npmExpFile, err)
	}
	t.Logf("%d servers, %d tools, %d documents with the manifests; %d stems with links; %d bytes", servers, ntools, len(docs), len(links), len(b))
}

// loadNpmExp loads testdata/npmexp.bin as the expansion table for the test.
func loadNpmExp(t testing.TB) []byte {
	t.Helper()
	b, err := os.ReadFile(npmExpFile)
	if err != nil {
		t.Fatalf("reading the expansion table (go test -run TestNpmExpGenerate -npmexpgen CORPUS): %v", err)
	}
	expansion = parseTable(b, "NPX1")
	t.Cleanup(func() { expansion = nil })
	return b
}

var expRels = &floatList{0.3, 0.6, 1}

func init() { flag.Var(expRels, "exprel", "TestExpTune's expRel values, comma-separated") }

// floatList is a flag of comma-separated numbers.
type floatList []float32

func (l *floatList) String() string { return fmt.Sprint(*l) }

func (l *floatList) Set(s string) error {
	*l = nil
	for _, f := range strings.Split(s, ",") {
		var x float32
		if _, err := fmt.Sscan(f, &x); err != nil {
			return fmt.Errorf("parsing %q: %w", f, err)
		}
		*l = append(*l, x)
	}
	return nil
}

var expTune = flag.Bool("exptune", false, "grid of the document expansion weights on the own set and the tune half (TestExpTune)")

func withExp(p params, w float64, k int, name, decay, wn, minAcc float32) params {
	p.w[fExp] = w
	p.b[fExp] = 0.5
	p.expK, p.expName, p.expDecay, p.expWN, p.expMin = k, name, decay, wn, minAcc
	return p
}

// TestExpTune searches the expansion weights on the own set and the tune
// half only (the report half is never scored here).
func TestExpTune(t *testing.T) {
	if !*expTune {
		t.Skip("run with -exptune -v")
	}
	tools := testenv.CorpusTools(t)
	tuneHalf, _ := intents(t)
	th, _ := taggedIntents(t)
	hardTune := tagged(th, tagHard)
	run := func(name string, p params) {
		ix := build(tools, Options{}, p)
		t.Logf("%-40s own %v | tune %v | hard %v", name, evaluateOn(t, ix, evalQueries, false), evaluateOn(t, ix, tuneHalf, false), evaluateOn(t, ix, hardTune, false))
	}
	run("ours", tuned)
	for _, src := range []string{"npm", "both", "wordnet"} {
		if src != "wordnet" {
			loadNpmExp(t)
		} else {
			expansion = nil
		}
		for _, w := range *expRels {
			for _, k := range []int{5, 10, 20} {
				for _, minAcc := range []float32{0.5, 1, 2} {
					wn := float32(0)
					if src != "npm" {
						wn = 1
					}
					p := withExp(tuned, 1, k, 2, 0.8, wn, minAcc)
					p.expRel = w
					run(src+" rel "+ftoa(float64(w))+" k "+itoa(k)+" min "+ftoa(float64(minAcc)), p)
				}
			}
		}
	}
}

func ftoa(f float64) string { return string(rune('0'+int(f))) + "." + itoa(int(f*10)%10) }

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}
