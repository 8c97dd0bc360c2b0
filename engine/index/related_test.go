package index

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/google/go-cmp/cmp"
)

// TestSearchRelated: a query sharing no word with any tool finds the tools
// that share a WordNet relative ("depository" is a synonym of repository),
// and says so.
func TestSearchRelated(t *testing.T) {
	ix := New(testTools(), Options{})
	res, err := ix.Search(Query{Text: "depository"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, h := range res.Hits {
		got = append(got, h.Address)
	}
	if diff := cmp.Diff([]string{"github.createIssue", "github.listIssues", "github.deleteRepository"}, got, cmpSorted); diff != "" {
		t.Errorf("hits (-want +got):\n%s", diff)
	}
	if res.Fallback != Related {
		t.Errorf("fallback = %q, want %q", res.Fallback, Related)
	}
	if want := `No tool shares a word with "depository"; these share related words (synonyms, broader terms):` + "\n"; !strings.HasPrefix(res.Text(), want) {
		t.Errorf("text does not start with %q:\n%s", want, res.Text())
	}
	b, _ := json.Marshal(res)
	if !strings.Contains(string(b), `"fallback":"related"`) {
		t.Errorf("JSON has no fallback: %s", b)
	}
	// A query that shares a word never says so.
	res, _ = ix.Search(Query{Text: "repository"})
	if res.Fallback != "" || res.Listed != 0 {
		t.Errorf("repository: fallback %q, listed %d", res.Fallback, res.Listed)
	}
}

// TestSearchScopedNeverEmpty: a namespace-scoped search comes back with
// tools whenever the namespace has tools the caller may see, up to the
// limit: what matched first, then the rest of the namespace in order.
func TestSearchScopedNeverEmpty(t *testing.T) {
	tools := testenv.CorpusTools(t)
	ix := New(tools, Options{})
	size := map[string]int{}
	for _, tl := range tools {
		size[tl.Namespace()]++
	}
	for ns, n := range size {
		for _, text := range []string{"qwzx vbnm", "tick a choice in a combo box", "delete"} {
			res, err := ix.Search(Query{Text: text, Namespace: ns, Limit: 5})
			if err != nil {
				t.Fatal(err)
			}
			if want := min(n, 5); len(res.Hits) != want {
				t.Errorf("%q in %s: %d hits, want %d:\n%s", text, ns, len(res.Hits), want, res.Text())
			}
			if got := len(res.Hits) + res.More; res.Listed > 0 && got != n {
				t.Errorf("%q in %s: %d hits + %d more, want the namespace's %d tools", text, ns, len(res.Hits), res.More, n)
			}
			seen := map[string]bool{}
			for _, h := range res.Hits {
				if hns, _, _ := model.SplitAddress(h.Address); hns != ns || seen[h.Address] {
					t.Errorf("%q in %s: hit %s is another namespace's or twice", text, ns, h.Address)
				}
				seen[h.Address] = true
			}
			if text == "qwzx vbnm" {
				if res.Fallback != ListedOnly || res.Listed != len(res.Hits) {
					t.Errorf("%q in %s: fallback %q, listed %d of %d", text, ns, res.Fallback, res.Listed, len(res.Hits))
				}
				if want := "No tool in " + ns + ` shares a word with "qwzx vbnm", or a related one; its tools in order:`; !strings.HasPrefix(res.Text(), want) {
					t.Errorf("text does not start with %q:\n%s", want, res.Text())
				}
			}
		}
	}
	// Fill after what matched, and say where the listing starts.
	res, _ := ix.Search(Query{Text: "tick a choice in a combo box", Namespace: "puppeteer", Limit: 7})
	if res.Fallback != Related || res.Listed == 0 || res.Listed == len(res.Hits) {
		t.Errorf("fallback %q, listed %d of %d", res.Fallback, res.Listed, len(res.Hits))
	}
	if !strings.Contains(res.Text(), "  (no other tool of puppeteer matches; the rest of its tools, in order:)\n") {
		t.Errorf("text does not say where the listing starts:\n%s", res.Text())
	}
	// A namespace whose every tool is hidden lists nothing.
	ix = New(tools, Options{Hidden: func(t *model.Tool) bool { return t.Namespace() == "redis" }})
	res, _ = ix.Search(Query{Text: "qwzx", Namespace: "redis"})
	if len(res.Hits) != 0 {
		t.Errorf("hidden namespace: %d hits", len(res.Hits))
	}
}

// TestSearchDeterministic: the same query over the same tools gives the
// same hits and scores, from separately built indexes and goroutines.
func TestSearchDeterministic(t *testing.T) {
	tools := testenv.CorpusTools(t)
	tuneHalf, reportHalf := intents(t)
	queries := append(append(append([]evalQuery(nil), evalQueries...), tuneHalf...), reportHalf...)
	run := func(ix *Index) [][]Hit {
		out := make([][]Hit, len(queries))
		for i, e := range queries {
			res, err := ix.Search(Query{Text: e.q, Limit: 10})
			if err != nil {
				t.Fatal(err)
			}
			out[i] = res.Hits
		}
		return out
	}
	first := run(New(tools, Options{}))
	again := make(chan [][]Hit, 2)
	for range 2 {
		go func() { again <- run(New(tools, Options{})) }()
	}
	for range 2 {
		if diff := cmp.Diff(first, <-again); diff != "" {
			t.Errorf("a second run differs (-first +again):\n%s", diff)
		}
	}
}

// TestLexicon checks the embedded WordNet table: sorted stems, links in
// range, and relations WordNet 3.0 has.
func TestLexicon(t *testing.T) {
	if lex.n < 10000 {
		t.Fatalf("lexicon has %d stems", lex.n)
	}
	for i := 1; i < lex.n; i++ {
		if lex.stem(i-1) >= lex.stem(i) {
			t.Fatalf("stems %d and %d out of order: %q, %q", i-1, i, lex.stem(i-1), lex.stem(i))
		}
	}
	for i := range lex.n {
		lex.related(i, func(j, kind int) {
			if j < 0 || j >= lex.n || kind >= numKinds {
				t.Fatalf("stem %q: link to %d of kind %d", lex.stem(i), j, kind)
			}
		})
	}
	kinds := func(a, b string) []int {
		var out []int
		if i := lex.find(a); i >= 0 {
			lex.related(i, func(j, kind int) {
				if lex.stem(j) == b {
					out = append(out, kind)
				}
			})
		}
		return out
	}
	for _, tt := range []struct {
		a, b string
		kind int
	}{
		{"memor", "memori", kindDerived},  // memorize → memory
		{"high", "height", kindAttribute}, // high → height
		{"altitud", "elev", kindHypernym}, // altitude → elevation
		{"vulner", "weak", kindSimilar},   // vulnerable ~ weak
		{"repositori", "depositori", kindSynonym},
		{"logout", "logoff", kindSynonym}, // log_out, log_off: joined
		{"children", "child", kindForm},   // noun.exc
	} {
		if diff := cmp.Diff([]int{tt.kind}, kinds(tt.a, tt.b)); diff != "" {
			t.Errorf("%s → %s (-want +got):\n%s", tt.a, tt.b, diff)
		}
	}
	if lex.find("qwzx") != -1 {
		t.Error("found qwzx")
	}
}
