package scrub

import (
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"
)

// independentForms computes the forms of v without the package's code, so
// the fuzz test does not check Forms against itself. The JSON form is left
// out for a v that is not UTF-8: JSON writes its bad bytes as U+FFFD, which
// no reader can take back to v.
func independentForms(v string) []string {
	b := []byte(v)
	j, _ := json.Marshal(v)
	jsonForm := string(j[1 : len(j)-1])
	if !utf8.ValidString(v) {
		jsonForm = v
	}
	return []string{
		v,
		base64.StdEncoding.EncodeToString(b), base64.RawStdEncoding.EncodeToString(b),
		base64.URLEncoding.EncodeToString(b), base64.RawURLEncoding.EncodeToString(b),
		url.QueryEscape(v), url.PathEscape(v),
		jsonForm,
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
		if len(prefix)+len(secret)+len(suffix) > 256 {
			return // longer inputs find nothing new and slow minimizing down
		}
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
			// No run of what is left decodes to it, at any alignment (the
			// stable middle of the secret's encoding may remain as text of
			// another alignment, which decodes to something else).
			for _, dec := range linkNamed("base64").decode(s.String(in)) {
				if strings.Contains(dec, secret) {
					t.Fatalf("%q scrubbed to %q, which decodes to %q", in, s.String(in), dec)
				}
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
