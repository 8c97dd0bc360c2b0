package scrub

import (
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
