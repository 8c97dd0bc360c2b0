// Package index is what search reads: a BM25F index over the tools of every
// manifest, answering intent queries ("open a ticket") with one-line
// TypeScript signatures.
//
//	ix := index.New(tools, index.Options{Connections: conns})
//	res, err := ix.Search(index.Query{Text: "open a ticket", Limit: 8})
//	fmt.Print(res.Text())        // or json.Marshal(res) for --json
//
// Ranking is BM25F (Robertson & Zaragoza) over five fields of each tool:
// its name (split at camelCase humps, '_', '-' and digits), its title, its
// description, its parameter names, and its parameter descriptions, plus
// the namespace as a sixth field. Connection names are never indexed.
// Text is lower-cased, stripped of English stop words and stemmed with
// the Snowball English stemmer. A query also tries adjacent words as one
// ("roll back" → rollback), gains a few synonyms from a small table
// ("ticket" → issue, "delete" ↔ remove) at a reduced weight, and a tool's
// score grows with the share of the query's words it matches (×(1 + 0.5 ×
// share)), so tools matching more of what was asked rank first. Field
// weights, length normalization and the synonym table were tuned on the
// real manifests in testdata/manifests with the intent queries of eval_test.go;
// the numbers are in docs/bench-search.md.
//
// A second signal bridges vocabulary: each query word's relatives in
// WordNet 3.0 (lexicon.go: synonyms, derived words, attributes, similar
// words, broader and narrower terms, and the closest of their relatives
// in turn; "memorized" → memory, "altitude" → elevation) are scored over
// the same postings, each tool counting a word's best relative, and added
// to BM25F at a weight (0.3 since issue 42; 0.6 for a word no tool has). It was tuned on
// the own queries and the tune half of testdata/intents.txt. When no hit
// shares a word with the query, the result says so (Fallback), and a
// namespace-scoped search lists the rest of the namespace after what it
// found, so it is never empty while the namespace has tools. A search over
// every namespace where no tool holds much of the query (weak.go) shows
// the few closest, says nothing matched well and lists the namespaces
// (Weak), rather than a page of noise.
// A third signal weighs what the query wants done against what the tool
// does (actions.go): each tool has an action class (read, list, create,
// update, delete, run, send) from its name's verb and its annotations, and
// a query one from its first action word or question word ("forget" →
// delete, "kick off" → run, "what" → read; actionwords.go). A tool whose
// class matches the query's scores ×1.3, a neighbour's (read and list,
// create and send) ×1.2, a clash (a read or a create for a delete) ×0.7;
// weights fitted on the own set and the tune half.
// Last, a reranker (rerank.go) orders the best 20 candidates again by a
// linear combination of the first score and features the sum blurs: the
// share of the query's words in the tool's name and in its description,
// how much of the name the query asks for, whether the query names the
// tool's namespace, the action classes, and whether only related words
// found the tool; its weights were fitted on the same queries.
// Each term's weight in each tool is computed at build, so a search only
// adds up posting lists.
//
// Build is cheap (10,000 tools well under 200 ms): rebuild the index when a
// manifest changes rather than updating it. An Index is safe for
// concurrent use.
package index

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/typegen"
)

// Query limits.
const (
	MaxQueryLen  = 200 // characters
	DefaultLimit = 8
	MaxLimit     = 25
)

// Options adapt the index to the hub's policy and connections. The zero
// value is useful.
type Options struct {
	// Asks reports whether calling the tool needs a person's approval.
	// Default: every tool that is not read-only (model.EffectRead) asks.
	Asks func(*model.Tool) bool
	// Hidden reports whether the tool is denied and so left out of
	// results (counted in Result.Hidden). Default: none.
	Hidden func(*model.Tool) bool
	// Connections names a namespace's connections and its default one, for
	// the header line of text results. Default: none shown.
	Connections func(namespace string) (names []string, def string)
}

// Query is one search.
type Query struct {
	// Text is what the model is looking for, 1 to MaxQueryLen characters;
	// it may be empty when Namespace is set, which lists that namespace.
	Text string
	// Namespace restricts results to one namespace.
	Namespace string
	// Limit is the most hits returned, 1 to MaxLimit; 0 means
	// DefaultLimit.
	Limit int
}

// field is a part of a tool the index reads.
type field uint8

const (
	fName field = iota
	fTitle
	fDesc
	fParam
	fParamDesc
	fNamespace
	fExp // words related to the tool's own (expand.go), when document expansion is on
	numFields
)

// params are the ranking's knobs.
type params struct {
	k1      float64
	w, b    [numFields]float64
	syn     float64 // weight of a synonym relative to the query word; 0: none
	coord   float64 // bonus for matching more of the query's words
	flat    bool    // one field: every text counts as description (the baseline)
	join    bool    // also try adjacent query words as one ("roll back" → rollback)
	analyze [3]bool // camel, stem, stop

	// The second signal: the query's words and their WordNet relatives
	// (lexicon.go), scored over the same postings, fused with BM25F.
	rel      [numKinds]float32  // weight of a relative, by link kind; all 0: no second signal
	hop2     float32            // factor for a relative's relative; 0: one hop
	relW     float32            // weight of the second signal in the fusion, for a word the index has
	relMiss  float32            // the same for a query word no tool has, nor its synonyms: its relatives are all it has
	relSelf  float32            // weight of the query's own word in the second signal
	relFloor float32            // a tool only the second signal finds needs this share of the best score
	relMaxDF float32            // a relative in more than this share of tools (and minMaxDF) is left out (0: none is)
	fold     [numFKinds]float32 // weight of a FOLDOC relative (thesaurus.go), by link kind; all 0: none
	aik      [2]float32         // the same for Aiksaurus (Moby) relatives, when a test loaded its table
	gloss    [numGKinds]float32 // the same for WordNet gloss words (thesaurus.go), when loaded

	// The action-class signal (actions.go): a tool's score times 1+actMatch
	// when its class is the query's, 1+actNear for a neighbour, 1-actClash
	// for a clash. All 0: no signal.
	actMatch, actNear, actClash float32

	// "Nothing matched well" (weak.go): a search over every namespace (of
	// two or more) whose best tool holds less than weakCov of the query's words (by idf; a word
	// no tool has counts weakUnknown of the rarest word's) shows at most
	// weakLimit tools, says so and lists the namespaces. weakCov 0: never.
	weakCov, weakUnknown float32
	weakLimit            int

	// Document expansion (expand.go): each tool's text gains up to expK
	// words related to its own words (field fExp, weight w[fExp]). A
	// related word's weight is the sum, over the tool's words that reach
	// it, of the field's share (expName for the name, 1 for the
	// description) times expDecay^rank in the expansion table (and
	// expWN times the WordNet relative's weight); one under expMin is
	// not added.
	expK                     int
	expName, expDecay        float32
	expWN, expMin, expMaxAcc float32
	// expRel > 0 keeps the expansion words out of BM25F: a query word
	// that is one of a tool's expansion words adds expRel times its
	// weight there to the second signal (it neither counts as a match
	// for coordination nor lifts a Related result).
	expRel float32

	// The reranker (rerank.go): the best rrN candidates ranked again by
	// rr · features. rrN 0: none.
	rr  [numRF]float32
	rrN int // at most MaxLimit

	// The vector signal (vectors.go): a tool's score gains embW times its
	// cosine with the query above embMin; the embK tools closest to the
	// query are candidates (above embMin). A word of GloVe rank r weighs
	// r/(r+embA); a tool's name words count embName times its
	// description's. embCenter takes the tools' mean vector away from
	// every vector. embW 0 and no reranker weight on it: no vectors.
	embW, embMin, embA, embName float32
	embK                        int
	embCenter                   bool
	// Vector relatives (vectors.go): a query word's vrelK closest index
	// terms by their words' vectors (cosine ≥ vrelMin) join its relatives
	// in the second signal at vrel times their cosine. vrel 0: none.
	vrel, vrelMin float32
	vrelK         int
}

// vectors reports whether the index needs word vectors.
func (p *params) vectors() bool {
	return wvec != nil && (p.embW != 0 || p.rr[rfEmb] != 0 || p.rr[rfEmbRel] != 0 || p.embK > 0)
}

// minMaxDF keeps relatives of a small index: the cap on a relative's tools
// (params.relMaxDF) bounds the work of a search over thousands of tools.
const minMaxDF = 100

// tuned are the parameters chosen on the corpus (see eval_test.go).
//
// Issue 42 refitted the weights with the action classes by coordinate
// ascent on MRR@10 over the own set and the tune half (fit_test.go,
// TestFit), the name's and description's weights held (a fit that halved
// them scored more on the tune half but lost "add two numbers" on a small
// hub, as did k1 2, and github.createIssue for "open a ticket"): the
// namespace 2 (a query naming its service: "in linear", "on circleci"),
// parameter descriptions 0.5, length normalization of names 0.75 and of
// descriptions 0.9, coordination 0.25, WordNet 0.3.
var tuned = params{
	k1:      1.2,
	w:       [numFields]float64{fName: 3, fTitle: 0.5, fDesc: 1, fParam: 0.2, fParamDesc: 0.5, fNamespace: 2},
	b:       [numFields]float64{fName: 0.75, fTitle: 0.5, fDesc: 0.9, fParam: 0.75, fParamDesc: 0.75, fNamespace: 0},
	syn:     0.7,
	coord:   0.25,
	join:    true,
	analyze: [3]bool{true, true, true},
	rel: [numKinds]float32{kindSynonym: 1, kindDerived: 0.8, kindAttribute: 0.8, kindSimilar: 0.5,
		kindHypernym: 0.3, kindHyponym: 0.15, kindForm: 1},
	hop2:     0.5,
	relW:     0.3,
	relMiss:  0.6,
	relSelf:  1,
	relFloor: 0.3,
	relMaxDF: 0.02,
	actMatch: 0.3,
	actNear:  0.2,
	actClash: 0.3,

	weakCov:     0.3,
	weakUnknown: 1,
	weakLimit:   5,

	// the reranker (rerank.go), fitted by TestRerankFit on the own set
	// and the tune half
	rrN: 20,
	rr: [numRF]float32{rfScore: 1, rfNameCov: 0.3, rfDescCov: 0.2, rfNamePrec: 0.1, rfRelShare: 0.1,
		rfActMatch: 0.1, rfActNear: 0.05, rfActClash: -0.05, rfNS: 0.5, rfShortName: 0.2,
		rfNameIDF: -0.1, rfParamCov: 0.05, rfRelOnly: 0.5},
}

type posting struct {
	doc int32
	w   float32
}

type doc struct {
	tool model.Tool
	ns   string
	desc string
	sig  atomic.Pointer[string]
	act  action // what the tool does (actions.go)

	// rrT holds the terms of its name, then of its description, then of
	// its parameters' names, each once (rerank.go: nameT, descT, paramT)
	rrT      []int32
	rrD, rrP uint16 // where the description's and the parameters' terms start
	nsT      int32  // its namespace's term, or -1
}

// Index is a built search index.
type Index struct {
	p     params
	an    *analyzer
	opts  Options
	docs  []doc
	terms map[string]int32
	post  [][]posting
	xpost [][]posting // expansion words (expand.go, params.expRel), by term
	byNS  map[string][]int32
	nss   []string
	syn   map[string][]string
	pool  sync.Pool

	actF [numActions][numActions]float32 // score factors, by query and tool class

	names []string // term id → term, during build (expand.go)

	rrDump func(doc int32, f *[numRF]float32) // tests: each reranked candidate's features

	emb     []float32 // each tool's vector (vectors.go), dim apart
	embMean []float32 // the tools' mean vector, when params.embCenter
	termRow []int32   // each term's word vector (vectors.go), -1: none; when params.vrel > 0

	relMu    sync.Mutex
	relCache map[string][]wterm // query word → relatives (relatedTerms)
}

// New builds the index over tools.

// ErrUnknownNamespace is matched by the error of a search narrowed to a
// namespace the index does not have.
var ErrUnknownNamespace = errors.New("unknown namespace")

func New(tools []model.Tool, opts Options) *Index {
	return build(tools, opts, tuned)
}

type entry struct {
	term  int32
	field field
	w     float32 // occurrences (1 for a word of the tool's text; a related word's strength for fExp)
}

func build(tools []model.Tool, opts Options, p params) *Index {
	if opts.Asks == nil {
		opts.Asks = func(t *model.Tool) bool { return t.Effect() != model.EffectRead }
	}
	ix := &Index{
		p: p, opts: opts, an: newAnalyzer(p.analyze[0], p.analyze[1], p.analyze[2]),
		docs: make([]doc, len(tools)), terms: map[string]int32{}, byNS: map[string][]int32{},
	}
	ix.syn = synonyms(ix.an)
	ix.actF = actionFactors(&p)
	ix.relCache = map[string][]wterm{}
	n := len(tools)
	var lens [][numFields]float32 = make([][numFields]float32, n)
	var sum [numFields]float64
	entries := make([][]entry, n)
	var buf []byte
	var cur []entry
	exp := newExpander()
	var rrT []int32
	for i := range tools {
		t := &tools[i]
		d := &ix.docs[i]
		d.tool = *t
		d.ns = t.Namespace()
		d.desc = typegen.FirstSentence(t.Description)
		d.act = toolAction(t)
		if d.desc == "" {
			d.desc = t.Title
		}
		if ix.byNS[d.ns] == nil {
			ix.nss = append(ix.nss, d.ns)
		}
		ix.byNS[d.ns] = append(ix.byNS[d.ns], int32(i))
		cur = cur[:0]
		add := func(f field, s string) {
			if p.flat {
				f = fDesc
			}
			if p.w[f] == 0 {
				return
			}
			buf = ix.an.each(s, buf, func(term string) {
				cur = append(cur, entry{ix.termID(term), f, 1})
				lens[i][f]++
			})
		}
		add(fName, t.Name)
		add(fTitle, t.Title)
		if t.Annotations != nil && t.Annotations.Title != t.Title {
			add(fTitle, t.Annotations.Title)
		}
		add(fDesc, t.Description)
		eachParam(t.InputSchema, func(name, desc string) {
			add(fParam, name)
			add(fParamDesc, desc)
		})
		add(fNamespace, d.ns)
		if p.expK > 0 && p.w[fExp] > 0 {
			cur = ix.expand(cur, &exp)
			for _, e := range cur {
				if e.field == fExp {
					lens[i][fExp] += e.w
				}
			}
		}
		if p.rrN > 0 {
			rrT = rrT[:0]
			for _, f := range []field{fName, fDesc, fParam} {
				start := len(rrT)
				for _, e := range cur {
					if e.field == f && !slices.Contains(rrT[start:], e.term) {
						rrT = append(rrT, e.term)
					}
				}
				switch f {
				case fName:
					d.rrD = uint16(min(len(rrT), math.MaxUint16))
				case fDesc:
					d.rrP = uint16(min(len(rrT), math.MaxUint16))
				}
			}
			d.rrT = slices.Clone(rrT[:min(len(rrT), math.MaxUint16)])
		}
		d.nsT = -1
		for _, e := range cur {
			if e.field == fNamespace {
				d.nsT = e.term
				break
			}
		}
		for f := range numFields {
			sum[f] += float64(lens[i][f])
		}
		entries[i] = append([]entry(nil), cur...)
	}
	sort.Strings(ix.nss)

	var avg [numFields]float64
	for f := range numFields {
		avg[f] = max(sum[f]/float64(max(n, 1)), 1)
	}
	// Document frequencies, then one weight per (term, tool).
	df := make([]int32, len(ix.terms))
	for i := range entries {
		sort.Slice(entries[i], func(a, b int) bool { return entries[i][a].term < entries[i][b].term })
		for j, e := range entries[i] {
			if j == 0 || entries[i][j-1].term != e.term {
				df[e.term]++
			}
		}
	}
	if p.expRel > 0 {
		ix.xpost = make([][]posting, len(ix.terms))
		dfAll := slices.Clone(df)
		for i := range entries {
			// an expansion word counts in its own postings, not in df
			es := entries[i][:0]
			for _, e := range entries[i] {
				if e.field == fExp {
					idf := math.Log(1 + (float64(n)-float64(dfAll[e.term])+0.5)/(float64(dfAll[e.term])+0.5))
					tf := float64(e.w)
					ix.xpost[e.term] = append(ix.xpost[e.term], posting{int32(i), float32(idf * tf / (p.k1 + tf))})
					df[e.term]--
					continue
				}
				es = append(es, e)
			}
			entries[i] = es
		}
	}
	ix.post = make([][]posting, len(ix.terms))
	for t, c := range df {
		ix.post[t] = make([]posting, 0, c)
	}
	for i, es := range entries {
		var norm [numFields]float64
		for f := range numFields {
			norm[f] = p.w[f] / (1 - p.b[f] + p.b[f]*float64(lens[i][f])/avg[f])
		}
		for j := 0; j < len(es); {
			term := es[j].term
			tf := 0.0
			for ; j < len(es) && es[j].term == term; j++ {
				tf += norm[es[j].field] * float64(es[j].w)
			}
			idf := math.Log(1 + (float64(n)-float64(df[term])+0.5)/(float64(df[term])+0.5))
			ix.post[term] = append(ix.post[term], posting{int32(i), float32(idf * tf / (p.k1 + tf))})
		}
	}
	if p.vectors() {
		ix.buildVectors()
	}
	if wvec != nil && p.vrel > 0 {
		ix.termRows(tools)
	}
	ix.names = nil
	ix.an.shared = true
	ix.pool.New = func() any {
		sc := &scratch{score: make([]float32, n), matched: make([]uint8, n), rel: make([]float32, n), best: make([]float32, n)}
		if ix.emb != nil {
			sc.emb = make([]float32, n)
		}
		return sc
	}
	return ix
}

type scratch struct {
	score   []float32 // BM25F
	matched []uint8   // which query words a tool matched (bits)
	touched []int32   // tools with a BM25F score
	rel     []float32 // the second signal
	best    []float32 // one query word's best relative in each tool
	relT    []int32   // tools with a second-signal score
	wordT   []int32   // tools one query word's relatives reached
	cand    []cand
	emb     []float32 // each tool's cosine with the query (vectors.go)
	qv      []float32 // the query's vector
}

type cand struct {
	doc   int32
	a, b  float32 // BM25F, second signal
	m     uint8   // the query words it matched (bits)
	e     float32 // cosine with the query (vectors.go), when on
	byVec bool    // among the params.embK closest to the query
}

// Hit is one tool found.
type Hit struct {
	Address     string
	Signature   string // one line of TypeScript, see typegen.Signature
	Description string // the first sentence of the tool's description
	Asks        bool   // calling it needs a person's approval
	Score       float64
}

// Result is what a search found.
type Result struct {
	Hits   []Hit
	More   int // further matches beyond the limit
	Hidden int // matches hidden by policy
	// Fallback is set when no hit shares a word with the query: Related
	// (ranked by related words) or Listed (a namespace's tools in order).
	Fallback Fallback
	// Weak is set when a search over every namespace found no tool that
	// matches the query well: the few closest are shown, and the
	// namespaces listed.
	Weak bool
	// Listed is how many of the last hits of a namespace-scoped search
	// matched nothing and were listed from the namespace, in order.
	Listed int
	// Skills are the hub's skills that share a word with the query, best
	// first (set by the hub, not by Search): read one with
	// describe("skill:<name>").
	Skills []SkillHit
	conns  map[string]string
	query  Query
	nss    []string
}

// SkillHit is a skill a search found.
type SkillHit struct {
	Name        string `json:"name"`
	Description string `json:"description"` // its first sentence
}

// SkillsOnly is the result of a search over a hub with skills and no tools.
func SkillsOnly(q Query, skills []SkillHit) Result {
	return Result{query: q, Skills: skills}
}

// Search runs q. Errors name the bad input and the accepted range.
func (ix *Index) Search(q Query) (Result, error) {
	if n := utf8.RuneCountInString(q.Text); n > MaxQueryLen {
		return Result{}, fmt.Errorf("query is %d characters long; the limit is %d: shorten it to the words that say what the tool does", n, MaxQueryLen)
	}
	text := strings.TrimSpace(q.Text)
	if text == "" && q.Namespace == "" {
		return Result{}, fmt.Errorf("query is empty: say what the tool should do (1 to %d characters), or pass a namespace to list its tools", MaxQueryLen)
	}
	limit := q.Limit
	if limit == 0 {
		limit = DefaultLimit
	}
	if limit < 1 || limit > MaxLimit {
		return Result{}, fmt.Errorf("limit %d is out of range: pass 1 to %d (default %d)", q.Limit, MaxLimit, DefaultLimit)
	}
	if q.Namespace != "" && ix.byNS[q.Namespace] == nil {
		return Result{}, fmt.Errorf("%w %q: the namespaces are %s", ErrUnknownNamespace, q.Namespace, strings.Join(ix.nss, ", "))
	}
	res := Result{query: q, nss: ix.nss}
	var top []scored
	if text == "" {
		top, res.More, res.Hidden = ix.list(q.Namespace, limit)
	} else {
		top, res.More, res.Hidden, res.Listed, res.Fallback, res.Weak = ix.rank(text, q.Namespace, limit)
	}
	res.Hits = make([]Hit, len(top))
	for i, s := range top {
		d := &ix.docs[s.doc]
		res.Hits[i] = Hit{Address: d.tool.Address, Signature: ix.signature(d), Description: d.desc, Asks: ix.opts.Asks(&d.tool), Score: float64(s.score)}
		if ix.opts.Connections != nil {
			if res.conns == nil {
				res.conns = map[string]string{}
			}
			if _, ok := res.conns[d.ns]; !ok {
				res.conns[d.ns] = connections(ix.opts.Connections(d.ns))
			}
		}
	}
	return res, nil
}

func connections(names []string, def string) string {
	if len(names) == 0 {
		return ""
	}
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = n
		if n == def {
			parts[i] += "*"
		}
	}
	return "  (connections: " + strings.Join(parts, ", ") + ")"
}

// signature is computed on first use and kept.
func (ix *Index) signature(d *doc) string {
	if s := d.sig.Load(); s != nil {
		return *s
	}
	s := typegen.Signature(&d.tool)
	d.sig.Store(&s)
	return s
}

type scored struct {
	doc   int32
	score float32
}

// better orders hits: higher score first, then manifest order.
func better(a, b scored) bool {
	if a.score != b.score {
		return a.score > b.score
	}
	return a.doc < b.doc
}

// list is the tools of one namespace in manifest order.
func (ix *Index) list(ns string, limit int) (top []scored, more, hidden int) {
	for _, i := range ix.byNS[ns] {
		if ix.hidden(i) {
			hidden++
			continue
		}
		if len(top) < limit {
			top = append(top, scored{doc: i})
		} else {
			more++
		}
	}
	return top, more, hidden
}

func (ix *Index) hidden(i int32) bool {
	return ix.opts.Hidden != nil && ix.opts.Hidden(&ix.docs[i].tool)
}

// queryTerm is a term of a query and its weight.
type queryTerm struct {
	id  int32
	w   float32
	bit uint8 // which query word it stands for (for coordination)
}

// queryTerms returns the index terms a query reaches, how many words it
// has, and each word's term (by bit; the last bit takes every word after
// the eighth), whether the index has it or not.
func (ix *Index) queryTerms(text string) ([]queryTerm, int, [8][]string, [8]string) {
	var qt []queryTerm
	var stems [8][]string
	var surf [8]string
	seen := map[string]bool{}
	words := 0
	prev := ""
	add := func(term string, w float32, bit uint8) {
		if id, ok := ix.terms[term]; ok && !seen[term] {
			seen[term] = true
			qt = append(qt, queryTerm{id, w, bit})
		}
	}
	eachWord(text, func(word string) {
		// Two words a person writes apart may be one in tool text:
		// "roll back" → rollback, "log in" → login.
		if prev != "" && ix.p.join {
			ix.an.each(prev+word, nil, func(term string) {
				bit := uint8(max(min(words-1, 7), 0))
				stems[bit] = append(stems[bit], term)
				add(term, 1, bit)
			})
		}
		prev = word
		ix.an.each(word, nil, func(term string) {
			bit := uint8(min(words, 7))
			words++
			if surf[bit] == "" {
				surf[bit] = strings.ToLower(word)
			}
			stems[bit] = append(stems[bit], term)
			add(term, 1, bit)
			if ix.p.syn > 0 {
				for _, s := range ix.syn[term] {
					add(s, float32(ix.p.syn), bit)
				}
			}
		})
	})
	return qt, words, stems, surf
}

// eachWord calls fn with each run of letters and digits in s.
func eachWord(s string, fn func(word string)) {
	for _, w := range strings.FieldsFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
	}) {
		fn(w)
	}
}

// relatives adds to out the index terms related to term in the lexicon,
// each with its best weight: its relatives (p.rel by link kind) and, for
// the closest kinds, their relatives in turn (times p.hop2). Relatives in
// more than p.relMaxDF of the tools are left out.
func (ix *Index) relatives(term string, out map[int32]float32) {
	maxDF := len(ix.docs)
	if ix.p.relMaxDF > 0 {
		maxDF = max(int(ix.p.relMaxDF*float32(len(ix.docs))), minMaxDF)
	}
	put := func(s string, w float32) {
		if id, ok := ix.terms[s]; ok && w > out[id] && len(ix.post[id]) <= maxDF {
			out[id] = w
		}
	}
	ix.thesaurusRelatives(term, put)
	i := lex.find(term)
	if i < 0 {
		return
	}
	lex.related(i, func(j, kind int) {
		w := ix.p.rel[kind]
		if w == 0 {
			return
		}
		s := lex.stem(j)
		put(s, w)
		if ix.p.hop2 == 0 || kind > kindAttribute && kind != kindForm {
			return
		}
		lex.related(j, func(k, kind2 int) {
			if kind2 > kindAttribute && kind2 != kindForm || k == i {
				return
			}
			put(lex.stem(k), w*ix.p.hop2*ix.p.rel[kind2])
		})
	})
}

func (ix *Index) semantic() bool {
	if ix.termRow != nil {
		return true
	}
	for _, w := range ix.p.rel {
		if w > 0 {
			return true
		}
	}
	for _, w := range ix.p.fold {
		if w > 0 {
			return true
		}
	}
	for _, w := range ix.p.aik {
		if w > 0 {
			return true
		}
	}
	for _, w := range ix.p.gloss {
		if w > 0 {
			return true
		}
	}
	return false
}

// best raises each tool's best relative of the current query word to w
// times its weight for term id.
func (ix *Index) best(sc *scratch, id int32, w float32) {
	for _, p := range ix.post[id] {
		if sc.best[p.doc] == 0 {
			sc.wordT = append(sc.wordT, p.doc)
		}
		sc.best[p.doc] = max(sc.best[p.doc], w*p.w)
	}
}

// wterm is an index term and a weight.
type wterm struct {
	id int32
	w  float32
}

// maxRelCache bounds the query words whose relatives an index keeps.
const maxRelCache = 1 << 14

// relatedTerms is relatives of term as a list, kept for the next query
// with the same word. (Their order does not matter: a tool counts the
// best.)
func (ix *Index) relatedTerms(term string) []wterm {
	ix.relMu.Lock()
	r, ok := ix.relCache[term]
	ix.relMu.Unlock()
	if ok {
		return r
	}
	m := map[int32]float32{}
	ix.relatives(term, m)
	r = make([]wterm, 0, len(m))
	for id, w := range m {
		r = append(r, wterm{id, w})
	}
	ix.relMu.Lock()
	if len(ix.relCache) < maxRelCache {
		ix.relCache[term] = r
	}
	ix.relMu.Unlock()
	return r
}

// Fallback says how a result was found when no tool matched a word of
// the query.
type Fallback string

const (
	// Related: no tool shares a word with the query; the hits share
	// related words (WordNet: synonyms, derived words, broader terms).
	Related Fallback = "related"
	// ListedOnly: a namespace-scoped search where neither signal found a
	// tool: the namespace's tools in manifest order.
	ListedOnly Fallback = "listed"
)

func (ix *Index) rank(text, ns string, limit int) (top []scored, more, hidden, listed int, fb Fallback, weak bool) {
	top = make([]scored, 0, limit)
	qt, words, stems, surf := ix.queryTerms(text)
	sc := ix.pool.Get().(*scratch)
	defer ix.pool.Put(sc)
	var reached uint8 // the query words some tool has (or one of their synonyms)
	for _, q := range qt {
		if len(ix.post[q.id]) > 0 {
			reached |= 1 << q.bit
		}
		if ix.xpost != nil {
			for _, p := range ix.xpost[q.id] {
				if sc.rel[p.doc] == 0 {
					sc.relT = append(sc.relT, p.doc)
				}
				sc.rel[p.doc] += ix.p.expRel * q.w * p.w
			}
		}
		for _, p := range ix.post[q.id] {
			if sc.matched[p.doc] == 0 {
				sc.touched = append(sc.touched, p.doc)
			}
			sc.score[p.doc] += q.w * p.w
			sc.matched[p.doc] |= 1 << q.bit
		}
	}
	words = min(words, 8)
	if ix.semantic() {
		for bit, ws := range stems {
			if len(ws) == 0 {
				continue
			}
			// The word itself, then its relatives: each tool counts the
			// best of them (a maximum, so the order does not matter).
			for _, w := range ws {
				if id, ok := ix.terms[w]; ok {
					ix.best(sc, id, ix.p.relSelf)
				}
				for _, r := range ix.relatedTerms(w) {
					ix.best(sc, r.id, r.w)
				}
			}
			if ix.termRow != nil && surf[bit] != "" {
				for _, r := range ix.vectorRelatives(surf[bit]) {
					ix.best(sc, r.id, r.w)
				}
			}
			f := ix.p.relW
			if reached&(1<<bit) == 0 {
				f = ix.p.relMiss
			}
			for _, d := range sc.wordT {
				if sc.rel[d] == 0 {
					sc.relT = append(sc.relT, d)
				}
				sc.rel[d] += f * sc.best[d]
				sc.best[d] = 0
			}
			sc.wordT = sc.wordT[:0]
		}
	}
	// The vector signal: every tool's cosine with the query, and the
	// closest tools as candidates.
	kth, vec := float32(2), false
	if ix.emb != nil {
		kth, vec = ix.vectorScores(sc, text, ns)
		if vec && kth < 2 {
			for i, e := range sc.emb {
				if e >= kth && e > ix.p.embMin && sc.score[i] == 0 && sc.rel[i] == 0 {
					sc.relT = append(sc.relT, int32(i))
				}
			}
		}
	}
	// Candidates: every tool a signal scored, in the namespace and not
	// hidden.
	cs := sc.cand[:0]
	var maxS float32
	visit := func(i int32) {
		a, m, b := sc.score[i], sc.matched[i], sc.rel[i]
		sc.score[i], sc.matched[i], sc.rel[i] = 0, 0, 0
		var e float32
		byVec := false
		if vec {
			e = sc.emb[i]
			byVec = e >= kth && e > ix.p.embMin
			sc.emb[i] = -3 // visited
		}
		if a == 0 && b == 0 && !byVec || ns != "" && ix.docs[i].ns != ns {
			return
		}
		if ix.hidden(i) {
			if a > 0 { // a match by word: say policy hides it
				hidden++
			}
			return
		}
		if words > 1 && ix.p.coord > 0 {
			c := 1 + float32(ix.p.coord)*float32(popcount(m))/float32(words)
			a *= c
			b *= c
		}
		maxS = max(maxS, a+b)
		cs = append(cs, cand{doc: i, a: a, b: b, m: m, e: e, byVec: byVec})
	}
	for _, i := range sc.touched {
		visit(i)
	}
	for _, i := range sc.relT {
		visit(i)
	}
	sc.touched, sc.relT = sc.touched[:0], sc.relT[:0]
	// A tool only the second signal found must come close to the best.
	k := 0
	for _, c := range cs {
		if c.a > 0 || c.b >= ix.p.relFloor*maxS || c.byVec {
			cs[k] = c
			k++
		}
	}
	cs = cs[:k]
	sc.cand = cs
	related := true
	qa := actNone
	if ix.p.actMatch != 0 || ix.p.actNear != 0 || ix.p.actClash != 0 || ix.p.rrN > 0 {
		qa = queryAction(text)
	}
	want := limit
	if ix.p.rrN > limit {
		limit = ix.p.rrN
		if cap(top) < limit {
			top = make([]scored, 0, limit)
		}
	}
	for _, c := range cs {
		if c.a > 0 {
			related = false
		}
		s := c.a + c.b
		if vec && c.e > ix.p.embMin {
			s += ix.p.embW * (c.e - ix.p.embMin)
		}
		if qa != actNone {
			s *= ix.actF[qa][ix.docs[c.doc].act]
		}
		x := scored{c.doc, s}
		if len(top) < limit {
			top = append(top, x)
			for k := len(top) - 1; k > 0 && better(top[k], top[k-1]); k-- {
				top[k], top[k-1] = top[k-1], top[k]
			}
			continue
		}
		more++
		if better(x, top[limit-1]) {
			top[limit-1] = x
			for k := limit - 1; k > 0 && better(top[k], top[k-1]); k-- {
				top[k], top[k-1] = top[k-1], top[k]
			}
		}
	}
	if ix.p.rrN > 0 && len(top) > 0 {
		ix.rerank(sc, top, cs, qt, words, qa)
	}
	if len(top) > want {
		more += len(top) - want
		top = top[:want]
	}
	limit = want
	if len(top) > 0 && related {
		fb = Related
	}
	if ns == "" && len(ix.nss) > 1 && len(top) > 0 && ix.p.weakCov > 0 && ix.coverage(cs, stems, reached) < ix.p.weakCov {
		// Nothing matched well: the few closest, not a page of noise.
		weak = true
		if n := min(len(top), ix.p.weakLimit); n < len(top) {
			more += len(top) - n
			top = top[:n]
		}
	}
	if ns != "" && len(top) < limit {
		// A namespace-scoped search lists the namespace's other tools
		// after what it found, so it never comes back empty, or with one
		// tool, while the namespace has tools the caller may see.
		listed, more = ix.fill(ns, top, limit)
		if len(top) == 0 && listed > 0 {
			fb = ListedOnly
		}
		top = top[:len(top)+listed]
	}
	return top, more, hidden, listed, fb, weak
}

// fill appends to top, up to limit, the tools of ns top does not hold, in
// manifest order; it returns how many it appended and how many more there
// are. top's backing array has room for limit hits.
func (ix *Index) fill(ns string, top []scored, limit int) (listed, more int) {
	n := len(top)
	for _, i := range ix.byNS[ns] {
		if ix.hidden(i) || slices.ContainsFunc(top[:n], func(s scored) bool { return s.doc == i }) {
			continue
		}
		if n+listed < limit {
			top = append(top, scored{doc: i})
			listed++
		} else {
			more++
		}
	}
	return listed, more
}

func popcount(b uint8) int {
	n := 0
	for ; b != 0; b &= b - 1 {
		n++
	}
	return n
}

// Text renders the result for a model: hits grouped by namespace, the
// namespace of the best hit first, each as its signature, "[asks]" when it
// needs approval, and its description's first sentence.
func (r Result) Text() string {
	var b strings.Builder
	skills := func() {
		if len(r.Skills) == 0 {
			return
		}
		b.WriteString("skills (instructions, not tools: read one with describe(\"skill:<name>\"))\n")
		for _, s := range r.Skills {
			b.WriteString("  skill:" + s.Name + "\n")
			if s.Description != "" {
				b.WriteString("    " + s.Description + "\n")
			}
		}
	}
	if r.Fallback != "" {
		// The skills share the query's words and the tools do not: the
		// skills first.
		skills()
	}
	if len(r.Hits) == 0 && len(r.Skills) > 0 {
		// nothing to say about tools
	} else if len(r.Hits) == 0 {
		if r.query.Text == "" {
			fmt.Fprintf(&b, "No tools to list in %s.\n", r.query.Namespace)
		} else {
			fmt.Fprintf(&b, "No tools match %q. Try other words for what the tool does", r.query.Text)
			if r.query.Namespace != "" {
				b.WriteString(", or leave out the namespace")
			}
			fmt.Fprintf(&b, ". Namespaces: %s.\n", strings.Join(r.nss, ", "))
		}
	}
	switch r.Fallback {
	case Related:
		if r.query.Namespace != "" {
			fmt.Fprintf(&b, "No tool in %s shares a word with %q; its tools ranked by related words (synonyms, broader terms):\n", r.query.Namespace, r.query.Text)
		} else {
			fmt.Fprintf(&b, "No tool shares a word with %q; these share related words (synonyms, broader terms):\n", r.query.Text)
		}
	case ListedOnly:
		fmt.Fprintf(&b, "No tool in %s shares a word with %q, or a related one; its tools in order:\n", r.query.Namespace, r.query.Text)
	default:
		if r.Weak {
			fmt.Fprintf(&b, "No tool matches %q well; the closest:\n", r.query.Text)
		}
	}
	done := map[string]bool{}
	for i, h := range r.Hits {
		ns, _, _ := model.SplitAddress(h.Address)
		if done[ns] {
			continue
		}
		done[ns] = true
		b.WriteString(ns + r.conns[ns] + "\n")
		for j, g := range r.Hits[i:] {
			if gns, _, _ := model.SplitAddress(g.Address); gns != ns {
				continue
			}
			if r.Listed > 0 && r.Listed < len(r.Hits) && i+j == len(r.Hits)-r.Listed {
				fmt.Fprintf(&b, "  (no other tool of %s matches; the rest of its tools, in order:)\n", ns)
			}
			b.WriteString("  " + g.Signature)
			if g.Asks {
				b.WriteString("   [asks]")
			}
			b.WriteString("\n")
			if g.Description != "" {
				b.WriteString("    " + g.Description + "\n")
			}
		}
	}
	if r.Weak {
		fmt.Fprintf(&b, "Nothing matched well. Namespaces: %s. Pass namespace to see one's best tools, or say what the tool should do in other words.\n", strings.Join(r.nss, ", "))
	} else if r.More > 0 {
		if r.Listed > 0 {
			fmt.Fprintf(&b, "%d more tools in %s. Raise limit (up to %d) to see them.\n", r.More, r.query.Namespace, MaxLimit)
		} else if r.query.Namespace == "" {
			fmt.Fprintf(&b, "%d more matches. Narrow the query or pass namespace.\n", r.More)
		} else {
			fmt.Fprintf(&b, "%d more matches. Narrow the query or raise limit (up to %d).\n", r.More, MaxLimit)
		}
	}
	if r.Hidden > 0 {
		fmt.Fprintf(&b, "%d more matches are hidden: policy denies them.\n", r.Hidden)
	}
	if r.Fallback == "" {
		skills()
	}
	return b.String()
}

// MarshalJSON gives the --json shape:
// {"results":[{"address","signature","description","asks"}],"more":N,"hidden":N},
// plus "fallback":"related"|"listed" when no hit shares a word with the
// query, "listed":N when the last N hits of a namespace-scoped search
// matched nothing and were listed from the namespace, and "weak":true with
// "namespaces":[…] when no tool matched the query well.
func (r Result) MarshalJSON() ([]byte, error) {
	type hit struct {
		Address     string `json:"address"`
		Signature   string `json:"signature"`
		Description string `json:"description"`
		Asks        bool   `json:"asks"`
	}
	out := struct {
		Results    []hit      `json:"results"`
		More       int        `json:"more"`
		Hidden     int        `json:"hidden"`
		Fallback   Fallback   `json:"fallback,omitempty"`
		Listed     int        `json:"listed,omitempty"`
		Weak       bool       `json:"weak,omitempty"`
		Namespaces []string   `json:"namespaces,omitempty"`
		Skills     []SkillHit `json:"skills,omitempty"`
	}{Results: make([]hit, len(r.Hits)), More: r.More, Hidden: r.Hidden, Fallback: r.Fallback, Listed: r.Listed, Weak: r.Weak, Skills: r.Skills}
	if r.Weak {
		out.Namespaces = r.nss
	}
	for i, h := range r.Hits {
		out.Results[i] = hit{h.Address, h.Signature, h.Description, h.Asks}
	}
	return json.Marshal(out)
}
