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
		// Issue 36: forms a model decodes at once.
		{"every byte percent-encoded, lower case", []string{"sk_live"}, "k=%73%6b%5f%6c%69%76%65&n=1", "k=[secret]&n=1"},
		{"every byte percent-encoded, upper case", []string{"sk_live"}, "k=%73%6B%5F%6C%69%76%65;", "k=[secret];"},
		{"some bytes percent-encoded, mixed case", []string{"sk_live"}, "k=s%6bx%5F%6cive", "k=s%6bx%5F%6cive"},
		{"some bytes percent-encoded", []string{"sk_live"}, "k=s%6b_%6Cive.", "k=[secret]."},
		{"\\u escapes in plain text", []string{"sk_live"}, `say \u0073\u006b\u005f\u006c\u0069\u0076\u0065 now`, "say [secret] now"},
		{"\\u escapes of some characters", []string{"sk_live"}, `s\u006b_live!`, "[secret]!"},
		{"\\x escapes", []string{"sk_live"}, `b'\x73\x6B\x5f\x6c\x69\x76\x65'`, "b'[secret]'"},
		{"\\u{} escapes", []string{"sk_live"}, `\u{73}\u{6b}_live`, "[secret]"},
		{"decimal character references", []string{"sk_live"}, "<p>&#115;&#107;&#95;&#108;&#105;&#118;&#101;</p>", "<p>[secret]</p>"},
		{"hex character references", []string{"sk_live"}, "<p>&#x73;&#X6B;_l&#x69;ve</p>", "<p>[secret]</p>"},
		{"named entities", []string{"a<b&c>d"}, "x a&lt;b&amp;c&gt;d y", "x [secret] y"},
		{"reversed", []string{"sk_live_123"}, "id 321_evil_ks.", "id [secret]."},
		{"hex of mixed case", []string{"sk_live"}, "736B5f6C697665", "[secret]"},
		{"hex glued to hex digits", []string{"sk_live"}, "abc736b5f6c697665", "abc[secret]"},
		{"base64 glued to letters", []string{"sk_live_123"}, "xyc2tfbGl2ZV8xMjM=", "xy[secret]"},
		{"base64 of hex", []string{"sk_live"}, base64.StdEncoding.EncodeToString([]byte("736b5f6c697665")), "[secret]"},
		{"hex of base64", []string{"sk_live"}, hex.EncodeToString([]byte(base64.StdEncoding.EncodeToString([]byte("sk_live")))), "[secret]"},
		{"base64 of the reversed value", []string{"sk_live"}, base64.StdEncoding.EncodeToString([]byte("evil_ks")), "[secret]"},
		{"percent-encoded JSON escapes", []string{"sk_live"}, "%5Cu0073k_live", "[secret]"},
		{"JSON escapes of HTML references", []string{"abcd"}, `"a\u0026#98;cd"`, `"[secret]"`},
		{"base32 embedded", []string{"sk_live_123"}, "X" + base32.StdEncoding.EncodeToString([]byte("..sk_live_123..")), "XFYX[secret]LRO"},
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
		"abcd", "dcba",
		"YWJjZA==", "YWJjZA", // base64, padded and not
		"%61%62%63%64",
		`\u0061\u0062\u0063\u0064`, `\x61\x62\x63\x64`, "&#97;&#98;&#99;&#100;", "&#x61;&#x62;&#x63;&#x64;",
		"61626364",
		"MFRGGZA=", "mfrggza=", "MFRGGZA", "mfrggza", // base32
		"JTYxJTYyJTYzJTY0", // base64 of the percent-encoded value
	}
	if diff := cmp.Diff(want, Forms("abcd")); diff != "" {
		t.Errorf("Forms(abcd) (-want +got):\n%s", diff)
	}
	if got := Forms("abc"); got != nil {
		t.Errorf("Forms(abc) = %q, want nil", got)
	}
	// Every form is scrubbed, of a value with bytes that every encoding
	// changes.
	s := New(tok)
	for _, f := range Forms(tok) {
		if got := s.String("<" + f + ">"); got != "<[secret]>" {
			t.Errorf("form %q: String gave %q", f, got)
		}
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

// TestBudget: a text whose views would hold more than the budget is
// withheld whole rather than read on; an ordinary large result stays within
// the budget and is left as it is.
func TestBudget(t *testing.T) {
	s := New("sk_live_4eC39HqLyjWDarjtT1zdp7dc")
	nested := strings.Repeat("nothing secret here ", 50)
	for range 3 { // base64 of base64 of …: each level decodes to the next
		nested = base64.StdEncoding.EncodeToString([]byte(nested))
	}
	if got := s.String(nested); got != nested {
		t.Fatalf("String changed a text without the secret, within the budget: %.40q…", got)
	}
	factor, floor := workFactor, workFloor
	workFactor, workFloor = 1, 0 // the views of nested hold ~3 times its length
	defer func() { workFactor, workFloor = factor, floor }()
	if got := s.String(nested); got != s.Marker() {
		t.Errorf("String(nested) over the budget = %.40q…, want the marker alone", got)
	}
	workFactor, workFloor = factor, floor
	clean := result1MB(false)
	f := getFinder(New(benchSecrets...), len(clean))
	defer f.put()
	if f.find(clean); f.over || len(f.spans) > 0 {
		t.Errorf("a clean 1 MB result: over the budget %v, %d spans", f.over, len(f.spans))
	}
}

func TestWhich(t *testing.T) {
	s := New("first-secret", "second-secret", "ab")
	got := s.Which("x " + hex.EncodeToString([]byte("second-secret")) + " and " + url.PathEscape("first-secret") + "; ab")
	if diff := cmp.Diff([]string{"first-secret", "second-secret"}, got); diff != "" {
		t.Errorf("Which (-want +got):\n%s", diff)
	}
	if got := s.Which("nothing here"); got != nil {
		t.Errorf("Which(clean) = %q", got)
	}
}
