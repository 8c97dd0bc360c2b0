// Command wngen turns WordNet 3.0 (Debian's wordnet-base, /usr/share/wordnet)
// into lexicon.bin, the table of related words the index's second signal
// reads. It runs at development time (go generate ./engine/index), not in
// CI; its output is committed.
//
// For every lemma of one or two words and each of its most frequent senses, the
// table links the lemma's Snowball stem to the stems of the sense's other
// words (synonyms), of words derived from it ("memorize" → memory), of the
// noun an adjective is an attribute of ("high" → height), of similar
// adjectives and verb groups, and of its direct hypernyms ("elevation" →
// altitude, "vulnerability" → weakness). Each link keeps its kind, so the
// index chooses the weights.
//
// Layout (little endian): "WNL1", n uint32, then n+1 uint32 offsets into
// the stem bytes, the sorted stem bytes, n+1 uint32 offsets into the link
// bytes, and the link bytes: per stem, uvarints (target index << 3 | kind),
// sorted by target.
package main

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/binary"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/kljensen/snowball/english"
)

// Link kinds, strongest first (a pair linked twice keeps the lower kind).
// Keep in step with engine/index/lexicon.go.
const (
	kindSynonym = iota
	kindDerived
	kindAttribute
	kindSimilar
	kindHypernym
	kindHyponym
	kindForm // an irregular form: "children" → child
)

func main() {
	dir := flag.String("wordnet", "/usr/share/wordnet", "WordNet 3.0 dict directory (Debian: wordnet-base)")
	out := flag.String("out", "lexicon.bin", "output file")
	senses := flag.Int("senses", 3, "senses of each lemma linked, most frequent first")
	flag.Parse()
	if err := run(*dir, *out, *senses); err != nil {
		slog.Error("generating the lexicon", "err", err)
		os.Exit(1)
	}
}

type synset struct {
	words []string
	ptrs  []ptr
}

type ptr struct {
	sym    string
	target string // pos + offset
	src    int    // 0: the whole synset, else the source word (1-based)
	dst    int    // 0: the whole synset, else the target word (1-based)
}

var files = []struct{ name, pos string }{{"noun", "n"}, {"verb", "v"}, {"adj", "a"}, {"adv", "r"}}

func run(dir, out string, senses int) error {
	syn := map[string]*synset{}
	for _, f := range files {
		if err := readData(filepath.Join(dir, "data."+f.name), syn); err != nil {
			return err
		}
	}
	links := map[string]map[string]int{}
	link := func(from, to string, kind int) {
		a, b := stem(from), stem(to)
		if a == "" || b == "" || a == b {
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
	for _, f := range files {
		err := eachLine(filepath.Join(dir, "index."+f.name), func(line string) error {
			if strings.HasPrefix(line, " ") {
				return nil
			}
			fs := strings.Fields(line)
			lemma := fs[0]
			if norm(lemma) == "" || !keep(lemma, f.pos) {
				return nil
			}
			pcnt, err := strconv.Atoi(fs[3])
			if err != nil {
				return fmt.Errorf("reading index.%s %q: %w", f.name, lemma, err)
			}
			offsets := fs[4+pcnt+2:]
			tagged, _ := strconv.Atoi(fs[4+pcnt+1])
			for i, off := range offsets {
				if i >= senses || i > 0 && i >= tagged {
					break
				}
				s := syn[f.pos+off]
				if s == nil {
					return fmt.Errorf("reading index.%s %q: no synset %s", f.name, lemma, off)
				}
				self := slices.Index(s.words, lemma) + 1
				for _, w := range s.words {
					link(lemma, w, kindSynonym)
				}
				for _, p := range s.ptrs {
					if p.src != 0 && p.src != self {
						continue
					}
					t := syn[p.target]
					if t == nil {
						continue
					}
					kind := -1
					switch p.sym {
					case "+", "\\", "<": // derivation, pertainym, participle
						kind = kindDerived
					case "=":
						kind = kindAttribute
					case "&", "$", "^": // similar to, verb group, also see
						kind = kindSimilar
					case "@", "@i":
						kind = kindHypernym
					}
					if kind < 0 {
						continue
					}
					for j, w := range t.words {
						if p.dst == 0 || p.dst == j+1 {
							link(lemma, w, kind)
							if kind == kindHypernym {
								link(w, lemma, kindHyponym)
							} else {
								link(w, lemma, kind)
							}
						}
					}
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		err = eachLine(filepath.Join(dir, f.name+".exc"), func(line string) error {
			fs := strings.Fields(line)
			if len(fs) >= 2 {
				link(fs[0], fs[1], kindForm)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return write(out, links)
}

func readData(path string, syn map[string]*synset) error {
	return eachLine(path, func(line string) error {
		if strings.HasPrefix(line, " ") {
			return nil
		}
		data, _, _ := strings.Cut(line, " | ")
		fs := strings.Fields(data)
		pos := fs[2]
		if pos == "s" {
			pos = "a"
		}
		n, err := strconv.ParseInt(fs[3], 16, 32)
		if err != nil {
			return fmt.Errorf("reading %s at %s: %w", path, fs[0], err)
		}
		s := &synset{}
		i := 4
		for range n {
			w := strings.ToLower(fs[i])
			if k := strings.IndexByte(w, '('); k > 0 { // adjective markers: "(p)", "(a)", "(ip)"
				w = w[:k]
			}
			if !keep(w, pos) {
				w = "" // never linked
			}
			s.words = append(s.words, w)
			i += 2
		}
		pc, err := strconv.Atoi(fs[i])
		if err != nil {
			return fmt.Errorf("reading %s at %s: %w", path, fs[0], err)
		}
		i++
		for range pc {
			tpos := fs[i+2]
			if tpos == "s" {
				tpos = "a"
			}
			st, _ := strconv.ParseUint(fs[i+3], 16, 16)
			s.ptrs = append(s.ptrs, ptr{sym: fs[i], target: tpos + fs[i+1], src: int(st >> 8), dst: int(st & 0xff)})
			i += 4
		}
		syn[pos+fs[0]] = s
		return nil
	})
}

func eachLine(path string, fn func(string) error) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("opening WordNet (apt-get install wordnet-base): %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if err := fn(sc.Text()); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	return nil
}

// norm is a lemma as one lower-case word of three letters or more: a
// two-word lemma is joined as the index joins a query's adjacent words
// ("log_out" → logout, "co-worker" → coworker); "" for anything else.
// (Two-word verbs only: see keep.)
func norm(w string) string {
	if strings.Count(w, "_")+strings.Count(w, "-") > 1 {
		return ""
	}
	w = strings.NewReplacer("_", "", "-", "").Replace(w)
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

// keep keeps two-word lemmas only for verbs, where a person writes them
// apart and tool text joins them ("log out", logout); joined noun compounds
// ("credit_card") are never index terms, which split names at their humps.
func keep(w, pos string) bool {
	return pos == "v" || !strings.Contains(w, "_")
}

// stem is the index's term for a lemma (engine/index/analyze.go).
func stem(w string) string {
	if w = norm(w); w == "" {
		return ""
	}
	return english.Stem(w, false)
}

func write(out string, links map[string]map[string]int) error {
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
	buf.WriteString("WNL1")
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
	}
	offs = append(offs, uint32(len(lb)))
	for _, o := range offs {
		u32(o)
	}
	buf.Write(lb)
	slog.Info("lexicon", "stems", len(stems), "bytes", buf.Len())
	return os.WriteFile(out, buf.Bytes(), 0o644)
}
