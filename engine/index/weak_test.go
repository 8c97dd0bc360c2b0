package index

import (
	"encoding/json"
	"flag"
	"strings"
	"testing"

	"github.com/capabilities-sh/capabilities/internal/testenv"
)

// offTopic are requests no tool of the corpus serves: a search for them
// should say nothing matched well rather than fill a page.
var offTopic = []string{
	"bake a chocolate cake",
	"book a flight to Tokyo",
	"play some jazz music",
	"translate this paragraph into French",
	"what is the meaning of life",
	"order a pizza with extra cheese",
	"tune my guitar",
	"recommend a good novel to read",
	"convert 100 dollars to euros",
	"check the weather forecast for tomorrow",
	"water the plants on the balcony",
	"feed the cat at noon",
	"buy tickets for the football match",
	"write a haiku about autumn leaves",
	"calculate my income tax",
	"call my mother on her birthday",
	"rent a car for the weekend",
	"learn to knit a scarf",
	"horoscope for Virgo",
	"lottery numbers from last night",
}

func weakOf(t testing.TB, ix *Index, q string) bool {
	t.Helper()
	res, err := ix.Search(Query{Text: q, Limit: 10})
	if err != nil {
		t.Fatalf("searching %q: %v", q, err)
	}
	return res.Weak || len(res.Hits) == 0
}

// TestNeverNoisy: most off-topic requests get the short "nothing matched
// well" answer, few of the own set's real ones do, and a namespace-scoped
// search is never cut short.
func TestNeverNoisy(t *testing.T) {
	tools := testenv.CorpusTools(t)
	ix := build(tools, Options{}, tuned)
	weak := 0
	for _, q := range offTopic {
		if weakOf(t, ix, q) {
			weak++
		} else if testing.Verbose() {
			t.Logf("off topic, yet matched well: %q", q)
		}
	}
	if 4*weak < 3*len(offTopic) {
		t.Errorf("%d of %d off-topic queries said nothing matched well; want three quarters", weak, len(offTopic))
	}
	real := 0
	for _, e := range evalQueries {
		if weakOf(t, ix, e.q) {
			real++
			if testing.Verbose() {
				t.Logf("real, yet weak: %q", e.q)
			}
		}
	}
	if 10*real > len(evalQueries) {
		t.Errorf("%d of %d own queries said nothing matched well; want a tenth at most", real, len(evalQueries))
	}
	t.Logf("weak: %d of %d off-topic, %d of %d own", weak, len(offTopic), real, len(evalQueries))

	// Scoped to a namespace: never weak, always the namespace's best.
	res, err := ix.Search(Query{Text: "bake a chocolate cake", Namespace: "github", Limit: 5})
	if err != nil {
		t.Fatal(err)
	}
	if res.Weak || len(res.Hits) != 5 {
		t.Errorf("scoped off-topic search: weak %v, %d hits; want 5 of github's", res.Weak, len(res.Hits))
	}
}

func TestWeakAnswer(t *testing.T) {
	ix := build(testenv.CorpusTools(t), Options{}, tuned)
	res, err := ix.Search(Query{Text: "order a pizza with extra cheese", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Weak {
		t.Fatalf("%q: not weak:\n%s", "order a pizza with extra cheese", res.Text())
	}
	if len(res.Hits) > tuned.weakLimit {
		t.Errorf("weak result has %d hits; want at most %d", len(res.Hits), tuned.weakLimit)
	}
	text := res.Text()
	for _, want := range []string{`No tool matches "order a pizza with extra cheese" well`, "Namespaces: brave, circleci, datadog,", "Pass namespace"} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q:\n%s", want, text)
		}
	}
	var js struct {
		Weak       bool
		Namespaces []string
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &js); err != nil {
		t.Fatal(err)
	}
	if !js.Weak || len(js.Namespaces) != 19 {
		t.Errorf("json: weak %v, %d namespaces; want true, 19: %s", js.Weak, len(js.Namespaces), b)
	}
	// A query that matches well is not weak and keeps its page.
	res, err = ix.Search(Query{Text: "create a new branch", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if res.Weak || len(res.Hits) != 10 || strings.Contains(res.Text(), "Nothing matched well") {
		t.Errorf("%q: weak %v, %d hits:\n%s", "create a new branch", res.Weak, len(res.Hits), res.Text())
	}
}

var weakTune = flag.Bool("weaktune", false, "search the weak-match parameters on the tune half (TestWeakTune)")

// TestWeakTune logs, for a grid of the weak-match parameters, how many
// off-topic queries are cut short and what it costs the own set and the
// tune half (never the report half); run with -weaktune.
func TestWeakTune(t *testing.T) {
	if !*weakTune {
		t.Skip("run with -weaktune")
	}
	tools := testenv.CorpusTools(t)
	tuneHalf, _ := intents(t)
	tuneHard := hard(tools, tuneHalf)
	off := func(ix *Index) int {
		n := 0
		for _, q := range offTopic {
			if weakOf(t, ix, q) {
				n++
			}
		}
		return n
	}
	cnt := func(ix *Index, qs []evalQuery) int {
		n := 0
		for _, e := range qs {
			if weakOf(t, ix, e.q) {
				n++
			}
		}
		return n
	}
	p0 := tuned
	p0.weakCov = 0
	ix := build(tools, Options{}, p0)
	t.Logf("off: own MRR %.3f tune MRR %.3f R@5 %.3f hard MRR %.3f", evaluateOn(t, ix, evalQueries, false).mrr, evaluateOn(t, ix, tuneHalf, false).mrr, evaluateOn(t, ix, tuneHalf, false).r5, evaluateOn(t, ix, tuneHard, false).mrr)
	for _, cov := range []float32{0.2, 0.3, 0.4, 0.5, 0.6} {
		for _, u := range []float32{0.25, 0.5, 1} {
			for _, lim := range []int{3, 5} {
				p := tuned
				p.weakCov, p.weakUnknown, p.weakLimit = cov, u, lim
				ix := build(tools, Options{}, p)
				th := evaluateOn(t, ix, tuneHalf, false)
				t.Logf("cov %.1f unknown %.2f limit %d: off-topic weak %2d/%d, own weak %2d, tune weak %3d, own MRR %.3f, tune MRR %.3f R@5 %.3f, tune hard MRR %.3f",
					cov, u, lim, off(ix), len(offTopic), cnt(ix, evalQueries), cnt(ix, tuneHalf), evaluateOn(t, ix, evalQueries, false).mrr, th.mrr, th.r5, evaluateOn(t, ix, tuneHard, false).mrr)
			}
		}
	}
}
