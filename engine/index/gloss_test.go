package index

import (
	"bufio"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/capabilities-sh/capabilities/internal/testenv"
)

// The WordNet gloss table (issue 42): a word related to the words of its
// definitions. TestGlossGenerate is its generator (-glossgen DIR, Debian's
// wordnet-base at /usr/share/wordnet): for every one-word lemma of
// index.{noun,verb,adj,adv}, the content words (the index's analyzer:
// split, stop words dropped, Snowball stems) of the gloss of its first
// sense (kind glDef) and of its next glossSenses-1 senses (glDefMore), the
// gloss's quoted examples left out; and the reverse of the first: from a
// gloss word to the lemmas whose first gloss holds it (glUsedIn). A gloss
// word in more than glossMaxDF glosses ("person", "act", "something") is
// left out, and a target is kept only when it is a word of an MCP tool's
// text: the 19 corpus manifests and the npm tool corpus
// (internal/toolcorpus/corpus.jsonl.gz). WordNet 3.0's licence:
// LICENSE-WordNet.txt.
//
//	go test ./engine/index -run TestGlossGenerate -glossgen /usr/share/wordnet -v

var glossGen = flag.String("glossgen", "", "generate testdata/gloss.bin from this WordNet 3.0 dict directory (TestGlossGenerate)")

var glossCorpus = flag.String("glosscorpus", "internal/toolcorpus/corpus.jsonl.gz", "with -glossgen: the npm tool corpus whose words (with the manifests') are the gloss table's targets")

const (
	glossFile   = "testdata/gloss.bin"
	glossSenses = 3    // senses of a lemma whose glosses are read
	glossMaxDF  = 1500 // a gloss word in more glosses is left out
)

var glossQuoted = regexp.MustCompile(`"[^"]*"`)

// wnGlosses reads data.POS: synset offset → its gloss without examples.
func wnGlosses(t testing.TB, dir, pos string) map[string]string {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "data."+pos))
	if err != nil {
		t.Fatalf("reading WordNet: %v", err)
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if strings.HasPrefix(l, " ") {
			continue
		}
		off, _, _ := strings.Cut(l, " ")
		_, g, ok := strings.Cut(l, " | ")
		if !ok {
			continue
		}
		out[off] = glossQuoted.ReplaceAllString(g, " ")
	}
	return out
}

// wnSenses reads index.POS: one-word lemma → its synset offsets, most
// frequent sense first.
func wnSenses(t testing.TB, dir, pos string) map[string][]string {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "index."+pos))
	if err != nil {
		t.Fatalf("reading WordNet: %v", err)
	}
	defer f.Close()
	out := map[string][]string{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if strings.HasPrefix(l, " ") {
			continue
		}
		fs := strings.Fields(l)
		if len(fs) < 6 || strings.ContainsAny(fs[0], "_-.") {
			continue
		}
		n := atoi(fs[2])
		if len(fs) < n {
			continue
		}
		out[fs[0]] = fs[len(fs)-n:]
	}
	return out
}

func atoi(s string) int {
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0
		}
		n = n*10 + int(c-'0')
	}
	return n
}

// glossTable builds the links from WordNet in dir; vocab is the targets kept.
func glossTable(t testing.TB, dir string, vocab map[string]bool) map[string]map[string]int {
	a := newAnalyzer(true, true, true)
	var buf []byte
	terms := func(s string) []string {
		var out []string
		buf = a.each(s, buf, func(w string) {
			if !slices.Contains(out, w) {
				out = append(out, w)
			}
		})
		return out
	}
	type sense struct {
		lemma string
		rank  int
		words []string
	}
	var all []sense
	df := map[string]int{}
	for _, pos := range []string{"noun", "verb", "adj", "adv"} {
		glosses := wnGlosses(t, dir, pos)
		gw := map[string][]string{}
		for off, g := range glosses {
			gw[off] = terms(g)
			for _, w := range gw[off] {
				df[w]++
			}
		}
		for lemma, offs := range wnSenses(t, dir, pos) {
			for r, off := range offs[:min(len(offs), glossSenses)] {
				all = append(all, sense{lemma, r, gw[off]})
			}
		}
	}
	links := map[string]map[string]int{}
	link := func(from, to string, kind int) {
		if from == to || !vocab[to] {
			return
		}
		if links[from] == nil {
			links[from] = map[string]int{}
		}
		if k, ok := links[from][to]; !ok || kind < k {
			links[from][to] = kind
		}
	}
	for _, s := range all {
		from := terms(s.lemma)
		if len(from) != 1 {
			continue
		}
		for _, w := range s.words {
			if df[w] > glossMaxDF {
				continue
			}
			kind := glDef
			if s.rank > 0 {
				kind = glDefMore
			}
			link(from[0], w, kind)
			if s.rank == 0 {
				link(w, from[0], glUsedIn)
			}
		}
	}
	return links
}

// toolVocab is every term of the manifests' tools and the npm corpus' tools.
func toolVocab(t testing.TB, corpus string) map[string]bool {
	a := newAnalyzer(true, true, true)
	vocab := map[string]bool{}
	var buf []byte
	add := func(s string) { buf = a.each(s, buf, func(w string) { vocab[w] = true }) }
	for _, tl := range testenv.CorpusTools(t) {
		add(manifestDoc(tl))
	}
	if corpus != "" {
		for _, l := range readToolCorpus(t, corpus) {
			for _, tl := range l.Tools {
				add(tl.Name + " " + tl.Description)
				for k, v := range tl.Params {
					add(k + " " + v)
				}
			}
		}
	}
	return vocab
}

// TestGlossGenerate is the generator (run with -glossgen DIR).
func TestGlossGenerate(t *testing.T) {
	if *glossGen == "" {
		t.Skip("run with -glossgen /usr/share/wordnet to regenerate " + glossFile)
	}
	vocab := toolVocab(t, *glossCorpus)
	links := glossTable(t, *glossGen, vocab)
	b := writeTable("WNG1", links)
	if err := os.WriteFile(glossFile, b, 0o644); err != nil {
		t.Fatalf("writing %s: %v", glossFile, err)
	}
	n := 0
	for _, m := range links {
		n += len(m)
	}
	t.Logf("%d target words; %d stems with links, %d links; %d bytes", len(vocab), len(links), n, len(b))
}

// loadGloss loads testdata/gloss.bin into the index's gloss table for the
// test and returns its bytes.
func loadGloss(t testing.TB) []byte {
	t.Helper()
	b, err := os.ReadFile(glossFile)
	if err != nil {
		t.Fatalf("reading the gloss table (go test -run TestGlossGenerate -glossgen /usr/share/wordnet): %v", err)
	}
	gloss = parseTable(b, "WNG1")
	t.Cleanup(func() { gloss = nil })
	return b
}

var glossTune = flag.Bool("glosstune", false, "grid of the gloss weights on the own set and the tune half (TestGlossTune)")

// TestGlossTune searches the gloss weights on the own set and the tune half
// only (the report half is never scored here).
func TestGlossTune(t *testing.T) {
	if !*glossTune {
		t.Skip("run with -glosstune -v")
	}
	loadGloss(t)
	tools := testenv.CorpusTools(t)
	tuneHalf, _ := intents(t)
	th, _ := taggedIntents(t)
	hardTune := tagged(th, tagHard)
	for _, d := range []float32{0, 0.2, 0.4, 0.6} {
		for _, m := range []float32{0, 0.2} {
			for _, u := range []float32{0, 0.2, 0.4} {
				p := tuned
				p.gloss = [numGKinds]float32{d, m, u}
				ix := build(tools, Options{}, p)
				t.Logf("gloss def %.1f more %.1f usedIn %.1f: own %v | tune %v | tune hard %v", d, m, u,
					evaluateOn(t, ix, evalQueries, false), evaluateOn(t, ix, tuneHalf, false), evaluateOn(t, ix, hardTune, false))
			}
		}
	}
}
