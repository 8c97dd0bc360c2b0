package scrub

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const tok = "ghp_Tok3n/with+odd<chars>&\"quote"

func TestString(t *testing.T) {
	b64 := base64.StdEncoding.EncodeToString
	tests := []struct {
		name    string
		secrets []string
		in      string
		want    string
	}{
		{"no secrets", nil, "plain ghp_x", "plain ghp_x"},
		{"raw", []string{"s3cr3t-value"}, "token=s3cr3t-value;", "token=[secret];"},
		{"twice", []string{"s3cr3t-value"}, "s3cr3t-value s3cr3t-value", "[secret] [secret]"},
		{"base64 std padded", []string{"abcd"}, "x " + b64([]byte("abcd")) + " y", "x [secret] y"},
		{"base64 url raw", []string{tok}, "<" + base64.RawURLEncoding.EncodeToString([]byte(tok)) + ">", "<[secret]>"},
		{"base64 std", []string{tok}, b64([]byte(tok)), "[secret]"},
		{"query escape", []string{"p@ss w/rd+x"}, "?p=" + url.QueryEscape("p@ss w/rd+x") + "&q=1", "?p=[secret]&q=1"},
		{"path escape", []string{"p@ss w/rd+x"}, "/a/" + url.PathEscape("p@ss w/rd+x") + "/b", "/a/[secret]/b"},
		{"lower-case percent", []string{"p@ss w/rd"}, "/a/p@ss%20w%2frd/b", "/a/[secret]/b"},
		{"json html escaped", []string{tok}, `{"t":"ghp_Tok3n/with+odd\u003cchars\u003e\u0026\"quote"}`, `{"t":"[secret]"}`},
		{"json plain", []string{tok}, `{"t":"ghp_Tok3n/with+odd<chars>&\"quote"}`, `{"t":"[secret]"}`},
		{"json slash escaped", []string{tok}, `{"t":"ghp_Tok3n\/with+odd<chars>&\"quote"}`, `{"t":"[secret]"}`},
		{"json ascii", []string{"pässwörd"}, `{"t":"p\u00e4ssw\u00f6rd"}`, `{"t":"[secret]"}`},
		{"hex lower", []string{"abcd"}, "0x" + hex.EncodeToString([]byte("abcd")), "0x[secret]"},
		{"hex upper", []string{"abcd"}, "0x" + strings.ToUpper(hex.EncodeToString([]byte("abcd"))), "0x[secret]"},
		{"too short ignored", []string{"abc"}, "abc abc", "abc abc"},
		{"overlapping secrets merge", []string{"abcdef", "defghi"}, "xxabcdefghixx", "xx[secret]xx"},
		{"adjacent stay apart", []string{"abcdef"}, "abcdefabcdef", "[secret][secret]"},
		{"secret that is part of the marker", []string{"secret"}, "my secret", "my [redacted]"},
		{"secrets part of both markers", []string{"secret", "redact"}, "a secret, redacted b", "a [*], [*]ed b"},
		{"marker re-forms the secret", []string{"et]x"}, "0et]xx", "0[secret]"},
		{"marker re-forms it twice", []string{"t]t]"}, "t]t]t]", "[secret]"},
		{"base32", []string{"abcd"}, "k=MFRGGZA=", "k=[secret]"},
		{"base32 lower unpadded", []string{"abcd"}, "k=mfrggza;", "k=[secret];"},
		{"double URL-encoded", []string{"p@ss w/rd"}, "?r=" + url.QueryEscape("?p="+url.QueryEscape("p@ss w/rd")), "?r=%3Fp%3D[secret]"},
		{"base64 of the URL form", []string{"p@ss w/rd"}, b64([]byte(url.QueryEscape("p@ss w/rd"))), "[secret]"},
		{"base64 of the JSON form", []string{tok}, b64([]byte(strings.Trim(mustJSON(tok), `"`))), "[secret]"},
		{"base64 wrapped at 4 columns", []string{tok}, wrap(b64([]byte(tok)), 4, "\n"), "[secret]"},
		{"base64 wrapped CRLF", []string{tok}, "-----\r\n" + wrap(b64([]byte(tok)), 8, "\r\n") + "\r\n-----", "-----\r\n[secret]\r\n-----"},
		{"hex wrapped", []string{"s3cr3t-value"}, wrap(hex.EncodeToString([]byte("s3cr3t-value")), 10, "\n"), "[secret]"},
		{"empty text", []string{"abcdef"}, "", ""},
		{"at the very end", []string{"abcdef"}, "xabcdef", "x[secret]"},
		{"prefix only", []string{"abcdef"}, "xabcde", "xabcde"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New(tt.secrets...)
			if diff := cmp.Diff(tt.want, s.String(tt.in)); diff != "" {
				t.Errorf("String(%q) (-want +got):\n%s", tt.in, diff)
			}
			if diff := cmp.Diff(tt.want, string(s.Bytes([]byte(tt.in)))); diff != "" {
				t.Errorf("Bytes(%q) (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

// TestEmbeddedBase64 encodes a secret inside a longer document, at the three
// byte alignments, as an API that base64-encodes a whole JSON body would.
func TestEmbeddedBase64(t *testing.T) {
	s := New(tok)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
		for _, prefix := range []string{`{"t":"`, `{"tk":"`, `{"tok":"`} {
			doc := prefix + tok + `","n":1}`
			in := "body=" + enc.EncodeToString([]byte(doc))
			out := s.String(in)
			if !strings.Contains(out, Marker) {
				t.Errorf("alignment %d: %q: no marker in %q", len(prefix)%3, doc, out)
			}
			mid := middle(enc, []byte(prefix), []byte(tok), []byte(`","n":1}`))
			if outsideMarkers(out, mid) {
				t.Errorf("alignment %d: stable middle %q left in %q", len(prefix)%3, mid, out)
			}
		}
	}
}

func TestNilAndZero(t *testing.T) {
	var nilS *Scrubber
	var zero Scrubber
	for name, s := range map[string]*Scrubber{"nil": nilS, "zero": &zero, "no usable secret": New("", "ab")} {
		in := "ghp_secret"
		if got := s.String(in); got != in {
			t.Errorf("%s: String changed the text: %q", name, got)
		}
		b := []byte(in)
		if got := s.Bytes(b); &got[0] != &b[0] {
			t.Errorf("%s: Bytes copied the text", name)
		}
		raw := json.RawMessage(`{"a":"ghp_secret"}`)
		if got := s.JSON(raw); &got[0] != &raw[0] {
			t.Errorf("%s: JSON copied the text", name)
		}
		if s.Contains(in) || s.Len() != 0 {
			t.Errorf("%s: matches something", name)
		}
	}
}

func TestNoAllocWhenClean(t *testing.T) {
	s := New(tok, "another-secret-value")
	in := strings.Repeat("nothing to see here, move along. ", 100)
	b := []byte(in)
	allocs := testing.AllocsPerRun(100, func() {
		_ = s.String(in)
		_ = s.Bytes(b)
		_ = s.JSON(b)
	})
	if allocs != 0 {
		t.Errorf("clean text: %v allocations per run, want 0", allocs)
	}
}

func TestJSON(t *testing.T) {
	tests := []struct {
		name    string
		secrets []string
		in      string
		want    string
	}{
		{"string value", []string{"s3cr3t-value"}, `{"token":"s3cr3t-value","n":1}`, `{"token":"[secret]","n":1}`},
		{"inside a longer string", []string{"s3cr3t-value"}, `["Bearer s3cr3t-value ok"]`, `["Bearer [secret] ok"]`},
		{"key", []string{"s3cr3t-value"}, `{"s3cr3t-value":true}`, `{"[secret]":true}`},
		{"behind unicode escapes", []string{"s3cr3t-value"}, `{"t":"s3cr3t\u002dvalue"}`, `{"t":"[secret]"}`},
		{"escaped quote in secret", []string{tok}, `{"t":"ghp_Tok3n/with+odd<chars>&\"quote"}`, `{"t":"[secret]"}`},
		{"number", []string{"12345678"}, `{"pin":12345678,"x":2}`, `{"pin":"[secret]","x":2}`},
		{"inside a number", []string{"12345678"}, `[9123456789]`, `["[secret]"]`},
		{"base64 in a string", []string{tok}, `{"b":"` + base64.StdEncoding.EncodeToString([]byte(tok)) + `"}`, `{"b":"[secret]"}`},
		{"secret with a space", []string{"p@ss w/rd"}, `{"a":"x p@ss w/rd y","b":"p@ss%20w%2Frd"}`, `{"a":"x [secret] y","b":"[secret]"}`},
		{"across literal tokens", []string{"1234, 5678"}, `[1234, 5678]`, `"[secret]"`},
		{"backslash outside a string", []string{"s3cr3t-value"}, `[1,\s3cr3t-value]`, `[1,\[secret]]`},
		{"across tokens", []string{`a","b`}, `["xa","bx"]`, `"[secret]"`},
		{"escaped backslash before a quote", []string{"s3cr3t-value"}, `{"t":"x\\","u":"a\"s3cr3t-value"}`, `{"t":"x\\","u":"a\"[secret]"}`},
		{"escapes but no secret", []string{"s3cr3t-value"}, `{"t":"line\nbreak"}`, `{"t":"line\nbreak"}`},
		{"invalid json still scrubbed", []string{"s3cr3t-value"}, `{"t":s3cr3t-value`, `{"t":"[secret]"`},
		{"invalid string still scrubbed", []string{"s3cr3t-value"}, `["\\q s3cr3t-value"`, `["\\q [secret]"`},
		{"secret that is part of the marker", []string{"secret"}, `{"a":"secret"}`, `{"a":"[redacted]"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := New(tt.secrets...).JSON(json.RawMessage(tt.in))
			if diff := cmp.Diff(tt.want, string(got)); diff != "" {
				t.Errorf("JSON(%s) (-want +got):\n%s", tt.in, diff)
			}
			if json.Valid([]byte(tt.in)) && !json.Valid(got) {
				t.Errorf("JSON(%s) = %s: no longer valid JSON", tt.in, got)
			}
		})
	}
}

func TestForms(t *testing.T) {
	// "abcd" has no byte that URL, JSON or upper-case hex encodings change,
	// so those forms collapse into the ones below.
	want := []string{
		"abcd",
		"YWJjZA==", "YWJjZA", // base64, padded and not
		"YWJjZ", "FiY2", "hYmNk", // stable middles at alignments 0, 1, 2
		"61626364",
		"MFRGGZA=", "mfrggza=", "MFRGGZA", "mfrggza", // base32
	}
	if diff := cmp.Diff(want, Forms("abcd")); diff != "" {
		t.Errorf("Forms(abcd) (-want +got):\n%s", diff)
	}
	if got := Forms("abc"); got != nil {
		t.Errorf("Forms(abc) = %q, want nil", got)
	}
}

func mustJSON(v string) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// wrap breaks s into lines of n bytes joined by sep.
func wrap(s string, n int, sep string) string {
	var lines []string
	for len(s) > n {
		lines = append(lines, s[:n])
		s = s[n:]
	}
	return strings.Join(append(lines, s), sep)
}
