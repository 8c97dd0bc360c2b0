package code

import (
	"errors"
	"strings"
	"testing"
)

func TestPrepare(t *testing.T) {
	tests := []struct {
		name    string
		src     string
		wantJS  []string // substrings
		notices int
	}{
		{"plain", "return await everything.echo({message: 'hi'})", []string{"return await everything.echo"}, 0},
		{"typescript", "const n: number = 1;\ninterface X { a: string }\nreturn n as number;", []string{"const n = 1;", "return n;"}, 0},
		{"fence", "```ts\nconst x: string = 'a';\nreturn x;\n```", []string{`const x = "a";`}, 1},
		{"export default function", "export default async function main() {\n  return 42;\n}", []string{"return await", "main()"}, 2},
		{"lone arrow", "async () => {\n  return 1;\n}", []string{"return await"}, 1},
		{"lone function", "async function run() { return 2 }", []string{"return await", "run()"}, 1},
		{"final expression", "const a = 1;\na + 1", []string{"return a + 1;"}, 1},
		{"final call", "const r = await memory.readGraph({});\nr.entities.length", []string{"return r.entities.length;"}, 1},
		{"no rewrite when returning", "const a = 1;\nreturn a;", []string{"return a;"}, 0},
		{"declaration last is not returned", "let a = 1;\nconst b = 2;", []string{"const b = 2;"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Prepare(tt.src)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.wantJS {
				if !strings.Contains(p.JS, w) {
					t.Errorf("JS %q does not contain %q", p.JS, w)
				}
			}
			if len(p.Notices) != tt.notices {
				t.Errorf("notices = %q, want %d", p.Notices, tt.notices)
			}
		})
	}
}

func TestSyntaxErrorLocation(t *testing.T) {
	tests := []struct {
		src       string
		line, col int
		lineText  string
	}{
		{"const a = 1;\nconst b = ;\nreturn a;", 2, 11, "const b = ;"},
		{"return (1 + ;", 1, 13, "return (1 + ;"},
		{"```js\nlet x = 1;\nlet y = ;\n```", 3, 9, "let y = ;"},
	}
	for _, tt := range tests {
		_, err := Prepare(tt.src)
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Fatalf("Prepare(%q) = %v, want a SyntaxError", tt.src, err)
		}
		if se.Line != tt.line || se.Column != tt.col || se.LineText != tt.lineText {
			t.Errorf("Prepare(%q): line %d col %d %q, want %d %d %q (%v)", tt.src, se.Line, se.Column, se.LineText, tt.line, tt.col, tt.lineText, se)
		}
		if !strings.Contains(se.Error(), "^") {
			t.Errorf("error %q does not point at the column", se)
		}
	}
}

func TestLimits(t *testing.T) {
	if _, err := Prepare(strings.Repeat("a", MaxBytes+1)); err == nil || !strings.Contains(err.Error(), "limit is 65536") {
		t.Errorf("65 KB: %v", err)
	}
	if _, err := Prepare("  \n "); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Errorf("empty: %v", err)
	}
}

func FuzzPrepare(f *testing.F) {
	for _, s := range []string{"return 1", "```\nx\n```", "export default () => 1", "a +", "const x: number = 1; x", "/*", "`${"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		p, err := Prepare(src)
		if err != nil {
			var se *SyntaxError
			if errors.As(err, &se) && (se.Line < 1 || se.Column < 1) {
				t.Fatalf("bad location %+v for %q", se, src)
			}
			return
		}
		if _, err := transform(p.JS); err != nil {
			t.Fatalf("prepared JS does not parse again: %v\n%s", err, p.JS)
		}
	})
}
