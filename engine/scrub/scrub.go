// Package scrub removes a run's secret values from every string that leaves
// the hub's trusted side: what crosses into the sandbox, a journal, a log, an
// error message, a result or CLI output.
//
// A Scrubber is built once per run from the run's secret values with New and
// then used for every string of that run. Each occurrence of a secret, in any
// of the forms listed below, becomes Marker. All forms of all secrets are
// found in ONE pass over the text: a 4-byte window hashed into an 8 KiB
// bitset, and only on a hit a lookup of the candidate forms that start with
// those 4 bytes. Overlapping occurrences are merged, so no part of a form is
// left behind when two forms overlap.
//
// Forms covered, for a secret value v:
//
//   - v itself;
//   - base64 of v: standard and URL-safe alphabets, padded and unpadded;
//   - base64 of v embedded anywhere inside a longer base64 string (an API
//     that base64-encodes a whole JSON document holding the token): v may
//     start at byte offset 0, 1 or 2 modulo 3 of the encoded data, which
//     shifts the encoding. For each of the three alignments the characters
//     determined by v alone (the stable middle) are a form. The one or two
//     characters at each end of an embedded encoding that mix bits of v with
//     bits of the surrounding data stay; they carry at most 10 bits of v;
//   - URL-encoded v: url.QueryEscape and url.PathEscape, with upper-case and
//     lower-case percent hex;
//   - JSON-escaped v (the content of a JSON string, without quotes): Go's
//     encoding/json with and without HTML escaping, "\/" for "/", and the
//     ASCII-only form of Python's json.dumps (\uXXXX for non-ASCII);
//   - hex of v, lower and upper case;
//   - base32 of v (standard alphabet, padded and unpadded, upper and lower
//     case);
//   - forms of forms: URL-encoding applied twice, and base64 (standard and
//     URL-safe, padded and unpadded) of the URL-encoded and JSON-escaped v;
//   - any form broken by line breaks (MIME or PEM base64 wrapped at 64 or
//     76 columns, a hex dump wrapped anywhere): text holding '\n' is also
//     matched with its CR and LF bytes left out, and a match covers the
//     line breaks inside it.
//
// The output never holds a form: when Marker would form one with the text
// beside it ("0" + "[secret]" + "x" holding the secret "et]x"), the
// occurrence and the Marker are replaced together, until none is left; a
// Scrubber for a secret that is a part of "[secret]" uses another marker
// (see (*Scrubber).Marker). Each round shortens the output, since the span
// replaced holds a form and more than the marker.
//
// Not covered: other encodings (quoted-printable, gzip, base32 embedded in
// longer base32, …), a secret split across two strings scrubbed separately
// (the hub scrubs again every value that leaves the sandbox, so code that
// joins two halves is caught there), case changes other than those above,
// and arbitrary transformations by code (reversing, XOR, a custom
// alphabet): code that holds a secret's halves can always re-encode them;
// the halves themselves are what the hub cannot tell from data.
//
// Secrets shorter than MinLen bytes are ignored: such a value carries too
// little entropy to be a credential, and scrubbing it would replace common
// words and numbers all over the text (a 3-character value occurs by chance
// in every few kilobytes of base64). MinLen also fixes the 4-byte window of
// the matcher: every form of an accepted secret is at least 4 bytes long.
package scrub

import (
	"bytes"
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"
)

// Marker replaces every occurrence of a secret. It holds no quote and no
// backslash, so it is valid inside a JSON string.
const Marker = "[secret]"

// MinLen is the length, in bytes, under which a secret value is ignored.
const MinLen = 4

const jsonStructural = "\",:[]{} \t\r\n"

const (
	filterBits = 16
	hashMul    = 0x9E3779B1
)

// Scrubber replaces a run's secret values in text. The zero value and a nil
// *Scrubber scrub nothing and cost nothing. A Scrubber is safe for
// concurrent use.
type Scrubber struct {
	marker string // Marker, or another when a form is a part of it
	filter [1 << filterBits / 64]uint64
	// buckets maps the first 4 bytes of a form (little endian) to the forms
	// starting with them, longest first.
	buckets map[uint32][]string
	forms   []string
	// structural is true when a form holds a byte that can end a JSON token
	// (a quote, one of ,:[]{} or JSON whitespace): only then can a form span
	// two tokens of a document.
	structural bool
}

// New builds a scrubber for the given secret values. Values shorter than
// MinLen bytes are ignored; duplicates are harmless.
func New(secrets ...string) *Scrubber {
	s := &Scrubber{buckets: map[uint32][]string{}, marker: Marker}
	seen := map[string]bool{}
	for _, v := range secrets {
		if len(v) < MinLen {
			continue
		}
		for _, f := range Forms(v) {
			if len(f) < MinLen || seen[f] {
				continue
			}
			seen[f] = true
			s.forms = append(s.forms, f)
			s.structural = s.structural || strings.ContainsAny(f, jsonStructural)
			k := key(f)
			s.buckets[k] = append(s.buckets[k], f)
			h := hash(k)
			s.filter[h>>6] |= 1 << (h & 63)
		}
	}
	for _, b := range s.buckets {
		slices.SortFunc(b, func(x, y string) int { return len(y) - len(x) })
	}
	for _, m := range []string{"[redacted]", shortMarker} {
		if len(s.forms) == 0 || !contains(s, s.marker) {
			break
		}
		s.marker = m
	}
	return s
}

// shortMarker is shorter than MinLen, so it never holds a form.
const shortMarker = "[*]"

// Marker is the text that replaces a secret: the package's Marker, unless
// a form of one of the secrets is a part of it; then "[redacted]", else
// "[*]", which is too short to hold any.
func (s *Scrubber) Marker() string {
	if s == nil || s.marker == "" {
		return Marker
	}
	return s.marker
}

// Len reports how many distinct forms the scrubber looks for.
func (s *Scrubber) Len() int {
	if s == nil {
		return 0
	}
	return len(s.forms)
}

// Forms lists the forms of v that a Scrubber replaces (see the package
// documentation), without duplicates. It returns nil for a value shorter
// than MinLen.
func Forms(v string) []string {
	if len(v) < MinLen {
		return nil
	}
	var out []string
	add := func(f string) {
		if len(f) >= MinLen && !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	add(v)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
		add(enc.EncodeToString([]byte(v)))
		raw := enc.WithPadding(base64.NoPadding)
		add(raw.EncodeToString([]byte(v)))
		for a := range 3 {
			add(base64Middle(raw, v, a))
		}
	}
	q, p := url.QueryEscape(v), url.PathEscape(v)
	add(q)
	add(p)
	add(lowerPercent(q))
	add(lowerPercent(p))
	plain := jsonEscape(v, false)
	add(jsonEscape(v, true))
	add(plain)
	add(strings.ReplaceAll(plain, "/", `\/`))
	add(jsonASCII(v))
	h := hex.EncodeToString([]byte(v))
	add(h)
	add(strings.ToUpper(h))
	for _, enc := range []*base32.Encoding{base32.StdEncoding, base32.StdEncoding.WithPadding(base32.NoPadding)} {
		b32 := enc.EncodeToString([]byte(v))
		add(b32)
		add(strings.ToLower(b32))
	}
	add(url.QueryEscape(q))
	add(url.PathEscape(p))
	for _, inner := range []string{q, p, plain, jsonEscape(v, true)} {
		if inner == v {
			continue
		}
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
			add(enc.EncodeToString([]byte(inner)))
		}
	}
	return out
}

// base64Middle is the part of the encoding of v, placed at byte offset a
// (0, 1 or 2) of a longer encoded input, that depends on v alone: the
// characters whose 6 bits all come from v.
func base64Middle(enc *base64.Encoding, v string, a int) string {
	buf := make([]byte, a+len(v))
	copy(buf[a:], v)
	e := enc.EncodeToString(buf)
	first := (8*a + 5) / 6       // first character starting at or after bit 8a
	last := (8*a + 8*len(v)) / 6 // characters ending at or before the end of v
	if last > len(e) {
		last = len(e)
	}
	if first >= last {
		return ""
	}
	return e[first:last]
}

func lowerPercent(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	b := []byte(s)
	for i := 0; i+2 < len(b); i++ {
		if b[i] == '%' {
			b[i+1] = toLowerASCII(b[i+1])
			b[i+2] = toLowerASCII(b[i+2])
			i += 2
		}
	}
	return string(b)
}

func toLowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// jsonEscape is v as encoding/json writes it inside a string, without the
// quotes.
func jsonEscape(v string, html bool) string {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(html)
	if err := e.Encode(v); err != nil {
		return v
	}
	out := bytes.TrimSuffix(b.Bytes(), []byte("\n"))
	return string(out[1 : len(out)-1])
}

// jsonASCII is v as Python's json.dumps writes it by default
// (ensure_ascii): short escapes for \" \\ \n \r \t \b \f, \u00XX for other
// control characters, and \uXXXX (surrogate pairs above U+FFFF) for every
// non-ASCII character.
func jsonASCII(v string) string {
	var b strings.Builder
	for _, r := range v {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r < 0x20 || (r >= 0x7f && r <= 0xffff):
			fmt.Fprintf(&b, `\u%04x`, r)
		case r > 0xffff:
			r -= 0x10000
			fmt.Fprintf(&b, `\u%04x\u%04x`, 0xd800+(r>>10), 0xdc00+(r&0x3ff))
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func key[T string | []byte](b T) uint32 {
	_ = b[3]
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

func hash(k uint32) uint32 { return (k * hashMul) >> (32 - filterBits) }

func (s *Scrubber) empty() bool { return s == nil || len(s.forms) == 0 }

// String returns str with every form of every secret replaced by Marker.
// It returns str itself, without allocating, when nothing matched.
func (s *Scrubber) String(str string) string {
	if s.empty() {
		return str
	}
	out, ok := scrub(s, nil, str)
	if !ok {
		return str
	}
	return string(out)
}

// Bytes returns b with every form of every secret replaced by Marker. It
// returns b itself when nothing matched, and a new slice otherwise; b is
// never modified.
func (s *Scrubber) Bytes(b []byte) []byte {
	if s.empty() {
		return b
	}
	out, ok := scrub(s, nil, b)
	if !ok {
		return b
	}
	return out
}

// Contains reports whether text holds any form of any secret.
func (s *Scrubber) Contains(text string) bool {
	if s.empty() {
		return false
	}
	return contains(s, text)
}

func contains[T string | []byte](s *Scrubber, text T) bool {
	if hasLineBreak(text) {
		return len(find(s, text)) > 0
	}
	found := false
	scan(s, text, func(int, int) bool { found = true; return false })
	return found
}

// leaks reports whether text holds a form of a secret.
func leaks(s *Scrubber, text []byte) bool { return contains(s, text) }

// scan calls match(start, end) for every occurrence of a form, in order of
// start, with the longest form at each start. It stops when match returns
// false.
func scan[T string | []byte](s *Scrubber, text T, match func(start, end int) bool) {
	n := len(text)
	for i := 0; i+4 <= n; i++ {
		k := uint32(text[i]) | uint32(text[i+1])<<8 | uint32(text[i+2])<<16 | uint32(text[i+3])<<24
		h := (k * hashMul) >> (32 - filterBits)
		if s.filter[h>>6]&(1<<(h&63)) == 0 {
			continue
		}
		for _, f := range s.buckets[k] {
			if len(f) <= n-i && string(text[i:i+len(f)]) == f {
				if !match(i, i+len(f)) {
					return
				}
				break
			}
		}
	}
}

// scrub appends text to dst with every occurrence of a form replaced by
// the marker; overlapping occurrences become one marker. Text holding a line
// break is also matched with its CR and LF bytes left out. When a marker and
// the text beside it form a form, both are replaced again, until no form is
// left (each round shortens the output: no form is a part of the marker).
// It reports whether anything matched; when nothing did, dst is returned
// unchanged.
func scrub[T string | []byte](s *Scrubber, dst []byte, text T) ([]byte, bool) {
	spans := find(s, text)
	if len(spans) == 0 {
		return dst, false
	}
	if dst == nil {
		dst = make([]byte, 0, len(text))
	}
	base := len(dst)
	marker := s.Marker()
	var markers []span // positions of the markers in dst[base:]
	last := 0
	for _, sp := range spans {
		dst = append(dst, text[last:sp.start]...)
		markers = append(markers, span{len(dst) - base, len(dst) - base + len(marker)})
		dst = append(dst, marker...)
		last = sp.end
	}
	dst = append(dst, text[last:]...)
	for {
		out := dst[base:]
		again := find(s, out)
		if len(again) == 0 {
			return dst, true
		}
		// Every new occurrence overlaps a marker (the text between markers
		// was matched already): widen it over the markers it touches.
		for i := range again {
			for _, m := range markers {
				if m.start < again[i].end && again[i].start < m.end {
					again[i].start = min(again[i].start, m.start)
					again[i].end = max(again[i].end, m.end)
				}
			}
		}
		again = merge(again)
		next := make([]byte, 0, len(out))
		var nextMarkers []span
		last, mi := 0, 0
		for _, sp := range again {
			for ; mi < len(markers) && markers[mi].end <= sp.start; mi++ {
				shift := len(next) - last
				nextMarkers = append(nextMarkers, span{markers[mi].start + shift, markers[mi].end + shift})
			}
			next = append(next, out[last:sp.start]...)
			nextMarkers = append(nextMarkers, span{len(next), len(next) + len(marker)})
			next = append(next, marker...)
			last = sp.end
			for ; mi < len(markers) && markers[mi].start < sp.end; mi++ {
			}
		}
		for ; mi < len(markers); mi++ {
			shift := len(next) - last
			nextMarkers = append(nextMarkers, span{markers[mi].start + shift, markers[mi].end + shift})
		}
		next = append(next, out[last:]...)
		dst = append(dst[:base], next...)
		markers = nextMarkers
	}
}

type span struct{ start, end int }

// find returns the spans of text covered by occurrences of forms, merged
// and in order; text holding '\n' is also matched with CR and LF left out.
func find[T string | []byte](s *Scrubber, text T) []span {
	var spans []span
	scan(s, text, func(i, j int) bool {
		spans = append(spans, span{i, j})
		return true
	})
	if hasLineBreak(text) {
		view := make([]byte, 0, len(text))
		idx := make([]int, 0, len(text))
		for i := 0; i < len(text); i++ {
			if c := text[i]; c != '\n' && c != '\r' {
				view = append(view, c)
				idx = append(idx, i)
			}
		}
		scan(s, view, func(i, j int) bool {
			spans = append(spans, span{idx[i], idx[j-1] + 1})
			return true
		})
	}
	return merge(spans)
}

func hasLineBreak[T string | []byte](text T) bool {
	for i := 0; i < len(text); i++ {
		if text[i] == '\n' {
			return true
		}
	}
	return false
}

// merge sorts spans and joins the overlapping ones.
func merge(spans []span) []span {
	if len(spans) < 2 {
		return spans
	}
	slices.SortFunc(spans, func(a, b span) int { return a.start - b.start })
	out := spans[:1]
	for _, sp := range spans[1:] {
		if l := &out[len(out)-1]; sp.start < l.end {
			l.end = max(l.end, sp.end)
		} else {
			out = append(out, sp)
		}
	}
	return out
}

// JSON returns raw with every form of every secret replaced, keeping the
// document valid JSON when raw is valid: a secret inside a string (also
// behind escapes such as \u0041) becomes Marker inside that string, a
// number or literal holding a secret becomes the string "[secret]". If a
// secret spans several tokens, the whole document becomes "[secret]".
// raw itself is returned when nothing matched. Invalid JSON is scrubbed as
// bytes.
func (s *Scrubber) JSON(msg json.RawMessage) json.RawMessage {
	if s.empty() {
		return msg
	}
	raw := []byte(msg)
	if bytes.IndexByte(raw, '\\') < 0 && !contains(s, raw) {
		return msg
	}
	out, changed, ok := s.walkJSON(raw)
	if !ok {
		return s.Bytes(raw)
	}
	// Without structural bytes in any form, every occurrence lies inside one
	// token, and walkJSON replaced them all; otherwise check the result.
	if !s.structural || (!leaks(s, out) && json.Valid(out)) {
		if !changed {
			return msg
		}
		return out
	}
	if json.Valid(raw) {
		return json.RawMessage(`"` + s.Marker() + `"`)
	}
	return s.Bytes(raw)
}

// walkJSON scrubs raw token by token. A string literal without escapes is
// scrubbed in place; one with escapes is decoded, scrubbed and encoded
// again, and becomes "[secret]" as a whole if its text still holds a form
// (a form spelled with the escape sequences themselves). A number or
// literal holding a form becomes the string "[secret]". ok is false when
// raw is not JSON: a string literal that does not decode, or a byte outside
// strings that JSON does not allow there.
func (s *Scrubber) walkJSON(raw []byte) (out []byte, changed, ok bool) {
	out = make([]byte, 0, len(raw))
	for i := 0; i < len(raw); {
		c := raw[i]
		switch {
		case c == '"':
			j := stringEnd(raw, i)
			lit := raw[i:j]
			i = j
			if bytes.IndexByte(lit, '\\') < 0 {
				if r, hit := scrub(s, out, lit); hit {
					out, changed = r, true
				} else {
					out = append(out, lit...)
				}
				continue
			}
			var v string
			if err := json.Unmarshal(lit, &v); err != nil {
				return nil, false, false
			}
			enc := lit
			if sv := s.String(v); sv != v {
				enc = jsonQuote(sv)
			}
			if leaks(s, enc) {
				enc = []byte(`"` + s.Marker() + `"`)
			}
			out = append(out, enc...)
			changed = changed || &enc[0] != &lit[0]
		case isLiteralByte(c):
			j := i
			for j < len(raw) && isLiteralByte(raw[j]) {
				j++
			}
			if contains(s, raw[i:j]) {
				out = append(out, `"`+s.Marker()+`"`...)
				changed = true
			} else {
				out = append(out, raw[i:j]...)
			}
			i = j
		case strings.IndexByte(jsonStructural, c) >= 0:
			out = append(out, c)
			i++
		default: // not JSON: a backslash or other byte outside a string
			return nil, false, false
		}
	}
	return out, changed, true
}

// stringEnd returns the index just past the JSON string literal starting at
// raw[i] == '"'.
func stringEnd(raw []byte, i int) int {
	for j := i + 1; j < len(raw); {
		k := bytes.IndexByte(raw[j:], '"')
		if k < 0 {
			break
		}
		j += k
		n := 0 // backslashes right before the quote
		for n < j-i-1 && raw[j-1-n] == '\\' {
			n++
		}
		if n%2 == 0 {
			return j + 1
		}
		j++
	}
	return len(raw)
}

// isLiteralByte reports whether c can be part of a JSON number, true, false
// or null.
func isLiteralByte(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '.' || c == '+' || c == '-'
}

func jsonQuote(v string) []byte {
	if !utf8.ValidString(v) {
		v = strings.ToValidUTF8(v, "\uFFFD")
	}
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	_ = e.Encode(v)
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}
