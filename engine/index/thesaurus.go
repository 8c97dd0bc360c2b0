package index

import (
	"encoding/binary"
	"slices"
	"unsafe"
)

//go:generate go run ./internal/thesgen -source foldoc -in /usr/share/dictd/foldoc.dict.dz -vocab ../../testdata/manifests -out testdata/foldoc.bin

// foldoc is a second table of related words, made from FOLDOC, the Free
// On-line Dictionary of Computing (Debian's dict-foldoc), by
// internal/thesgen into testdata/foldoc.bin (see LICENSE-FOLDOC.txt): for a
// FOLDOC headword's stem, the stems of its other headwords and "See"
// targets (alias), of its "See also"/"Compare" targets (see) and of the
// cross-references of its definition (def), kept only when the target is a
// word of the corpus manifests. Same layout as lexicon.bin, magic "FDC1".
//
// It is nil in the shipped index: measured on the tune half it does not
// help (BENCHMARKS.md, "issue 42: a second thesaurus"), and FOLDOC is under
// the GNU FDL, whose terms a binary embedding it would have to meet. Tests
// load it (thesaurus_test.go); embedding it is
//
//	//go:embed testdata/foldoc.bin
//	var foldocData []byte
//	var foldoc = parseTable(foldocData, "FDC1")
//
// with LICENSE-FOLDOC.txt shipped beside the binary.
var foldoc *lexicon

// FOLDOC link kinds, as internal/thesgen writes them.
const (
	fkAlias = iota
	fkSee
	fkDef
	numFKinds
)

// parseTable reads a table in lexicon.bin's layout with the given magic.
func parseTable(b []byte, magic string) *lexicon {
	if len(b) < 8 || string(b[:4]) != magic {
		panic("index: a related-words table is not " + magic + " (go generate ./engine/index)")
	}
	n := int(binary.LittleEndian.Uint32(b[4:]))
	l := &lexicon{n: n}
	p := 8
	l.stemOff = b[p : p+4*(n+1)]
	p += 4 * (n + 1)
	sl := int(l.u32(l.stemOff, n))
	if sl > 0 {
		l.stems = unsafe.String(&b[p], sl) // read in place: the embedded bytes never change
	}
	p += sl
	l.linkOff = b[p : p+4*(n+1)]
	p += 4 * (n + 1)
	l.links = b[p:]
	return l
}

// aiksaurus is the table internal/thesgen makes from Aiksaurus (the Moby
// thesaurus), loaded by a test for measuring (-aiksaurus): its data is
// GPL-2+ as Debian ships it, so it is not embedded.
var aiksaurus *lexicon

// gloss is the table of words in WordNet 3.0's definitions (glosses), made
// by TestGlossGenerate into testdata/gloss.bin (issue 42): for a lemma's
// stem, the stems of the content words of its first sense's gloss (kind
// glDef), of its other senses' glosses (glDefMore), and of the lemmas in
// whose first gloss it appears (glUsedIn), kept when the target is a word
// of an MCP tool's text (the 19 manifests, the npm tool corpus). Same
// layout as lexicon.bin, magic "WNG1". Nil unless loaded (weights
// params.gloss).
var gloss *lexicon

// Gloss link kinds, as TestGlossGenerate writes them.
const (
	glDef = iota
	glDefMore
	glUsedIn
	numGKinds
)

// thesaurusRelatives puts the FOLDOC (and a loaded Aiksaurus) relatives of
// term, at params.fold's (params.aik's) weight for their kind.
func (ix *Index) thesaurusRelatives(term string, put func(s string, w float32)) {
	for _, t := range []struct {
		l *lexicon
		w []float32
	}{{foldoc, ix.p.fold[:]}, {aiksaurus, ix.p.aik[:]}, {gloss, ix.p.gloss[:]}} {
		if t.l == nil || !slices.ContainsFunc(t.w, func(w float32) bool { return w > 0 }) {
			continue
		}
		i := t.l.find(term)
		if i < 0 {
			continue
		}
		t.l.related(i, func(j, kind int) {
			if w := t.w[kind]; w > 0 {
				put(t.l.stem(j), w)
			}
		})
	}
}
