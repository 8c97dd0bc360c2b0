// Command thesgen turns a thesaurus beyond WordNet into a compact table of
// related words beside the WordNet lexicon (lexicon.bin). It runs at
// development time (go generate ./engine/index), not in CI.
//
// -source foldoc reads FOLDOC, the Free On-line Dictionary of Computing
// (Debian's dict-foldoc, /usr/share/dictd/foldoc.dict.dz), and writes
// engine/index/testdata/foldoc.bin, which is committed (tests read it; the
// shipped index does not embed it, see engine/index/thesaurus.go). FOLDOC is under the GNU FDL 1.1 or later
// (LICENSE-FOLDOC.txt says what that means for the derived table).
//
// -source aiksaurus reads Aiksaurus' word lists (Debian's
// libaiksaurus-1.2-data, /usr/share/aiksaurus), the Debian archive's only
// form of the Moby thesaurus (dict-moby-thesaurus is not in Debian 12):
// each of its 2,621 meanings is a list of words under one or two title
// words. The table links each word of a meaning to its title words (kind 0)
// and to the meaning's other words (kind 1). Aiksaurus' data is GPL-2+ as
// Debian ships it, so its table is for measuring and is not committed
// (BENCHMARKS.md, "issue 42: a second thesaurus").
//
// FOLDOC is a dictionary, not a thesaurus: the relations are its entries'
// own. For a one-word headword (lower-cased: "RFC" → rfc) the table links
// its Snowball stem to
//   - the entry's other one-word headwords ("directory", "folder"), and the
//     target of a sense that is only "See {X}": kind alias;
//   - the one-word targets of "See also", "Compare" and "Contrast": kind see;
//   - the one-word cross-references ({word}) of the entry's first
//     paragraph, the definition: kind def.
//
// Only links towards a word the tools use are kept (-vocab: the words of
// the JSON files given, the corpus manifests in testdata/manifests), so a
// query word that FOLDOC knows reaches a tool word: the table stays small.
// A link is kept in both directions when both words are tool words.
//
// Layout: that of lexicon.bin (internal/wngen) with the magic "FDC1":
// "FDC1", n uint32, n+1 uint32 offsets into the stem bytes, the sorted stem
// bytes, n+1 uint32 offsets into the link bytes, and per stem uvarints
// (target index << 3 | kind), sorted by target.
package main

import (
	"bufio"
	"bytes"
	"cmp"
	"compress/gzip"
	"encoding/binary"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/kljensen/snowball/english"
)

// Link kinds, strongest first (a pair linked twice keeps the lower kind).
// Keep in step with engine/index/thesaurus.go.
const (
	kindAlias = iota
	kindSee
	kindDef
)

func main() {
	source := flag.String("source", "foldoc", "foldoc or aiksaurus")
	in := flag.String("in", "", "the source: FOLDOC's dictd file (default /usr/share/dictd/foldoc.dict.dz, Debian: dict-foldoc) or Aiksaurus' folder (default /usr/share/aiksaurus, Debian: libaiksaurus-1.2-data)")
	vocab := flag.String("vocab", "../../testdata/manifests", "folder of JSON tool manifests whose words the table keeps")
	out := flag.String("out", "", "output file (default foldoc.bin or aiksaurus.bin)")
	flag.Parse()
	var err error
	switch *source {
	case "foldoc":
		err = run(or(*in, "/usr/share/dictd/foldoc.dict.dz"), *vocab, or(*out, "foldoc.bin"))
	case "aiksaurus":
		err = runAiksaurus(or(*in, "/usr/share/aiksaurus"), *vocab, or(*out, "aiksaurus.bin"))
	default:
		err = fmt.Errorf("-source %q: want foldoc or aiksaurus", *source)
	}
	if err != nil {
		slog.Error("generating a thesaurus table", "source", *source, "err", err)
		os.Exit(1)
	}
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

type entry struct {
	heads []string
	body  []string // lines, trimmed
}

var refRE = regexp.MustCompile(`\{([^{}]+)\}`)

func run(dict, vocabDir, out string) error {
	vocab, err := readVocab(vocabDir)
	if err != nil {
		return err
	}
	entries, err := readFOLDOC(dict)
	if err != nil {
		return err
	}
	links := map[string]map[string]int{}
	link := func(from, to string, kind int) {
		a, b := stem(from), stem(to)
		if a == "" || b == "" || a == b || !vocab[b] {
			return
		}
		m := links[a]
		if m == nil {
			m = map[string]int{}
			links[a] = m
		}
		if k, ok := m[b]; !ok || kind < k {
			m[b] = kind
		}
	}
	both := func(a, b string, kind int) { link(a, b, kind); link(b, a, kind) }
	for _, e := range entries {
		var heads []string
		for _, h := range e.heads {
			if norm(h) != "" {
				heads = append(heads, h)
			}
		}
		if len(heads) == 0 {
			continue
		}
		for _, a := range heads {
			for _, b := range heads {
				link(a, b, kindAlias)
			}
		}
		para := 0 // 0: before the definition, 1: in its first paragraph, 2: after
		for _, l := range e.body {
			if l == "" {
				if para == 1 {
					para = 2
				}
				continue
			}
			if para == 0 {
				para = 1
			}
			// Strip a sense number and a domain: "1. <database> See {x}."
			s := strings.TrimLeft(l, "0123456789. ")
			if strings.HasPrefix(s, "<") {
				if k := strings.IndexByte(s, '>'); k > 0 {
					s = strings.TrimSpace(s[k+1:])
				}
			}
			refs := refRE.FindAllStringSubmatch(s, -1)
			kind := -1
			switch {
			case strings.HasPrefix(s, "See {") && len(refs) == 1 && strings.HasSuffix(strings.TrimRight(s, "."), "}"):
				kind = kindAlias
			case strings.HasPrefix(s, "See also") || strings.HasPrefix(s, "See {") || strings.HasPrefix(s, "Compare") || strings.HasPrefix(s, "Contrast"):
				kind = kindSee
			case para == 1:
				kind = kindDef
			}
			if kind < 0 {
				continue
			}
			for _, r := range refs {
				w := strings.TrimSpace(r[1])
				if strings.ContainsAny(w, " \t") || norm(w) == "" {
					continue
				}
				for _, h := range heads {
					if kind == kindDef {
						link(h, w, kind)
					} else {
						both(h, w, kind)
					}
				}
			}
		}
	}
	return write(out, "FDC1", links)
}

// readFOLDOC splits the dictd text into entries: headword lines start at
// the first column, the body is indented.
func readFOLDOC(path string) ([]entry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opening FOLDOC (apt-get install dict-foldoc): %w", err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f) // dictzip is gzip with an extra header field
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	sc := bufio.NewScanner(z)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var es []entry
	var cur *entry
	for sc.Scan() {
		l := sc.Text()
		switch {
		case l == "":
			if cur != nil {
				cur.body = append(cur.body, "")
			}
		case l[0] != ' ' && l[0] != '\t':
			if cur == nil || len(cur.body) > 0 && strings.Join(cur.body, "") != "" {
				es = append(es, entry{})
				cur = &es[len(es)-1]
			}
			cur.body = cur.body[:0]
			cur.heads = append(cur.heads, l)
		default:
			if cur != nil {
				cur.body = append(cur.body, strings.TrimSpace(l))
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return es, nil
}

var wordRE = regexp.MustCompile(`[A-Za-z]+`)

// readVocab is the stems of every word of the JSON files under dir, split
// at camelCase humps as the index splits names.
func readVocab(dir string) (map[string]bool, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("reading the vocabulary: no JSON file in %s", dir)
	}
	v := map[string]bool{}
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("reading the vocabulary: %w", err)
		}
		for _, w := range wordRE.FindAll(b, -1) {
			for _, part := range humps(string(w)) {
				if s := stem(part); s != "" {
					v[s] = true
				}
			}
		}
	}
	return v, nil
}

// humps splits "getIssueComments" and "APIPost" as the index does.
func humps(w string) []string {
	var out []string
	start := 0
	for i := 1; i < len(w); i++ {
		c, p := w[i], w[i-1]
		up := func(x byte) bool { return x >= 'A' && x <= 'Z' }
		lo := func(x byte) bool { return x >= 'a' && x <= 'z' }
		if up(c) && lo(p) || up(c) && up(p) && i+1 < len(w) && lo(w[i+1]) {
			out = append(out, w[start:i])
			start = i
		}
	}
	return append(out, w[start:])
}

// norm is a word as one lower-case word of three letters or more, "" for
// anything else.
func norm(w string) string {
	w = strings.ToLower(strings.TrimSpace(w))
	if len(w) < 3 {
		return ""
	}
	for i := 0; i < len(w); i++ {
		if w[i] < 'a' || w[i] > 'z' {
			return ""
		}
	}
	return w
}

// stem is the index's term for a word (engine/index/analyze.go); stop
// words are no terms.
func stem(w string) string {
	if w = norm(w); w == "" || english.IsStopWord(w) {
		return ""
	}
	return english.Stem(w, false)
}

func write(out, magic string, links map[string]map[string]int) error {
	var stems []string
	seen := map[string]bool{}
	for a, m := range links {
		seen[a] = true
		for b := range m {
			seen[b] = true
		}
	}
	for s := range seen {
		stems = append(stems, s)
	}
	slices.Sort(stems)
	idx := make(map[string]uint32, len(stems))
	for i, s := range stems {
		idx[s] = uint32(i)
	}
	var buf bytes.Buffer
	u32 := func(v uint32) { buf.Write(binary.LittleEndian.AppendUint32(nil, v)) }
	buf.WriteString(magic)
	u32(uint32(len(stems)))
	off := uint32(0)
	for _, s := range stems {
		u32(off)
		off += uint32(len(s))
	}
	u32(off)
	for _, s := range stems {
		buf.WriteString(s)
	}
	var lb []byte
	offs := make([]uint32, 0, len(stems)+1)
	nl := 0
	for _, s := range stems {
		offs = append(offs, uint32(len(lb)))
		type l struct {
			to   uint32
			kind int
		}
		var ls []l
		for b, k := range links[s] {
			ls = append(ls, l{idx[b], k})
		}
		slices.SortFunc(ls, func(x, y l) int { return cmp.Compare(x.to, y.to) })
		for _, x := range ls {
			lb = binary.AppendUvarint(lb, uint64(x.to)<<3|uint64(x.kind))
		}
		nl += len(ls)
	}
	offs = append(offs, uint32(len(lb)))
	for _, o := range offs {
		u32(o)
	}
	buf.Write(lb)
	slog.Info("table", "out", out, "stems", len(stems), "links", nl, "bytes", buf.Len())
	return os.WriteFile(out, buf.Bytes(), 0o644)
}
