package scrub

import (
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/url"
	"strings"
	"testing"
)

var benchSecrets = []string{
	"ghp_16C7e42F292c6912E7710c838347Ae178B4a",
	"xoxb-2048-4096-abcdefABCDEF0123456789",
	"sk-proj-Zm9vYmFyYmF6cXV4cXV1eHh5ejEyMzQ1Njc4OTA",
	"AKIAIOSFODNN7EXAMPLE/wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
	"hunter2-correct-horse-battery",
}

// result1MB is a tool result of about 1 MiB, JSON lines with words, numbers
// and base64 blobs, with the secrets embedded 5 times each in one of their
// forms (raw, base64, URL-encoded, JSON-escaped, hex).
func result1MB(withSecrets bool) []byte {
	r := rand.New(rand.NewPCG(1, 2))
	words := strings.Fields("the quick brown fox jumps over lazy dog issue pull request commit branch merge review comment label milestone repository owner name description created updated")
	var b strings.Builder
	blob := make([]byte, 96)
	for b.Len() < 1<<20 {
		fmt.Fprintf(&b, `{"id":%d,"title":"`, r.IntN(1e9))
		for range 8 + r.IntN(8) {
			b.WriteString(words[r.IntN(len(words))])
			b.WriteByte(' ')
		}
		for i := range blob {
			blob[i] = byte(r.Uint32())
		}
		fmt.Fprintf(&b, `","blob":"%s","url":"https://api.example.com/repos/o/r/issues/%d"}`+"\n", base64.StdEncoding.EncodeToString(blob), r.IntN(1e5))
	}
	text := b.String()
	if !withSecrets {
		return []byte(text)
	}
	forms := func(v string) []string {
		j, _ := json.Marshal(v)
		return []string{v, base64.StdEncoding.EncodeToString([]byte(v)), url.QueryEscape(v), string(j[1 : len(j)-1]), hex.EncodeToString([]byte(v))}
	}
	for _, v := range benchSecrets {
		for _, f := range forms(v) {
			at := r.IntN(len(text))
			text = text[:at] + f + text[at:]
		}
	}
	return []byte(text)
}

func BenchmarkScrub1MB(b *testing.B) {
	s := New(benchSecrets...)
	in := result1MB(true)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if out := s.Bytes(in); len(out) == len(in) {
			b.Fatal("nothing scrubbed")
		}
	}
}

func BenchmarkScrub1MBClean(b *testing.B) {
	s := New(benchSecrets...)
	in := result1MB(false)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		_ = s.Bytes(in)
	}
}

func BenchmarkScrubJSON1MB(b *testing.B) {
	s := New(benchSecrets...)
	lines := strings.Split(strings.TrimSpace(string(result1MB(true))), "\n")
	in := []byte("[" + strings.Join(lines, ",") + "]")
	if !json.Valid(in) {
		b.Fatal("benchmark input is not JSON")
	}
	if out := s.JSON(in); !json.Valid(out) || len(out) == len(in) {
		b.Fatal("JSON scrub broke the document or scrubbed nothing")
	}
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		_ = s.JSON(in)
	}
}

func BenchmarkNew(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_ = New(benchSecrets...)
	}
}

// secrets50 are 50 credentials of 20 to 60 bytes, of the shapes real
// ones have (a prefix, letters, digits and some punctuation).
func secrets50() []string {
	r := rand.New(rand.NewPCG(3, 4))
	const abc = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_./+="
	prefixes := []string{"ghp_", "xoxb-", "sk-proj-", "AKIA", "glpat-", "", "Bearer-", "npm_"}
	out := make([]string, 50)
	for i := range out {
		b := []byte(prefixes[i%len(prefixes)])
		for n := 20 + r.IntN(41) - len(b); n > 0; n-- {
			b = append(b, abc[r.IntN(len(abc))])
		}
		out[i] = string(b)
	}
	return out
}

// everyForm is v in each form issue 36 lists, computed with the standard
// library: raw, reversed, percent-encoded whole (both cases), \u, \x, &#
// and &#x escapes, base64 (4 alphabets and paddings), hex (both cases),
// base32, and inside a JSON string.
func everyForm(v string) []string {
	b := []byte(v)
	rev := []byte(v)
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	var pct, u, x, dec, hx strings.Builder
	for _, c := range b {
		fmt.Fprintf(&pct, "%%%02x", c)
		fmt.Fprintf(&x, `\x%02x`, c)
	}
	for _, c := range v {
		fmt.Fprintf(&u, `\u%04x`, c)
		fmt.Fprintf(&dec, "&#%d;", c)
		fmt.Fprintf(&hx, "&#x%x;", c)
	}
	j, _ := json.Marshal(v)
	return []string{
		v, string(rev), pct.String(), strings.ToUpper(pct.String()), u.String(), x.String(), dec.String(), hx.String(),
		base64.StdEncoding.EncodeToString(b), base64.RawURLEncoding.EncodeToString(b),
		hex.EncodeToString(b), strings.ToUpper(hex.EncodeToString(b)),
		base32.StdEncoding.EncodeToString(b), string(j),
	}
}

// BenchmarkScrub50Secrets1MB: 50 secrets, each put once in every form of
// everyForm (700 occurrences) into the 1 MB result.
func BenchmarkScrub50Secrets1MB(b *testing.B) {
	secrets := secrets50()
	r := rand.New(rand.NewPCG(5, 6))
	text := string(result1MB(false))
	for _, v := range secrets {
		for _, f := range everyForm(v) {
			at := r.IntN(len(text))
			for at > 0 && text[at-1] != ' ' { // between words, as a result would hold it
				at--
			}
			text = text[:at] + f + " " + text[at:]
		}
	}
	in := []byte(text)
	s := New(secrets...)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		_ = s.Bytes(in)
	}
}

// BenchmarkScrub50Secrets1MBClean: the same 50 secrets, none in the text.
func BenchmarkScrub50Secrets1MBClean(b *testing.B) {
	s := New(secrets50()...)
	in := result1MB(false)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		_ = s.Bytes(in)
	}
}

// BenchmarkScrubSmall: a tool result of a few hundred bytes, the common
// case, with 5 secrets.
func BenchmarkScrubSmall(b *testing.B) {
	s := New(benchSecrets...)
	in := []byte(`{"id":12345,"title":"Fix the login page","state":"open","user":{"login":"octocat"},"body":"The form posts to /api/login and gets a 500 back.\nSteps: open the page, type a name, press enter.","url":"https://api.example.com/repos/o/r/issues/12345"}`)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		_ = s.Bytes(in)
	}
}
