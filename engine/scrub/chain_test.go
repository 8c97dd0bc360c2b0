package scrub

import (
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"
)

// A link is one encoding of a chain: encode writes its input in that form
// (choosing at random what the form leaves open: which bytes to escape, the
// case, the alphabet, the bytes around an embedded encoding), and decode
// reads a text back leniently, into every candidate the form could have
// produced. The decoders here use the standard library and regular
// expressions, not the package's code.
type link struct {
	name   string
	encode func(r *rand.Rand, in string) string
	decode func(text string) []string
}

var (
	reRun64  = regexp.MustCompile(`[A-Za-z0-9+/_-]+`)
	reRunHex = regexp.MustCompile(`[0-9a-fA-F]+`)
	reRun32  = regexp.MustCompile(`[A-Za-z2-7]+`)
	rePct    = regexp.MustCompile(`%[0-9a-fA-F]{2}`)
	reU      = regexp.MustCompile(`\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}|\\u[0-9a-fA-F]{4}`)
	reX      = regexp.MustCompile(`\\x[0-9a-fA-F]{2}`)
	reJSON   = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
)

func hexCase(r *rand.Rand, s string) string {
	if r.IntN(2) == 0 {
		return strings.ToUpper(s)
	}
	return s
}

var links = []link{
	{"percent", func(r *rand.Rand, in string) string {
		var b strings.Builder
		for i := 0; i < len(in); i++ {
			if c := in[i]; c == '%' || r.IntN(2) == 0 {
				b.WriteString("%" + hexCase(r, fmt.Sprintf("%02x", c)))
			} else {
				b.WriteByte(c)
			}
		}
		return b.String()
	}, func(text string) []string {
		return []string{rePct.ReplaceAllStringFunc(text, func(m string) string {
			v, _ := strconv.ParseUint(m[1:], 16, 8)
			return string([]byte{byte(v)})
		})}
	}},
	{"\\u", func(r *rand.Rand, in string) string {
		var b strings.Builder
		for _, c := range in {
			if c != '\\' && r.IntN(2) == 0 {
				b.WriteRune(c)
				continue
			}
			for _, u := range utf16.Encode([]rune{c}) {
				b.WriteString(`\u` + hexCase(r, fmt.Sprintf("%04x", u)))
			}
		}
		return b.String()
	}, func(text string) []string {
		return []string{reU.ReplaceAllStringFunc(text, func(m string) string {
			var units []uint16
			for _, h := range strings.Split(m, `\u`)[1:] {
				v, _ := strconv.ParseUint(h, 16, 16)
				units = append(units, uint16(v))
			}
			return string(utf16.Decode(units))
		})}
	}},
	{"\\x", func(r *rand.Rand, in string) string {
		var b strings.Builder
		for i := 0; i < len(in); i++ {
			if c := in[i]; c == '\\' || r.IntN(2) == 0 {
				b.WriteString(`\x` + hexCase(r, fmt.Sprintf("%02x", c)))
			} else {
				b.WriteByte(c)
			}
		}
		return b.String()
	}, func(text string) []string {
		return []string{reX.ReplaceAllStringFunc(text, func(m string) string {
			v, _ := strconv.ParseUint(m[2:], 16, 8)
			return string([]byte{byte(v)})
		})}
	}},
	{"&#", func(r *rand.Rand, in string) string {
		var b strings.Builder
		for _, c := range in {
			switch {
			case c != '&' && r.IntN(2) == 0:
				b.WriteRune(c)
			case r.IntN(2) == 0:
				fmt.Fprintf(&b, "&#%d;", c)
			default:
				fmt.Fprintf(&b, "&#x%s;", hexCase(r, fmt.Sprintf("%x", c)))
			}
		}
		return b.String()
	}, func(text string) []string { return []string{html.UnescapeString(text)} }},
	{"base64", func(r *rand.Rand, in string) string {
		encs := []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding}
		around := func() string { // 0–2 bytes: the value at any of the 3 offsets
			b := make([]byte, r.IntN(3))
			for i := range b {
				b[i] = byte(r.IntN(256))
			}
			return string(b)
		}
		return encs[r.IntN(len(encs))].EncodeToString([]byte(around() + in + around()))
	}, func(text string) []string {
		var out []string
		for _, run := range reRun64.FindAllString(text, -1) {
			run = strings.NewReplacer("-", "+", "_", "/").Replace(run)
			for k := 0; k < 4 && k < len(run); k++ {
				s := run[k:]
				if len(s)%4 == 1 {
					s = s[:len(s)-1]
				}
				if b, err := base64.RawStdEncoding.DecodeString(s); err == nil {
					out = append(out, string(b))
				}
			}
		}
		return out
	}},
	{"hex", func(r *rand.Rand, in string) string {
		return hexCase(r, hex.EncodeToString([]byte(in)))
	}, func(text string) []string {
		var out []string
		for _, run := range reRunHex.FindAllString(text, -1) {
			for k := 0; k < 2 && k < len(run); k++ {
				s := run[k:]
				if b, err := hex.DecodeString(s[:len(s)/2*2]); err == nil {
					out = append(out, string(b))
				}
			}
		}
		return out
	}},
	{"base32", func(r *rand.Rand, in string) string {
		enc := base32.StdEncoding
		if r.IntN(2) == 0 {
			enc = enc.WithPadding(base32.NoPadding)
		}
		s := enc.EncodeToString([]byte(in))
		if r.IntN(2) == 0 {
			s = strings.ToLower(s)
		}
		return s
	}, func(text string) []string {
		var out []string
		for _, run := range reRun32.FindAllString(text, -1) {
			run = strings.ToUpper(run)
			for k := 0; k < 8 && k < len(run); k++ {
				s := run[k:]
				for len(s) > 0 && slices.Contains([]int{1, 3, 6}, len(s)%8) {
					s = s[:len(s)-1]
				}
				if b, err := base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(s); err == nil {
					out = append(out, string(b))
				}
			}
		}
		return out
	}},
	{"JSON string", func(r *rand.Rand, in string) string {
		b, _ := json.Marshal(in)
		return string(b)
	}, func(text string) []string {
		var out []string
		for _, lit := range reJSON.FindAllString(text, -1) {
			var v string
			if json.Unmarshal([]byte(lit), &v) == nil {
				out = append(out, v)
			}
		}
		return out
	}},
}

func linkNamed(name string) link {
	for _, l := range links {
		if l.name == name {
			return l
		}
	}
	panic("no link " + name)
}

// reverse is a chain's first link only (see the package documentation).
var reverse = link{"reverse", func(_ *rand.Rand, in string) string {
	b := []byte(in)
	slices.Reverse(b)
	return string(b)
}, func(text string) []string {
	b := []byte(text)
	slices.Reverse(b)
	return []string{string(b)}
}}

// encodeChain encodes secret with a chain of up to 4 links chosen from
// seed; the links that read runes (\u, &#, JSON) are not chosen for text
// that is not UTF-8, which they cannot carry.
func encodeChain(seed uint64, secret string) (enc string, ls []link) {
	r := rand.New(rand.NewPCG(seed, seed>>32|1))
	n := 1 + r.IntN(4)
	enc = secret
	if r.IntN(4) == 0 {
		ls = append(ls, reverse)
		enc = reverse.encode(r, enc)
	}
	for len(ls) < n {
		l := links[r.IntN(len(links))]
		if !utf8.ValidString(enc) && (l.name == "\\u" || l.name == "&#" || l.name == "JSON string") {
			continue
		}
		ls = append(ls, l)
		enc = l.encode(r, enc)
	}
	return enc, ls
}

// decodeChain reads text back through ls, last link first, into every
// candidate.
func decodeChain(text string, ls []link) []string {
	cands := []string{text}
	for i := len(ls) - 1; i >= 0; i-- {
		var next []string
		for _, c := range cands {
			next = append(next, ls[i].decode(c)...)
		}
		cands = next
	}
	return cands
}

func names(ls []link) string {
	var n []string
	for _, l := range ls {
		n = append(n, l.name)
	}
	return strings.Join(n, " → ")
}

// FuzzChain encodes a secret with a random chain of the forms a model could
// decode it from, puts it between a prefix and a suffix, and checks that
// the scrubbed text decodes, through the same chain, to nothing holding the
// secret (where the text before scrubbing does).
func FuzzChain(f *testing.F) {
	f.Add("token: ", "sk_live_4eC39HqLyjWDarjtT1zdp7dc", " end", uint64(1))
	f.Add(`{"t":"`, "ghp_Tok3n/with+odd<chars>&\"quote", `"}`, uint64(7))
	f.Add("", "pässwörd 1/2 😀", "", uint64(42))
	f.Add("x", "abcd", "y", uint64(3))
	f.Add("%", "a%41b", "\\", uint64(11))
	f.Fuzz(func(t *testing.T, prefix, secret, suffix string, seed uint64) {
		if len(secret) < MinLen || len(prefix)+len(secret)+len(suffix) > 200 {
			return
		}
		enc, ls := encodeChain(seed, secret)
		in := prefix + enc + suffix
		if !slices.ContainsFunc(decodeChain(in, ls), func(c string) bool { return strings.Contains(c, secret) }) {
			return // the prefix or suffix made the chain ambiguous: nothing to check
		}
		s := New(secret)
		out := s.String(in)
		for _, c := range decodeChain(out, ls) {
			if strings.Contains(c, secret) {
				t.Fatalf("chain %s: %q scrubbed to %q, which decodes to %q, holding %q", names(ls), in, out, c, secret)
			}
		}
		if got := string(s.Bytes([]byte(in))); got != out {
			t.Fatalf("Bytes(%q) = %q, String gave %q", in, got, out)
		}
		if !s.Contains(in) {
			t.Fatalf("chain %s: Contains(%q) is false", names(ls), in)
		}
		if w := s.Which(in); len(w) != 1 || w[0] != secret {
			t.Fatalf("chain %s: Which(%q) = %q", names(ls), in, w)
		}
	})
}

// TestChains runs FuzzChain's check over many seeds of a few secrets, so
// that every link and many chains are tried on every test run.
func TestChains(t *testing.T) {
	secrets := []string{"sk_live_4eC39HqLyjWDarjtT1zdp7dc", tok, "pässwörd 1/2 😀", "abcd", "a%41b\\u00", "xoxb-2048-4096-abcdefABCDEF0123456789"}
	tried := map[string]int{}
	for _, secret := range secrets {
		s := New(secret)
		for seed := range uint64(400) {
			enc, ls := encodeChain(seed, secret)
			for _, wrap := range [][2]string{{"", ""}, {"id=", "&x=1"}, {`{"a":"`, `"}`}} {
				in := wrap[0] + enc + wrap[1]
				if !slices.ContainsFunc(decodeChain(in, ls), func(c string) bool { return strings.Contains(c, secret) }) {
					if wrap[0] != "" {
						continue // the wrapping made the chain ambiguous (a quote inside a JSON string)
					}
					t.Fatalf("chain %s of %q: the test's own decoders do not read %q back", names(ls), secret, in)
				}
				out := s.String(in)
				for _, c := range decodeChain(out, ls) {
					if strings.Contains(c, secret) {
						t.Fatalf("chain %s: %q scrubbed to %q, which decodes to %q, holding %q", names(ls), in, out, c, secret)
					}
				}
			}
			for _, l := range ls {
				tried[l.name]++
			}
		}
	}
	for _, l := range append(slices.Clone(links), reverse) {
		if tried[l.name] == 0 {
			t.Errorf("no chain used %s", l.name)
		}
	}
}
