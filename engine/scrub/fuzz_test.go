package scrub

import (
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// independentForms computes the forms of v without the package's code, so
// the fuzz test does not check Forms against itself.
func independentForms(v string) []string {
	b := []byte(v)
	j, _ := json.Marshal(v)
	return []string{
		v,
		base64.StdEncoding.EncodeToString(b), base64.RawStdEncoding.EncodeToString(b),
		base64.URLEncoding.EncodeToString(b), base64.RawURLEncoding.EncodeToString(b),
		url.QueryEscape(v), url.PathEscape(v),
		string(j[1 : len(j)-1]),
		hex.EncodeToString(b), strings.ToUpper(hex.EncodeToString(b)),
		base32.StdEncoding.EncodeToString(b), strings.ToLower(base32.StdEncoding.EncodeToString(b)),
		url.QueryEscape(url.QueryEscape(v)),
		base64.StdEncoding.EncodeToString([]byte(url.QueryEscape(v))),
	}
}

// middle is the part of enc(prefix+secret+suffix) whose characters are
// determined by secret alone.
func middle(enc *base64.Encoding, prefix, secret, suffix []byte) string {
	doc := append(append(append([]byte{}, prefix...), secret...), suffix...)
	e := enc.EncodeToString(doc)
	lo, hi := 8*len(prefix), 8*(len(prefix)+len(secret))
	first := (lo + 5) / 6
	last := hi / 6
	if first >= last {
		return ""
	}
	return e[first:last]
}

// outsideMarkers reports whether form occurs in out. (The name is from the
// time a form inside a Marker was excused; the output must now hold none.)
func outsideMarkers(out, form string) bool {
	return form != "" && strings.Contains(out, form)
}

// reference is the obvious quadratic scrubber: mark every byte covered by an
// occurrence of any form, then replace each run of covered bytes that came
// from overlapping occurrences by one Marker.
func reference(forms []string, marker, text string) string {
	type span struct{ start, end int }
	var spans []span
	for i := range len(text) {
		end := -1
		for _, f := range forms {
			if strings.HasPrefix(text[i:], f) && i+len(f) > end {
				end = i + len(f)
			}
		}
		if end < 0 {
			continue
		}
		if n := len(spans); n > 0 && i < spans[n-1].end {
			spans[n-1].end = max(spans[n-1].end, end)
		} else {
			spans = append(spans, span{i, end})
		}
	}
	var b strings.Builder
	last := 0
	for _, s := range spans {
		b.WriteString(text[last:s.start])
		b.WriteString(marker)
		last = s.end
	}
	b.WriteString(text[last:])
	return b.String()
}

func FuzzScrub(f *testing.F) {
	f.Add("Bearer ", "ghp_abcdefghijklmnop", "\n")
	f.Add(`{"token":"`, tok, `"}`)
	f.Add("x", "pässwörd 1/2", "y")
	f.Add("", "abcd", "")
	f.Add("ab", "secret", "cd")
	f.Add("[secr", "et]x", "")
	f.Add("0", "et]x", "x")
	f.Add("a", "secret", "redacted")
	f.Fuzz(func(t *testing.T, prefix, secret, suffix string) {
		s := New(secret)
		if len(secret) < MinLen {
			in := prefix + secret + suffix
			if got := s.String(in); got != in {
				t.Fatalf("short secret %q changed %q into %q", secret, in, got)
			}
			return
		}
		check := func(what, in string) {
			out := s.String(in)
			if want := reference(s.forms, s.Marker(), in); out != want && !strings.Contains(in, "\n") && !s.Contains(want) {
				t.Fatalf("%s: String(%q) differs from the reference (-want +got):\n%s", what, in, cmp.Diff(want, out))
			}
			if got := string(s.Bytes([]byte(in))); got != out {
				t.Fatalf("%s: Bytes(%q) = %q, String gave %q", what, in, got, out)
			}
			for _, form := range independentForms(secret) {
				if outsideMarkers(out, form) {
					t.Fatalf("%s: form %q of %q remains in %q", what, form, secret, out)
				}
			}
		}
		for i, form := range independentForms(secret) {
			check("form "+string(rune('0'+i)), prefix+form+suffix)
			if len(form) > 2 {
				check("form wrapped "+string(rune('0'+i)), prefix+form[:len(form)/2]+"\r\n"+form[len(form)/2:]+suffix)
			}
		}
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
			in := enc.EncodeToString([]byte(prefix + secret + suffix))
			check("embedded base64", in)
			mid := middle(enc, []byte(prefix), []byte(secret), []byte(suffix))
			if outsideMarkers(s.String(in), mid) {
				t.Fatalf("the stable middle %q of %q remains in %q", mid, secret, s.String(in))
			}
		}
		doc, _ := json.Marshal(map[string]string{prefix: secret + suffix})
		out := s.JSON(doc)
		if !json.Valid(out) {
			t.Fatalf("JSON(%s) = %s: not valid JSON", doc, out)
		}
		for _, form := range independentForms(secret) {
			if outsideMarkers(string(out), form) {
				t.Fatalf("JSON(%s) = %s: form %q remains", doc, out, form)
			}
		}
		var back map[string]string
		if err := json.Unmarshal(out, &back); err == nil {
			for k, v := range back {
				if outsideMarkers(k, secret) || outsideMarkers(v, secret) {
					t.Fatalf("JSON(%s) = %s: the secret remains in a decoded string", doc, out)
				}
			}
		}
	})
}
