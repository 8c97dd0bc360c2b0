package index

import (
	"cmp"
	"slices"
)

// Document expansion (issue 42): at build, each tool's text gains the words
// most related to its own, in a field of their own (fExp), so that a query
// in other words than the tool's meets it in the postings at no cost at
// search time. A candidate's strength is the sum over the tool's name and
// description words that reach it: a word used with several of the tool's
// words (its context) outweighs a relative of one. The relations are the
// expansion table (learned from MCP tools' descriptions; nil unless loaded)
// and, at params.expWN, WordNet's direct links.

// expansion is a table of each word's strongest partners in MCP tool
// descriptions, in lexicon.bin's layout; a link's kind is its rank (0
// strongest, 7 for the eighth and later). Nil unless loaded.
var expansion *lexicon

// wstem is a related stem and its weight.
type wstem struct {
	s string
	w float32
}

// expander keeps, during one build, each word's relatives and the scratch
// of one tool's candidates.
type expander struct {
	rel  map[string][]wstem
	acc  map[string]float32
	have map[int32]bool
	src  map[int32]float32
	out  []wstem
}

func newExpander() expander {
	return expander{rel: map[string][]wstem{}, acc: map[string]float32{}, have: map[int32]bool{}, src: map[int32]float32{}}
}

// termID is the id of term in the index being built, added when new.
func (ix *Index) termID(term string) int32 {
	id, ok := ix.terms[term]
	if !ok {
		id = int32(len(ix.terms))
		ix.terms[term] = id
		ix.names = append(ix.names, term)
	}
	return id
}

// expRelatives are term's relatives for expansion, kept for the build.
func (ix *Index) expRelatives(x *expander, term string) []wstem {
	if r, ok := x.rel[term]; ok {
		return r
	}
	var r []wstem
	put := func(s string, w float32) {
		if s == term || w <= 0 {
			return
		}
		for k := range r {
			if r[k].s == s {
				r[k].w = max(r[k].w, w)
				return
			}
		}
		r = append(r, wstem{s, w})
	}
	if expansion != nil {
		if i := expansion.find(term); i >= 0 {
			expansion.related(i, func(j, kind int) {
				w := float32(1)
				for range kind {
					w *= ix.p.expDecay
				}
				put(expansion.stem(j), w)
			})
		}
	}
	if ix.p.expWN > 0 {
		if i := lex.find(term); i >= 0 {
			lex.related(i, func(j, kind int) { put(lex.stem(j), ix.p.expWN*ix.p.rel[kind]) })
		}
	}
	x.rel[term] = r
	return r
}

// expand appends to cur, a tool's entries, its expansion words (field fExp).
func (ix *Index) expand(cur []entry, x *expander) []entry {
	clear(x.have)
	clear(x.src)
	clear(x.acc)
	for _, e := range cur {
		x.have[e.term] = true
		var w float32
		switch e.field {
		case fName:
			w = ix.p.expName
		case fDesc:
			w = 1
		default:
			continue
		}
		x.src[e.term] = max(x.src[e.term], w)
	}
	for id, w := range x.src {
		for _, r := range ix.expRelatives(x, ix.names[id]) {
			x.acc[r.s] += w * r.w
		}
	}
	x.out = x.out[:0]
	for s, a := range x.acc {
		if a < ix.p.expMin {
			continue
		}
		if id, ok := ix.terms[s]; ok && x.have[id] {
			continue
		}
		x.out = append(x.out, wstem{s, a})
	}
	slices.SortFunc(x.out, func(a, b wstem) int { return cmp.Or(cmp.Compare(b.w, a.w), cmp.Compare(a.s, b.s)) })
	for _, c := range x.out[:min(len(x.out), ix.p.expK)] {
		w := c.w
		if ix.p.expMaxAcc > 0 {
			w = min(w, ix.p.expMaxAcc)
		}
		cur = append(cur, entry{ix.termID(c.s), fExp, w})
	}
	return cur
}
