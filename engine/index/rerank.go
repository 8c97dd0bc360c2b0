package index

import (
	"math"
	"slices"
)

// The reranker (issue 42): the best params.rrN candidates of the first
// ranking are ranked again by a linear combination of features of the
// query and the tool, its weights (params.rr) fitted on the own set and the
// tune half of testdata/intents.txt (rerank_test.go). It looks at what the
// sum of BM25F and the second signal blurs: which of the query's words are
// in the tool's name and which only in its description, how much of the
// name the query asks for, whether the query names the tool's namespace,
// and how the query's action meets the tool's.

// Reranker features.
const (
	rfScore     = iota // the first ranking's score over the best candidate's
	rfNameCov          // share of the query's words the tool's name has
	rfDescCov          // share of the query's words its description has
	rfNamePrec         // share of the name's words the query has
	rfAllCov           // share of the query's words matched anywhere
	rfRelShare         // share of the score that came from the second signal
	rfActMatch         // the query's action is the tool's
	rfActNear          // a neighbour (read and list, create and send)
	rfActClash         // a clash (a read asked, a delete found)
	rfNS               // the query names the tool's namespace
	rfShortName        // 1 / the words of the tool's name
	rfNameIDF          // share of the query's words the name has, each weighed by its idf
	rfParamCov         // share of the query's words its parameters' names have
	rfNSMass           // share of the reranked candidates' score held by the tool's namespace
	rfRelOnly          // only the second signal found it
	rfBM25Norm         // its BM25F score over the best candidate's
	rfRelNorm          // its second signal's score over the best candidate's
	rfEmb              // its cosine with the query (vectors.go)
	rfEmbRel           // its cosine over the best candidate's
	numRF
)

// rrFeatures are the features of candidate c for a query of words words
// whose terms are qt, of action qa, the best candidate's score maxS and c's
// score s.
func (ix *Index) rrFeatures(c cand, s, maxS, maxA, maxB, maxE float32, qt []queryTerm, idfs []float32, words int, qa action, nsMass float32) (f [numRF]float32) {
	d := &ix.docs[c.doc]
	bits := func(ids []int32) (m uint8, n int) {
		for _, id := range ids {
			hit := false
			for _, q := range qt {
				if q.id == id {
					m |= 1 << q.bit
					hit = true
				}
			}
			if hit {
				n++
			}
		}
		return m, n
	}
	w := float32(max(words, 1))
	nameT, descT, paramT := d.rrT[:d.rrD], d.rrT[d.rrD:d.rrP], d.rrT[d.rrP:]
	nm, nn := bits(nameT)
	dm, _ := bits(descT)
	if maxS > 0 {
		f[rfScore] = s / maxS
	}
	f[rfNameCov] = float32(popcount(nm)) / w
	f[rfDescCov] = float32(popcount(dm)) / w
	if len(nameT) > 0 {
		f[rfNamePrec] = float32(nn) / float32(len(nameT))
		f[rfShortName] = 1 / float32(len(nameT))
	}
	f[rfAllCov] = float32(popcount(c.m)) / w
	pm, _ := bits(paramT)
	f[rfParamCov] = float32(popcount(pm)) / w
	f[rfNSMass] = nsMass
	if c.a == 0 {
		f[rfRelOnly] = 1
	}
	if maxA > 0 {
		f[rfBM25Norm] = c.a / maxA
	}
	if maxB > 0 {
		f[rfRelNorm] = c.b / maxB
	}
	f[rfEmb] = c.e
	if maxE > 0 {
		f[rfEmbRel] = c.e / maxE
	}
	// idf-weighed share of the query's words in the name: each word's
	// best term (itself, joined, a synonym)
	var idfAll, idfName [8]float32
	for k, q := range qt {
		idf := idfs[k]
		idfAll[q.bit] = max(idfAll[q.bit], idf)
		if slices.Contains(nameT, q.id) {
			idfName[q.bit] = max(idfName[q.bit], idf)
		}
	}
	var ta, tn float32
	for b := range 8 {
		ta += idfAll[b]
		tn += idfName[b]
	}
	if ta > 0 {
		f[rfNameIDF] = tn / ta
	}
	if c.a+c.b > 0 {
		f[rfRelShare] = c.b / (c.a + c.b)
	}
	if qa != actNone {
		switch affinities[qa][d.act] {
		case affMatch:
			f[rfActMatch] = 1
		case affNear:
			f[rfActNear] = 1
		case affClash:
			f[rfActClash] = 1
		}
	}
	if d.nsT >= 0 && slices.ContainsFunc(qt, func(q queryTerm) bool { return q.id == d.nsT && q.w == 1 }) {
		f[rfNS] = 1
	}
	return f
}

// rrScore is the reranker's score of features f.
func (p *params) rrScore(f *[numRF]float32) float32 {
	var s float32
	for i, w := range p.rr {
		s += w * f[i]
	}
	return s
}

// rerank orders top (the first ranking's best) by the reranker's score.
func (ix *Index) rerank(sc *scratch, top []scored, cs []cand, qt []queryTerm, words int, qa action) {
	maxS := top[0].score
	// sc.best is all 0 here: it marks the candidates of top by position.
	for k, t := range top {
		sc.best[t.doc] = float32(k + 1)
	}
	var at [MaxLimit]int32 // rrN ≤ MaxLimit
	for i, c := range cs {
		if k := sc.best[c.doc]; k > 0 {
			at[int(k)-1] = int32(i)
			sc.best[c.doc] = 0
		}
	}
	// each query term's idf, times its weight (a synonym's is lower)
	var idfBuf [32]float32
	idfs := idfBuf[:0]
	n := float64(len(ix.docs))
	for _, q := range qt {
		df := float64(len(ix.post[q.id]))
		idfs = append(idfs, q.w*float32(math.Log(1+(n-df+0.5)/(df+0.5))))
	}
	var total, maxA, maxB, maxE float32
	for k, t := range top {
		total += t.score
		maxA = max(maxA, cs[at[k]].a)
		maxB = max(maxB, cs[at[k]].b)
		maxE = max(maxE, cs[at[k]].e)
	}
	for k := range top {
		// the share of the candidates' score in the tool's namespace
		var m float32
		ns := ix.docs[top[k].doc].ns
		for _, t := range top {
			if ix.docs[t.doc].ns == ns {
				m += t.score
			}
		}
		if total > 0 {
			m /= total
		}
		f := ix.rrFeatures(cs[at[k]], top[k].score, maxS, maxA, maxB, maxE, qt, idfs, words, qa, m)
		if ix.rrDump != nil {
			ix.rrDump(top[k].doc, &f)
		}
		top[k].score = ix.p.rrScore(&f)
	}
	slices.SortStableFunc(top, func(a, b scored) int {
		if better(a, b) {
			return -1
		}
		if better(b, a) {
			return 1
		}
		return 0
	})
}
