// Package scrub removes a run's secret values from every string that leaves
// the hub's trusted side: what crosses into the sandbox, a journal, a log, an
// error message, a result or CLI output.
//
// A Scrubber is built once per run from the run's secret values with New and
// then used for every string of that run. Each occurrence of a secret, in
// any form a model could trivially decode it from, becomes Marker.
// Overlapping occurrences are merged, so no part of a form is left behind.
//
// The forms are found by decoding, not by listing them: the text is scanned
// for each secret v and reverse(v) (and v with its spaces written as '+', as
// a query string writes them) through a 4-byte window hashed into an 8 KiB
// bitset, and so is every decoded view of it (decode.go):
//
//   - the escapes view, when the text holds a '%', '\' or '&': every
//     escape decoded in one pass, any mix of them, either case — %XX,
//     \uXXXX (surrogate pairs too), \u{X…}, \UXXXXXXXX, \xXX, octal \NNN,
//     the one-character escapes of JSON, JavaScript and C (\" \/ \n …), and
//     &#NNN; &#xXX; &amp; &lt; &gt; &quot; &apos;. So percent-encoding of
//     any subset of bytes, JSON, JavaScript and HTML escaping are one form;
//   - the runs view: each run of characters of the base64 alphabet
//     (standard and URL-safe, padded or not), of hex digits (either case,
//     mixed) and of the base32 alphabet (either case), long enough to
//     encode the shortest secret, decoded from each of its alignments (4
//     for base64, 2 for hex, 8 for base32), so an encoding embedded in a
//     longer one (a token inside a base64-encoded JSON body, at any of the 3
//     byte offsets) is found too. Line breaks inside a run (PEM, MIME, a
//     wrapped hex dump) are skipped.
//
// Each view is scanned the same way, to a depth of maxDepth, so chains of
// these forms (base64 of a percent-encoded value, hex inside a JSON string,
// a URL-encoding applied twice…) are found as well. A match in a view marks
// the characters of the text it was decoded from: for a base-N run every
// character holding a bit of the secret, and the run's padding when the
// match reaches its end. Around each line break the bytes on both sides are
// also read as one, so a raw secret broken by line breaks is found.
//
// Decoding is bounded: a text whose views would hold more than workFactor
// times its own length (text built to nest encodings without end) is not
// read further and becomes one Marker as a whole.
//
// The output never holds a form: when Marker would form one with the text
// beside it ("0" + "[secret]" + "x" holding the secret "et]x"), the
// occurrence and the Marker are replaced together, until none is left; a
// Scrubber for a secret that is a part of "[secret]" uses another marker
// (see (*Scrubber).Marker). Each round shortens the output, since the span
// replaced holds a form and more than the marker.
//
// Not covered: other encodings (quoted-printable, gzip, …), an encoding
// that is itself reversed (reverse(base64(v)); v reversed inside any
// encoding is covered), a secret split across two strings scrubbed
// separately (the hub scrubs again every value that leaves the sandbox, so
// code that joins two halves is caught there), case changes of v itself,
// and arbitrary transformations by code (XOR, a custom alphabet): code that
// holds a secret's halves can always re-encode them; the halves themselves
// are what the hub cannot tell from data. Outgoing calls are checked with
// Which, so a secret joined by code does not reach another origin.
//
// Secrets shorter than MinLen bytes are ignored: such a value carries too
// little entropy to be a credential, and scrubbing it would replace common
// words and numbers all over the text (a 3-character value occurs by chance
// in every few kilobytes of base64). MinLen also fixes the 4-byte window of
// the matcher.
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
	"unsafe"
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
	// buckets maps the first 4 bytes of a direct form (little endian) to the
	// forms starting with them, longest first.
	buckets map[uint32][]form
	nforms  int
	secrets []string // the secrets accepted, in the order given to New
	// structural is true when a secret holds a byte that can end a JSON
	// token (a quote, one of ,:[]{} or JSON whitespace): only then can an
	// occurrence span two tokens of a document.
	structural bool
	// run64, runHex and run32 are the shortest runs of each alphabet that
	// can encode the shortest secret: shorter runs are not decoded.
	run64, runHex, run32 int
	longest              int // the longest secret's length
}

// form is a text the matcher looks for directly: a secret, reversed, or
// with its spaces as '+'.
type form struct {
	text   string
	secret int // index in Scrubber.secrets
}

// New builds a scrubber for the given secret values. Values shorter than
// MinLen bytes are ignored; duplicates are harmless.
func New(secrets ...string) *Scrubber {
	s := &Scrubber{buckets: map[uint32][]form{}, marker: Marker}
	seen := map[string]bool{}
	shortest := 0
	for _, v := range secrets {
		if len(v) < MinLen || seen[v] {
			continue
		}
		seen[v] = true
		i := len(s.secrets)
		s.secrets = append(s.secrets, v)
		if shortest == 0 || len(v) < shortest {
			shortest = len(v)
		}
		s.longest = max(s.longest, len(v))
		s.structural = s.structural || strings.ContainsAny(v, jsonStructural)
		for _, f := range directForms(v) {
			k := key(f)
			if slices.ContainsFunc(s.buckets[k], func(x form) bool { return x.text == f }) {
				continue
			}
			s.nforms++
			s.buckets[k] = append(s.buckets[k], form{f, i})
			h := hash(k)
			s.filter[h>>6] |= 1 << (h & 63)
		}
	}
	for _, b := range s.buckets {
		slices.SortFunc(b, func(x, y form) int { return len(y.text) - len(x.text) })
	}
	if shortest > 0 {
		s.run64 = (8*shortest + 5) / 6
		s.runHex = 2 * shortest
		s.run32 = (8*shortest + 4) / 5
	}
	for _, m := range []string{"[redacted]", shortMarker} {
		if s.nforms == 0 || !contains(s, s.marker) {
			break
		}
		s.marker = m
	}
	return s
}

// directForms are the texts of v the matcher looks for in the text and in
// each decoded view: v, v reversed, and both with spaces as '+'.
func directForms(v string) []string {
	r := []byte(v)
	slices.Reverse(r)
	out := []string{v}
	for _, f := range []string{string(r), strings.ReplaceAll(v, " ", "+"), strings.ReplaceAll(string(r), " ", "+")} {
		if !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
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

// Len reports how many texts the scrubber looks for directly (each secret,
// reversed, with spaces as '+'); 0 when it scrubs nothing.
func (s *Scrubber) Len() int {
	if s == nil {
		return 0
	}
	return s.nforms
}

// Forms lists encodings of v, each of the whole value, that a Scrubber
// replaces: for tests that check a path end to end. A Scrubber finds far
// more (any mix and chain of escapes and encodings, see the package
// documentation); these are the common ones. It returns nil for a value
// shorter than MinLen.
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
	for _, f := range directForms(v) {
		add(f)
	}
	b := []byte(v)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
		add(enc.EncodeToString(b))
	}
	q, p := url.QueryEscape(v), url.PathEscape(v)
	add(q)
	add(p)
	add(strings.ToLower(percentAll(v)))
	add(percentAll(v))
	add(jsonEscape(v, true))
	add(jsonEscape(v, false))
	add(jsonASCII(v))
	var u, x, dec, hx strings.Builder
	for _, r := range v {
		fmt.Fprintf(&u, `\u%04x`, r)
		fmt.Fprintf(&dec, "&#%d;", r)
		fmt.Fprintf(&hx, "&#x%X;", r)
	}
	for _, c := range b {
		fmt.Fprintf(&x, `\x%02x`, c)
	}
	add(u.String())
	add(x.String())
	add(dec.String())
	add(hx.String())
	h := hex.EncodeToString(b)
	add(h)
	add(strings.ToUpper(h))
	for _, enc := range []*base32.Encoding{base32.StdEncoding, base32.StdEncoding.WithPadding(base32.NoPadding)} {
		b32 := enc.EncodeToString(b)
		add(b32)
		add(strings.ToLower(b32))
	}
	add(url.QueryEscape(q))
	add(base64.StdEncoding.EncodeToString([]byte(q)))
	add(base64.StdEncoding.EncodeToString([]byte(percentAll(v))))
	return out
}

// percentAll is v with every byte percent-encoded, upper-case hex.
func percentAll(v string) string {
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		fmt.Fprintf(&b, "%%%02X", v[i])
	}
	return b.String()
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

func (s *Scrubber) empty() bool { return s == nil || s.nforms == 0 }

// bytesOf is str's bytes, shared: never written.
func bytesOf(str string) []byte { return unsafe.Slice(unsafe.StringData(str), len(str)) }

// String returns str with every form of every secret replaced by Marker.
// It returns str itself, without allocating, when nothing matched.
func (s *Scrubber) String(str string) string {
	if s.empty() {
		return str
	}
	out, ok := scrub(s, nil, bytesOf(str))
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

// Which lists the secrets (as given to New, each once, in that order) that
// text holds in any form.
func (s *Scrubber) Which(text string) []string {
	if s.empty() {
		return nil
	}
	f := getFinder(s, len(text))
	defer f.put()
	f.which = make([]bool, len(s.secrets))
	f.find(bytesOf(text))
	var out []string
	for i, hit := range f.which {
		if hit {
			out = append(out, s.secrets[i])
		}
	}
	return out
}

func contains[T string | []byte](s *Scrubber, text T) bool {
	f := getFinder(s, len(text))
	defer f.put()
	f.first = true
	var b []byte
	switch t := any(text).(type) {
	case string:
		b = bytesOf(t)
	case []byte:
		b = t
	}
	return len(f.find(b)) > 0
}

// leaks reports whether text holds a form of a secret.
func leaks(s *Scrubber, text []byte) bool { return contains(s, text) }

// scan calls match(start, end, secret) for every occurrence of a direct
// form in text, in order of start, with the longest form at each start.
// It stops when match returns false.
func scan(s *Scrubber, text []byte, match func(start, end, secret int) bool) {
	n := len(text)
	for i := 0; i+4 <= n; i++ {
		k := uint32(text[i]) | uint32(text[i+1])<<8 | uint32(text[i+2])<<16 | uint32(text[i+3])<<24
		h := (k * hashMul) >> (32 - filterBits)
		if s.filter[h>>6]&(1<<(h&63)) == 0 {
			continue
		}
		for _, f := range s.buckets[k] {
			if len(f.text) <= n-i && string(text[i:i+len(f.text)]) == f.text {
				if !match(i, i+len(f.text), f.secret) {
					return
				}
				break
			}
		}
	}
}

// scrub appends text to dst with every occurrence of a form replaced by
// the marker; overlapping occurrences become one marker. When a marker and
// the text beside it form a form, both are replaced again, until no form is
// left (each round shortens the output: no form is a part of the marker).
// It reports whether anything matched; when nothing did, dst is returned
// unchanged.
func scrub(s *Scrubber, dst, text []byte) ([]byte, bool) {
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

// find returns the spans of text covered by occurrences of forms, in the
// text and in its decoded views, merged and in order.
func find(s *Scrubber, text []byte) []span {
	f := getFinder(s, len(text))
	defer f.put()
	spans := f.find(text)
	if len(spans) == 0 {
		return nil
	}
	return slices.Clone(spans)
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
	// The spans found in the whole document hold every occurrence inside
	// a token without escapes (its runs and escapes are the document's):
	// such a token that meets none is left as it is.
	spans := find(s, raw)
	if len(spans) == 0 && bytes.IndexByte(raw, '\\') < 0 {
		return msg
	}
	out, changed, ok := s.walkJSON(raw, spans)
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
func (s *Scrubber) walkJSON(raw []byte, spans []span) (out []byte, changed, ok bool) {
	out = make([]byte, 0, len(raw))
	// meets reports whether a span found in raw meets raw[i:j]; tokens are
	// asked in order.
	meets := func(i, j int) bool {
		for len(spans) > 0 && spans[0].end <= i {
			spans = spans[1:]
		}
		return len(spans) > 0 && spans[0].start < j
	}
	for i := 0; i < len(raw); {
		c := raw[i]
		switch {
		case c == '"':
			j := stringEnd(raw, i)
			lit := raw[i:j]
			i = j
			if bytes.IndexByte(lit, '\\') < 0 {
				if !meets(j-len(lit), j) {
					out = append(out, lit...)
				} else if r, hit := scrub(s, out, lit); hit {
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
			if meets(i, j) && contains(s, raw[i:j]) {
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
