package visible

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestEscape(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string // Escape
		line string // Line
	}{
		{"plain text", "Reads your balance.", "Reads your balance.", "Reads your balance."},
		{"letters beyond ASCII", "héllo wörld — 日本語 👍", "héllo wörld — 日本語 👍", "héllo wörld — 日本語 👍"},
		{"newline and tab stay, but not in a line", "a\n\tb", "a\n\tb", `a\n\tb`},
		{"CSI: cursor up, erase line, hide", "x\x1b[1A\x1b[2K\x1b[8m", `x\u001b[1A\u001b[2K\u001b[8m`, `x\u001b[1A\u001b[2K\u001b[8m`},
		{"OSC title ended by BEL", "\x1b]0;pwned\a", `\u001b]0;pwned\u0007`, `\u001b]0;pwned\u0007`},
		{"OSC 52 clipboard ended by ST", "\x1b]52;c;ZWNobyBoaQ==\x1b\\", `\u001b]52;c;ZWNobyBoaQ==\u001b\`, `\u001b]52;c;ZWNobyBoaQ==\u001b\`},
		{"CR, BS, FF, NUL, VT", "ok\rno\bx\fy\x00z\vw", `ok\rno\bx\fy\u0000z\u000bw`, `ok\rno\bx\fy\u0000z\u000bw`},
		{"DEL", "a\x7fb", `a\u007fb`, `a\u007fb`},
		{"C1 controls, CSI and NEL", "a\u009b2Jb\u0085c\u0080", `a\u009b2Jb\u0085c\u0080`, `a\u009b2Jb\u0085c\u0080`},
		{"bidi override", "/tmp/\u202egnp.sh", `/tmp/\u202egnp.sh`, `/tmp/\u202egnp.sh`},
		{"bidi isolates", "\u2066a\u2067b\u2068c\u2069", `\u2066a\u2067b\u2068c\u2069`, `\u2066a\u2067b\u2068c\u2069`},
		{"zero-width, soft hyphen, BOM", "a\u200bb\u00adc\ufeff", `a\u200bb\u00adc\ufeff`, `a\u200bb\u00adc\ufeff`},
		{"a tag character, as a surrogate pair", "ok\U000E0041", `ok\udb40\udc41`, `ok\udb40\udc41`},
		{"bytes that are not UTF-8", "a\x9b2Jb\xe2\x80", `a\x9b2Jb\xe2\x80`, `a\x9b2Jb\xe2\x80`},
		{"U+FFFD itself shows", "a\ufffdb", "a\ufffdb", "a\ufffdb"},
		{"a backslash is left alone", `C:\new`, `C:\new`, `C:\new`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, string(Escape([]byte(tt.in)))); diff != "" {
				t.Errorf("Escape(%q) (-want +got):\n%s", tt.in, diff)
			}
			if diff := cmp.Diff(tt.line, Line(tt.in)); diff != "" {
				t.Errorf("Line(%q) (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

// Every escape is one JSON reads as the character it replaced: JSON text
// keeps its values, and has no hidden character left.
func TestEscapeKeepsJSON(t *testing.T) {
	v := map[string]string{"s": "\x1b[2J\r\a\b\f\x7f\u0085\u009b\u202e\u2066\u200b\u00ad\U000E0041 \n\t ok é"}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	got := Escape(b)
	if i := bytes.IndexFunc(got, Hidden); i >= 0 {
		t.Fatalf("a hidden character at %d: %q", i, got)
	}
	var back map[string]string
	if err := json.Unmarshal(got, &back); err != nil {
		t.Fatalf("not JSON: %v: %s", err, got)
	}
	if diff := cmp.Diff(v, back); diff != "" {
		t.Errorf("the value changed (-want +got):\n%s", diff)
	}
}

// encoding/json escapes C0 controls but writes DEL, C1 controls and format
// characters as they are: the CLI's JSON output needs Escape too.
func TestJSONLeavesSomeRaw(t *testing.T) {
	b, _ := json.Marshal("\x1b\r\x7f\u009b\u202e")
	if diff := cmp.Diff("\"\\u001b\\r\x7f\u009b\u202e\"", string(b)); diff != "" {
		t.Errorf("encoding/json changed (-want +got):\n%s", diff)
	}
}

// A Writer escapes text however it is cut into writes: a character split
// across two writes is held until its end arrives.
func TestWriterSplits(t *testing.T) {
	in := "LOG\x1b[2J\r\u202e日本\U000E0041 é\n\tend\xff"
	want := `LOG\u001b[2J\r\u202e日本\udb40\udc41 é` + "\n\tend" + `\xff`
	for i := 0; i <= len(in); i++ {
		for j := i; j <= len(in); j++ {
			var out bytes.Buffer
			w := NewWriter(&out)
			for _, part := range []string{in[:i], in[i:j], in[j:]} {
				n, err := w.Write([]byte(part))
				if err != nil || n != len(part) {
					t.Fatalf("Write(%q) = %d, %v", part, n, err)
				}
			}
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			if out.String() != want {
				t.Fatalf("cut at %d and %d:\n got %q\nwant %q", i, j, out.String(), want)
			}
		}
	}
}

// A write that ends inside a character writes what came before it at once
// (a prompt shows), and Flush writes the rest as bytes.
func TestWriterFlush(t *testing.T) {
	var out bytes.Buffer
	w := NewWriter(&out)
	w.Write([]byte("answer: \xe2\x80"))
	if diff := cmp.Diff("answer: ", out.String()); diff != "" {
		t.Errorf("before Flush (-want +got):\n%s", diff)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(`answer: \xe2\x80`, out.String()); diff != "" {
		t.Errorf("after Flush (-want +got):\n%s", diff)
	}
	w.Write([]byte(strings.Repeat("x", 3)))
	if diff := cmp.Diff(`answer: \xe2\x80xxx`, out.String()); diff != "" {
		t.Errorf("after Flush (-want +got):\n%s", diff)
	}
}
