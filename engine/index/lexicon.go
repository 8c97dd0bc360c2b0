package index

import (
	_ "embed"
	"encoding/binary"
	"strings"
	"unsafe"
)

//go:generate go run ./internal/wngen -wordnet /usr/share/wordnet -out lexicon.bin

// lexiconData is the table of related words made from WordNet 3.0 by
// internal/wngen (see LICENSE-WordNet.txt): for each word's Snowball stem,
// the stems of its synonyms, derived words, attributes, similar words,
// hypernyms and hyponyms in its most frequent senses. It is read in place:
// a lookup is a binary search over the sorted stems.
//
//go:embed lexicon.bin
var lexiconData []byte

// Link kinds, as internal/wngen writes them.
const (
	kindSynonym = iota
	kindDerived
	kindAttribute
	kindSimilar
	kindHypernym
	kindHyponym
	kindForm
	numKinds
)

type lexicon struct {
	n       int
	stemOff []byte // n+1 uint32
	stems   string
	linkOff []byte // n+1 uint32
	links   []byte
}

var lex = parseLexicon(lexiconData)

func parseLexicon(b []byte) *lexicon {
	if len(b) < 8 || string(b[:4]) != "WNL1" {
		panic("index: lexicon.bin is not a WNL1 table (go generate ./engine/index)")
	}
	n := int(binary.LittleEndian.Uint32(b[4:]))
	l := &lexicon{n: n}
	p := 8
	l.stemOff = b[p : p+4*(n+1)]
	p += 4 * (n + 1)
	sl := int(l.u32(l.stemOff, n))
	l.stems = unsafe.String(&b[p], sl) // read in place: the embedded bytes never change
	p += sl
	l.linkOff = b[p : p+4*(n+1)]
	p += 4 * (n + 1)
	l.links = b[p:]
	return l
}

func (l *lexicon) u32(tab []byte, i int) uint32 {
	return binary.LittleEndian.Uint32(tab[4*i:])
}

func (l *lexicon) stem(i int) string {
	return l.stems[l.u32(l.stemOff, i):l.u32(l.stemOff, i+1)]
}

// find returns the index of stem s, or -1.
func (l *lexicon) find(s string) int {
	lo, hi := 0, l.n
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		switch c := strings.Compare(l.stem(m), s); {
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

// related calls fn with each stem linked to stem i and the link's kind.
func (l *lexicon) related(i int, fn func(j, kind int)) {
	b := l.links[l.u32(l.linkOff, i):l.u32(l.linkOff, i+1)]
	for len(b) > 0 {
		v, k := binary.Uvarint(b)
		b = b[k:]
		fn(int(v>>3), int(v&7))
	}
}
