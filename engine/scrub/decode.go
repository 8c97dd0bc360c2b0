package scrub

import (
	"bytes"
	"slices"
	"sync"
	"unicode/utf8"
)

// maxDepth bounds how many decodings are chained: a view of a view of … of
// the text, maxDepth deep.
const maxDepth = 6

// workFactor bounds the bytes decoded for one text: workFactor times its
// length, plus workFloor. Text of ordinary results stays far below (base64
// decoded at its 4 alignments is 3 times its length, and what it decodes
// to rarely holds runs worth decoding again); text built to nest
// encodings without end goes past it and is withheld whole. (Variables
// for a test only.)
var (
	workFactor = 24
	workFloor  = 64 << 10
)

// A finder looks for a scrubber's secrets in a text and in its decoded
// views (the escapes view and the runs of base64, hex and base32), and
// maps each match back to the span of the text it was decoded from.
type finder struct {
	s      *Scrubber
	spans  []span
	first  bool   // stop at the first match (contains)
	which  []bool // the secrets matched (Which), when not nil
	budget int    // bytes of views left to decode
	over   bool   // the budget ran out: the whole text is one span
	top    int    // the text's length
	// frames map a view's spans to its parent's, one per depth below the
	// text; levels holds each depth's scratch buffers, reused by siblings.
	frames []frame
	levels []level
	crlf   []byte // the bytes around a line break, without it (lineBreaks)
	crlfAt []int32
}

// frame maps positions in a view to positions in its parent.
type frame struct {
	// escapes view: byte i came from parent[lo[i]:hi[i]].
	lo, hi []int32
	// runs view: the view is the run's characters at pos (CR and LF
	// skipped), decoded w bits a character from character k on; pad is the
	// parent's index past the run's padding.
	pos      []int32
	k, w     int
	pad      int32
	isEscape bool
}

type level struct {
	out     []byte
	lo, hi  []int32
	vals    []byte
	pos     []int32
	islands []island
}

var finders = sync.Pool{New: func() any { return new(finder) }}

func getFinder(s *Scrubber, n int) *finder {
	f := finders.Get().(*finder)
	f.s, f.spans, f.first, f.which, f.over, f.top = s, f.spans[:0], false, nil, false, n
	f.budget = workFactor*n + workFloor
	return f
}

func (f *finder) put() {
	f.s, f.which = nil, nil
	if cap(f.spans) > 1<<12 {
		f.spans = nil
	}
	for i := range f.levels {
		if cap(f.levels[i].out) > 1<<20 {
			f.levels[i] = level{}
		}
	}
	finders.Put(f)
}

// find returns the merged spans of text that hold a secret in any form
// (owned by f: copy them before f.put).
func (f *finder) find(text []byte) []span {
	f.walk(text, 0)
	if f.first && len(f.spans) > 0 {
		return f.spans[:1]
	}
	if f.over {
		f.spans = append(f.spans[:0], span{0, len(text)})
		return f.spans
	}
	f.spans = merge(f.spans)
	return f.spans
}

func (f *finder) done() bool { return f.over || f.first && len(f.spans) > 0 }

// emit records the view span [i, j) at depth d, mapped to the text.
func (f *finder) emit(d, i, j, secret int) {
	if f.which != nil {
		f.which[secret] = true
	}
	for ; d > 0; d-- {
		fr := &f.frames[d-1]
		if fr.isEscape {
			i, j = int(fr.lo[i]), int(fr.hi[j-1])
			continue
		}
		c0 := fr.k + 8*i/fr.w
		c1 := fr.k + (8*j-1)/fr.w
		i, j = int(fr.pos[c0]), int(fr.pos[c1])+1
		if c1 == len(fr.pos)-1 {
			j = int(fr.pad)
		}
	}
	f.spans = append(f.spans, span{i, j})
}

// walk looks for the secrets in text (a view at depth d) and in its views.
func (f *finder) walk(text []byte, d int) {
	scan(f.s, text, func(i, j, secret int) bool {
		f.emit(d, i, j, secret)
		return !f.first
	})
	if f.done() {
		return
	}
	if d == 0 {
		f.lineBreaks(text)
		if f.done() {
			return
		}
	}
	if d >= maxDepth {
		return
	}
	if hasEscape(text) {
		f.escapes(text, d)
		if f.done() {
			return
		}
	}
	f.runs(text, d)
}

// lineBreaks looks for the secrets broken by line breaks: around each run
// of CR and LF bytes, the longest secret's length less one of other bytes
// on each side (more line breaks skipped), read as one.
func (f *finder) lineBreaks(text []byte) {
	n := f.s.longest - 1
	for p := 0; p < len(text); p++ {
		if class[text[p]]&clsBreak == 0 || p > 0 && class[text[p-1]]&clsBreak != 0 {
			continue
		}
		f.crlf, f.crlfAt = f.crlf[:0], f.crlfAt[:0]
		for i, k := p-1, 0; i >= 0 && k < n; i-- {
			if class[text[i]]&clsBreak == 0 {
				f.crlf = append(f.crlf, text[i])
				f.crlfAt = append(f.crlfAt, int32(i))
				k++
			}
		}
		if len(f.crlf) == 0 {
			continue
		}
		slices.Reverse(f.crlf)
		slices.Reverse(f.crlfAt)
		before := len(f.crlf)
		for i, k := p, 0; i < len(text) && k < n; i++ {
			if class[text[i]]&clsBreak == 0 {
				f.crlf = append(f.crlf, text[i])
				f.crlfAt = append(f.crlfAt, int32(i))
				k++
			}
		}
		if len(f.crlf) == before {
			continue
		}
		scan(f.s, f.crlf, func(i, j, secret int) bool {
			f.emit(0, int(f.crlfAt[i]), int(f.crlfAt[j-1])+1, secret)
			return !f.first
		})
		if f.done() {
			return
		}
	}
}

func hasEscape(text []byte) bool {
	return bytes.IndexByte(text, '\\') >= 0 || bytes.IndexByte(text, '%') >= 0 || bytes.IndexByte(text, '&') >= 0
}

// spend takes n bytes from the budget, and reports whether they were there.
func (f *finder) spend(n int) bool {
	f.budget -= n
	if f.budget < 0 {
		f.over = true
	}
	return !f.over
}

// push makes the frame of a view at depth d+1 and returns its level's
// buffers.
func (f *finder) push(d int) (*frame, *level) {
	for len(f.frames) <= d {
		f.frames = append(f.frames, frame{})
		f.levels = append(f.levels, level{})
	}
	return &f.frames[d], &f.levels[d]
}

// escapes walks the escapes views of text: of each island of it that
// holds an escape, one view for each family of escapes there (%, \ and &),
// decoding that family only. An encoding applied over another leaves the
// inner one's escapes in its own text (\&#117;0063 is \u0063 written in
// HTML): decoding one family at a time reads them in order, and a view of
// a view reads the next. An occurrence in a view that holds no decoded
// escape is in the text as it is, and was found there; one that holds an
// escape lies within the island around it: the escapes, run characters
// and bytes of escapes around it, and as many bytes as the longest secret
// on each side.
func (f *finder) escapes(text []byte, d int) {
	ctx := f.s.longest
	_, lv := f.push(d)
	islands := lv.islands[:0]
	for i := 0; i < len(text); {
		if class[text[i]]&clsEscape == 0 {
			i++
			continue
		}
		if _, n, _ := escape(text[i:]); n == 0 {
			i++
			continue
		}
		a := i
		for a > 0 && class[text[a-1]]&clsIsland != 0 {
			a--
		}
		b, fams := i, byte(0)
		for b < len(text) {
			if c := text[b]; class[c]&clsEscape != 0 {
				if _, n, _ := escape(text[b:]); n > 0 {
					fams |= family(text[b:])
					b += n
					continue
				}
			}
			if class[text[b]]&clsIsland == 0 {
				break
			}
			b++
		}
		a, i = max(0, a-ctx), b
		b = min(len(text), b+ctx)
		if n := len(islands); n > 0 && a <= islands[n-1].end {
			islands[n-1].end = max(islands[n-1].end, b)
			islands[n-1].fams |= fams
		} else {
			islands = append(islands, island{a, b, fams})
		}
	}
	lv.islands = islands
	for _, is := range islands {
		for _, fam := range [...]byte{famPercent, famBackslash, famCode, famAmp} {
			if is.fams&fam == 0 {
				continue
			}
			fr, lv := f.push(d)
			out, lo, hi := unescape(text[is.start:is.end], fam, lv.out[:0], lv.lo[:0], lv.hi[:0], int32(is.start))
			lv.out, lv.lo, lv.hi = out, lo, hi
			if !f.spend(len(out)) {
				return
			}
			*fr = frame{isEscape: true, lo: lo, hi: hi}
			f.walk(out, d+1)
			if f.done() {
				return
			}
		}
	}
}

// island is a part of a text that holds escapes of the families fams.
type island struct {
	start, end int
	fams       byte
}

// Families of escapes, each decoded in a view of its own. famBackslash is
// every backslash escape; famCode only \x, \u and \U, with every other
// backslash left as it is: text beside an encoding can make a one-letter
// escape of its first byte (a \ before 000\x30 reads \000 as octal), and
// the code view still reads what follows.
const (
	famPercent = 1 << iota
	famBackslash
	famCode
	famAmp
)

// family is the families of the escape t starts with.
func family(t []byte) byte {
	switch t[0] {
	case '%':
		return famPercent
	case '\\':
		if len(t) > 1 && (t[1] == 'x' || t[1] == 'u' || t[1] == 'U') {
			return famBackslash | famCode
		}
		return famBackslash
	case '&':
		return famAmp
	}
	return 0
}

// Character classes, one bit each.
const (
	cls64         = 1 << iota // base64, standard or URL-safe alphabet
	clsHex                    // hex digit
	cls32                     // base32 alphabet, either case
	clsBreak                  // CR or LF: skipped inside a run
	clsEscape                 // may start an escape: % \ &
	clsEscapeTail             // in an escape, besides letters and digits: # ; { }

	clsRun = cls64 | clsHex | cls32
	// clsIsland is what an island of escapes spreads over: runs and the
	// bytes of escapes, so that an outer encoding's escapes stay with the
	// inner ones they write (\u0026#98; is &#98; once decoded).
	clsIsland = clsRun | clsBreak | clsEscape | clsEscapeTail
)

var (
	class [256]byte
	// value is a character's value in its alphabets: val64 for base64 (both
	// alphabets), valHex, val32 (either case).
	val64, valHex, val32 [256]byte
)

func init() {
	for i, c := range "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/" {
		class[c] |= cls64
		val64[c] = byte(i)
	}
	class['-'] |= cls64
	val64['-'] = 62
	class['_'] |= cls64
	val64['_'] = 63
	for i, c := range "0123456789abcdef" {
		class[c] |= clsHex
		valHex[c] = byte(i)
		if c >= 'a' {
			class[c-'a'+'A'] |= clsHex
			valHex[c-'a'+'A'] = byte(i)
		}
	}
	for i, c := range "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567" {
		class[c] |= cls32
		val32[c] = byte(i)
		if c >= 'A' && c <= 'Z' {
			class[c+'a'-'A'] |= cls32
			val32[c+'a'-'A'] = byte(i)
		}
	}
	class['\r'] |= clsBreak
	class['\n'] |= clsBreak
	for _, c := range "%\\&" {
		class[c] |= clsEscape
	}
	for _, c := range "#;{}" {
		class[c] |= clsEscapeTail
	}
}

// alphabet is one of the base-N encodings decoded in runs.
type alphabet struct {
	cls    byte
	val    *[256]byte
	bits   int // per character
	period int // characters until the bit alignment repeats
}

var alphabets = [3]alphabet{
	{cls64, &val64, 6, 4},
	{clsHex, &valHex, 4, 2},
	{cls32, &val32, 5, 8},
}

// runs decodes each run of text long enough to encode a secret, in each
// alphabet, from each alignment, and walks what it decodes to. Hex and
// base32 runs lie inside base64 runs (their characters are base64's), so
// only a base64 run long enough for the shortest encoding is looked into.
// In an escapes view, a run with no decoded byte in or beside it is one
// of the parent's (or a part of one), already decoded there.
func (f *finder) runs(text []byte, d int) {
	var fr *frame
	if d > 0 && f.frames[d-1].isEscape {
		fr = &f.frames[d-1]
	}
	for i, n := 0, len(text); i < n; {
		if class[text[i]]&cls64 == 0 {
			i++
			continue
		}
		start, last, count := i, i, 0
		for ; i < n; i++ {
			if c := class[text[i]]; c&cls64 != 0 {
				count++
				last = i
			} else if c&clsBreak == 0 {
				break
			}
		}
		if count < f.s.run64 || fr != nil && !fr.decodedIn(start-1, last+2) {
			continue
		}
		f.runsIn(text, d, start, last+1)
		if f.done() {
			return
		}
	}
}

// decodedIn reports whether a byte of the escapes view in [i, j) was an
// escape in the parent.
func (fr *frame) decodedIn(i, j int) bool {
	for k := max(i, 0); k < min(j, len(fr.lo)); k++ {
		if fr.hi[k]-fr.lo[k] != 1 {
			return true
		}
	}
	return false
}

// runsIn decodes the runs of each alphabet within text[from:to], a run of
// base64 characters (and line breaks) at least run64 long.
func (f *finder) runsIn(text []byte, d, from, to int) {
	f.run(text, d, &alphabets[0], f.s.run64, from, to)
	if f.done() {
		return
	}
	// Hex and base32 runs inside it, each run [start, last] of count
	// characters (line breaks skipped).
	type sub struct{ start, last, count int }
	var subs [3]sub
	flush := func(a int) {
		if r := subs[a]; r.count > 0 && r.count >= [3]int{0, f.s.runHex, f.s.run32}[a] {
			f.run(text, d, &alphabets[a], [3]int{0, f.s.runHex, f.s.run32}[a], r.start, r.last+1)
		}
		subs[a] = sub{}
	}
	for i := from; i < to && !f.done(); i++ {
		cl := class[text[i]]
		if cl&clsBreak != 0 {
			continue
		}
		for a := 1; a < 3; a++ {
			if cl&alphabets[a].cls == 0 {
				flush(a)
				continue
			}
			if subs[a].count == 0 {
				subs[a].start = i
			}
			subs[a].count++
			subs[a].last = i
		}
	}
	for a := 1; a < 3 && !f.done(); a++ {
		flush(a)
	}
}

// run decodes text[start:end], a run of alphabet al (CR and LF inside it
// skipped), from each alignment, and walks each decoding as a view at
// depth d+1.
func (f *finder) run(text []byte, d int, al *alphabet, minRun, start, end int) {
	fr, lv := f.push(d)
	vals, pos := lv.vals[:0], lv.pos[:0]
	for i := start; i < end; i++ {
		if c := text[i]; class[c]&al.cls != 0 {
			vals = append(vals, al.val[c])
			pos = append(pos, int32(i))
		}
	}
	lv.vals, lv.pos = vals, pos
	pad := end
	for pad < len(text) && text[pad] == '=' {
		pad++
	}
	for k := 0; k < al.period && len(vals)-k >= minRun; k++ {
		out := decodeBits(lv.out[:0], vals[k:], al.bits)
		lv.out = out
		if !f.spend(len(out)) {
			return
		}
		*fr = frame{pos: pos, k: k, w: al.bits, pad: int32(pad)}
		f.walk(out, d+1)
		if f.done() {
			return
		}
		// walk may have grown this level's buffers for deeper views only;
		// vals and pos are still this run's.
		fr, lv = &f.frames[d], &f.levels[d]
	}
}

// decodeBits appends the bytes that vals, w bits each, spell, most
// significant bit first; bits left over at the end are dropped.
func decodeBits(dst, vals []byte, w int) []byte {
	if w == 6 { // base64, 4 characters to 3 bytes at a time
		for len(vals) >= 4 {
			x := uint32(vals[0])<<18 | uint32(vals[1])<<12 | uint32(vals[2])<<6 | uint32(vals[3])
			dst = append(dst, byte(x>>16), byte(x>>8), byte(x))
			vals = vals[4:]
		}
	}
	var acc uint32
	n := 0
	for _, v := range vals {
		acc = acc<<w | uint32(v)
		n += w
		if n >= 8 {
			n -= 8
			dst = append(dst, byte(acc>>n))
			acc &= 1<<n - 1
		}
	}
	return dst
}

// unescape appends to out text with every escape of the families fam
// decoded, and to lo and hi where each byte of out came from (offset by at,
// text's index in its parent).
//
// Escapes: %XX; \uXXXX (a surrogate pair as one character), \u{X…},
// \UXXXXXXXX, \xXX, octal \NNN, \n \r \t \b \f \v \a \e, and a backslash
// before any other byte but % and & (\" \\ \/ \'…) is that byte; &#N; and
// &#xX; (the semicolon may be left out unless an escape follows), &amp;
// &lt; &gt; &quot; &apos;.
//
// An escape cut short by an outer encoding's escape (\x4\u0031) is not one
// here: the outer view decodes it first.
func unescape(text []byte, fam byte, out []byte, lo, hi []int32, at int32) (_ []byte, _, _ []int32) {
	var rb [utf8.UTFMax]byte
	for i := 0; i < len(text); {
		c := text[i]
		n, b := 1, rb[:1]
		rb[0] = c
		if class[c]&clsEscape != 0 && family(text[i:])&fam != 0 {
			if v, m, isByte := escape(text[i:]); m > 0 {
				n = m
				switch {
				case isByte:
					rb[0] = byte(v)
				case v < 0 || v > utf8.MaxRune:
					b = rb[:utf8.EncodeRune(rb[:], utf8.RuneError)]
				default:
					b = rb[:utf8.EncodeRune(rb[:], v)]
				}
			}
		}
		for _, x := range b {
			out = append(out, x)
			lo = append(lo, at+int32(i))
			hi = append(hi, at+int32(i+n))
		}
		i += n
	}
	return out, lo, hi
}

// escape decodes the escape at the start of t: its value, its length (0
// when t does not start with one), and whether the value is a byte (%,
// \x, octal, \c) rather than a character (\u, \U, &#, entities).
func escape(t []byte) (v rune, n int, isByte bool) {
	switch t[0] {
	case '%':
		if v, ok := hexN(t[1:], 2); ok {
			return v, 3, true
		}
	case '\\':
		if len(t) < 2 {
			return 0, 0, false
		}
		switch c := t[1]; c {
		case 'u':
			if len(t) > 2 && t[2] == '{' {
				n := 3
				for n < len(t) && n < 3+6 && class[t[n]]&clsHex != 0 {
					n++
				}
				if n > 3 && n < len(t) && t[n] == '}' {
					v, _ := hexN(t[3:], n-3)
					return v, n + 1, false
				}
				return 0, 0, false
			}
			v, ok := hexN(t[2:], 4)
			if !ok {
				return 0, 0, false
			}
			if v >= 0xd800 && v < 0xdc00 && len(t) >= 12 && t[6] == '\\' && t[7] == 'u' {
				if lo, ok := hexN(t[8:], 4); ok && lo >= 0xdc00 && lo < 0xe000 {
					return 0x10000 + (v-0xd800)<<10 + (lo - 0xdc00), 12, false
				}
			}
			return v, 6, false
		case 'U':
			if v, ok := hexN(t[2:], 8); ok {
				return v, 10, false
			}
			return 0, 0, false
		case 'x':
			if v, ok := hexN(t[2:], 2); ok {
				return v, 4, true
			}
			return 0, 0, false
		case '0', '1', '2', '3':
			// Octal, three digits (\101): fewer may be digits an outer
			// encoding escaped.
			v, ok := rune(0), len(t) >= 4
			for _, d := range t[1:min(4, len(t))] {
				ok = ok && d >= '0' && d <= '7'
				v = v*8 + rune(d-'0')
			}
			if !ok {
				return 0, 0, false
			}
			return v, 4, true
		default:
			// The one-letter escapes, and a backslash before a quote, a
			// backslash or a slash, which stand for themselves. Not before
			// any byte: a backslash an inner encoding wrote before an outer
			// one's escape (\&#117;) is left to it, and bytes decoded from
			// binary data make no escapes.
			if r := shortEscapes[c]; r != 0 {
				return r, 2, true
			}
			return 0, 0, false
		}
	case '&':
		if len(t) > 2 && t[1] == '#' {
			n, base := 2, rune(10)
			if t[2] == 'x' || t[2] == 'X' {
				n, base = 3, 16
			}
			v, digits := rune(0), 0
			for ; n < len(t) && digits < 8; n++ {
				c := t[n]
				switch {
				case c >= '0' && c <= '9':
					v = v*base + rune(c-'0')
				case base == 16 && class[c]&clsHex != 0:
					v = v*base + rune(valHex[c])
				default:
					goto end
				}
				digits++
			}
		end:
			if digits == 0 {
				return 0, 0, false
			}
			switch {
			case n < len(t) && t[n] == ';':
				n++
			case n < len(t) && class[t[n]]&clsEscape != 0:
				// No semicolon, and an escape follows: the digits may go
				// on behind it, an outer encoding's escape (&#x3\u0039;).
				return 0, 0, false
			}
			return v, n, false
		}
		for _, e := range entities {
			if len(t) >= 1+len(e.name) && string(t[1:1+len(e.name)]) == e.name {
				return e.r, 1 + len(e.name), false
			}
		}
	}
	return 0, 0, false
}

// shortEscapes are the one-letter escapes that stand for another byte.
var shortEscapes = [256]rune{'n': '\n', 'r': '\r', 't': '\t', 'b': '\b', 'f': '\f', 'v': '\v', 'a': '\a', 'e': 0x1b,
	'"': '"', '\'': '\'', '\\': '\\', '/': '/', '`': '`'}

var entities = []struct {
	name string
	r    rune
}{{"amp;", '&'}, {"lt;", '<'}, {"gt;", '>'}, {"quot;", '"'}, {"apos;", '\''}}

// hexN reads n hex digits at the start of t.
func hexN(t []byte, n int) (rune, bool) {
	if len(t) < n {
		return 0, false
	}
	var v rune
	for _, c := range t[:n] {
		if class[c]&clsHex == 0 {
			return 0, false
		}
		v = v<<4 | rune(valHex[c])
	}
	return v, true
}
