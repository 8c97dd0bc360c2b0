package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
)

// Aiksaurus link kinds.
const (
	kindTitle  = iota // a word and a title word of its meaning
	kindMember        // two words of one meaning
)

// runAiksaurus reads words.dat (per word: its bytes, ':' for a space, a
// NUL, then big-endian uint16 meaning numbers up to 0xFFFF) and
// meanings.dat (per meaning: big-endian uint16 word numbers up to 0xFFFF,
// the first two its title words) and writes the table (magic "AIK1").
func runAiksaurus(dir, vocabDir, out string) error {
	vocab, err := readVocab(vocabDir)
	if err != nil {
		return err
	}
	wb, err := os.ReadFile(filepath.Join(dir, "words.dat"))
	if err != nil {
		return fmt.Errorf("reading Aiksaurus (apt-get install libaiksaurus-1.2-data): %w", err)
	}
	mb, err := os.ReadFile(filepath.Join(dir, "meanings.dat"))
	if err != nil {
		return fmt.Errorf("reading Aiksaurus (apt-get install libaiksaurus-1.2-data): %w", err)
	}
	var words []string
	for i := 0; i < len(wb); {
		j := bytes.IndexByte(wb[i:], 0)
		if j < 0 {
			return fmt.Errorf("reading words.dat: no NUL after byte %d", i)
		}
		words = append(words, string(wb[i:i+j]))
		i += j + 1
		for i+1 < len(wb) && !(wb[i] == 0xff && wb[i+1] == 0xff) {
			i += 2
		}
		i += 2
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
	var cur []int
	meanings := 0
	for i := 0; i+1 < len(mb); i += 2 {
		v := int(binary.BigEndian.Uint16(mb[i:]))
		if v != 0xffff {
			if v >= len(words) {
				return fmt.Errorf("reading meanings.dat: word %d of %d at byte %d", v, len(words), i)
			}
			cur = append(cur, v)
			continue
		}
		meanings++
		for k, a := range cur {
			for l, b := range cur {
				kind := kindMember
				if k < 2 || l < 2 {
					kind = kindTitle
				}
				link(words[a], words[b], kind)
			}
		}
		cur = cur[:0]
	}
	return write(out, "AIK1", links)
}
