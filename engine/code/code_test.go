package code

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestPrepare(t *testing.T) {
	tests := []struct {
		name    string
		src     string
		js      string
		notices int
		notice  string
	}{
		{"plain", "const x = await gh.get({ id: 1 });\nreturn x.title;", "const x = await gh.get({ id: 1 });\nreturn x.title;", 0, ""},
		{"typescript", "interface Issue { title: string }\nconst x: Issue = await gh.get({ id: 1 }) as Issue;\nreturn x.title as string;", "const x = await gh.get({ id: 1 });\nreturn x.title;", 0, ""},
		{"empty", "", "", 0, ""},
		{"fenced", "Here you go:\n```ts\nconst a: number = 1;\nreturn a;\n```\nDone.", "const a = 1;\nreturn a;", 1, "fenced code block"},
		{"export default function", "export default async function main() {\n  return 1;\n}", "async function main() {\n  return 1;\n}\nreturn await main();", 2, "called the default-exported function"},
		{"export default with helpers", "function helper() {\n  return 1;\n}\nexport default async function main() {\n  return helper();\n}", "function helper() {\n  return 1;\n}\nasync function main() {\n  return helper();\n}\nreturn await main();", 2, "called the default-exported function"},
		{"export default anonymous", "export default async function () {\n  return 1;\n}", "const __default = async function() {\n  return 1;\n};\nreturn await __default();", 2, "called the default-exported function"},
		{"export default value", "const r = 5;\nexport default r;", "const r = 5;\nreturn r;", 1, "removed `export default` (line 2)"},
		{"lone declaration", "async function run() {\n  const r = await gh.get({});\n  return r;\n}", "async function run() {\n  const r = await gh.get({});\n  return r;\n}\nreturn await run();", 1, "called run()"},
		{"lone arrow", "async () => {\n  return 2;\n}", "return await (async () => {\n  return 2;\n})();", 1, "called the function expression"},
		{"export default arrow", "export default async () => 3", "const __default = async () => 3;\nreturn await __default();", 2, "called the default-exported function"},
		{"final expression", "const a = 1;\na + 1", "const a = 1;\nreturn a + 1;", 1, "returned the value of the last expression"},
		{"final await", "const r = await gh.get({});\nawait gh.list({ n: r.n })", "const r = await gh.get({});\nreturn await gh.list({ n: r.n });", 1, "returned the value"},
		{"final multiline expression", "[1, 2].map((x) => {\n  return x * 2;\n})", "return [1, 2].map((x) => {\n  return x * 2;\n});", 1, "returned the value"},
		{"final object", "({ a: 1 })", "return ({ a: 1 });", 1, "returned the value"},
		{"final if is not an expression", "if (true) {\n  console.log(1);\n}", "if (true) {\n  console.log(1);\n}", 0, ""},
		{"final call with a declaration before", "function f() {\n  return 1;\n}\nf()", "function f() {\n  return 1;\n}\nreturn f();", 1, "returned the value"},
		{"multiline template", "const msg = `Hello\nthere ${1 + 1}`;\nmsg", "const msg = \"Hello\\nthere \".concat(1 + 1);\nreturn msg;", 1, "returned the value"},
		{"final multiline template", "`a\nb`", "return \"a\\nb\";", 1, "returned the value"},
		{"tagged template", "String.raw`a\n${1}`", "var __freeze = Object.freeze;\nvar __defProp = Object.defineProperty;\nvar __template = (cooked, raw) => __freeze(__defProp(cooked, \"raw\", { value: __freeze(raw || cooked.slice()) }));\nvar _a;\nreturn String.raw(_a || (_a = __template([\"a\\n\", \"\"])), 1);", 1, "returned the value"},
		{"unicode kept", `return "héllo ✓";`, `return "héllo ✓";`, 0, ""},
		{"plain JavaScript is sent as it is", "// list them\nconst xs = await gh.list({});   // all\nreturn xs.map((x) => x.id)", "// list them\nconst xs = await gh.list({});   // all\nreturn xs.map((x) => x.id)", 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Prepare(tt.src)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.js, p.JS); diff != "" {
				t.Errorf("JS (-want +got):\n%s", diff)
			}
			if len(p.Notices) != tt.notices {
				t.Errorf("notices = %q, want %d", p.Notices, tt.notices)
			}
			if tt.notice != "" && !strings.Contains(strings.Join(p.Notices, "\n"), tt.notice) {
				t.Errorf("notices = %q, want one containing %q", p.Notices, tt.notice)
			}
		})
	}
}

// TestPlainJS: code that is plain JavaScript skips esbuild, and only when
// esbuild's path would have sent the same program: no TypeScript stripped,
// no rewrite, no error.
func TestPlainJS(t *testing.T) {
	tests := []struct {
		src   string
		plain bool
	}{
		{"return 1", true},
		{"return 1;", true},
		{"return 1;\n// done\n", true},
		{"const r = await gh.get({ id: 1 });\nreturn r.title;", true},
		{"let n = 0;\nfor (let i = 0; i < 10; i++) { n += i }\nreturn n", true},
		{"const xs = await Promise.all([1, 2].map((i) => gh.get({ i })));\nreturn xs.filter((x) => x.ok)", true},
		{"if (a) {\n  return 1;\n}", true},
		{"try { return await gh.get({}) } catch (e) { return e.code }", true},
		{"class A { x = 1 }\nreturn new A().x", true},
		{"const s = `a ${1} b`;\nreturn s", true},
		{"return await import('qjs:std')", true}, // the sandbox refuses import() either way

		{"", false},
		{"1 + 1", false},            // returned by rewriteEnd
		{"await gh.get({})", false}, // returned by rewriteEnd
		{"async function main() { return 1 }", false}, // called by rewriteEnd
		{"async () => 1", false},
		{"return 1;;", false},
		{"return f<string>(x)", false},            // a TypeScript generic call
		{"const a: number = 1;\nreturn a", false}, // TypeScript
		{"return x as string", false},             // TypeScript
		{"return 1 +", false},                     // a syntax error, for esbuild to report
		{"import fs from 'fs';\nreturn 1", false}, // a module
		{"return a < b && c > d", false},          // '<' and '>': esbuild decides
	}
	for _, tt := range tests {
		if got := plainJS(tt.src); got != tt.plain {
			t.Errorf("plainJS(%q) = %v, want %v", tt.src, got, tt.plain)
		}
		if !tt.plain {
			continue
		}
		// esbuild's path would have sent the same program, unrewritten.
		js, err := strip(tt.src)
		if err != nil {
			t.Errorf("%q: plain, but esbuild fails: %v", tt.src, err)
			continue
		}
		if _, notice := rewriteEnd(js); notice != "" {
			t.Errorf("%q: plain, but esbuild's path rewrites it: %s", tt.src, notice)
		}
		if p, err := Prepare(tt.src); err != nil || p.JS != tt.src || len(p.Notices) != 0 {
			t.Errorf("Prepare(%q) = %q %q %v; want the code as sent", tt.src, p.JS, p.Notices, err)
		}
	}
}

// TestPrepareOutputParses feeds tricky shapes through Prepare and checks that
// the output is always valid JavaScript.
func TestPrepareOutputParses(t *testing.T) {
	for _, src := range []string{
		"const s = `a\nb`;\ns",
		"label:\nfor (;;) { break label }",
		"x = 5",
		"/* block\ncomment */\n1",
		"class A {}\nnew A()",
		"for await (const x of []) {}",
		"(() => 1)()",
		"async () => 1;\nasync () => 2",
		"function a() {}\nfunction b() {}",
		"const re = /`/;\nre.source",
		"switch (1) {\n  case 1:\n    break;\n}",
		"try { 1 } finally { 2 }",
	} {
		p, err := Prepare(src)
		if err != nil {
			t.Errorf("%q: %v", src, err)
			continue
		}
		if !parses(p.JS) {
			t.Errorf("%q: output does not parse:\n%s", src, p.JS)
		}
	}
}

func TestPrepareSyntaxErrors(t *testing.T) {
	tests := []struct {
		name      string
		src       string
		line, col int
		lineText  string
		msg       string
	}{
		{"first line", "const = 1;", 1, 7, "const = 1;", "Expected identifier"},
		{"later line", "const a = 1;\nconst b = a +;\nreturn b;", 2, 14, "const b = a +;", "Unexpected"},
		{"typescript line", "let a: number = 1;\nlet b: = 2;", 2, 8, "let b: = 2;", "Unexpected"},
		{"inside fence", "Try this:\n```js\nconst a = 1;\nconst = 2;\n```", 4, 7, "const = 2;", "Expected identifier"},
		{"after export default", "export default async function main() {\n  return 1 +;\n}", 2, 13, "  return 1 +;", "Unexpected"},
		{"export default line", "export default async function () { retur 1 }", 1, 42, "export default async function () { retur 1 }", "Expected"},
		{"export default value line", "export default (1 +);", 1, 20, "export default (1 +);", "Unexpected"},
		{"unclosed", "if (a) {\n  return 1;", 2, 12, "  return 1;", "not closed"},
		{"static import", "import fs from 'fs';\nreturn 1;", 1, 8, "import fs from 'fs';", "modules are not available"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Prepare(tt.src)
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("err = %v, want *SyntaxError", err)
			}
			if se.Line != tt.line || se.Column != tt.col || se.LineText != tt.lineText || !strings.Contains(se.Message, tt.msg) {
				t.Errorf("got line %d col %d text %q msg %q; want %d %d %q containing %q", se.Line, se.Column, se.LineText, se.Message, tt.line, tt.col, tt.lineText, tt.msg)
			}
			if !strings.Contains(se.Error(), "syntax error at line") {
				t.Errorf("Error() = %q", se.Error())
			}
		})
	}
}

// TestPrepareClosesWrapper: code that closes the function it is the body of
// and goes on is refused, rather than run outside the function.
func TestPrepareClosesWrapper(t *testing.T) {
	for _, src := range []string{
		"}); console.log(1); if (0) (async function () {",
		"return 1\n});\nglobalThis.x = 1;\n(async function () {",
		"```ts\nconst a: number = 1;\n}); new Promise(() => {}).then(function () {\n```",
	} {
		_, err := Prepare(src)
		var se *SyntaxError
		if !errors.As(err, &se) || !strings.Contains(se.Error(), "closes the function it runs in") {
			t.Errorf("Prepare(%q) = %v, want the wrapper-closing error", src, err)
		}
		if derr := Diagnose(src); derr == nil || derr.Error() != err.Error() {
			t.Errorf("Diagnose(%q) = %v, want %v", src, derr, err)
		}
	}
	// Braces inside strings, templates, regexes and comments are not code.
	for _, src := range []string{
		"const s = \"})\";\nreturn s",
		"const t = `a\n})\nb`;\nreturn t",
		"const r = /}\\)/;\nreturn r.source",
		"// })\nreturn 1",
		"const a: string = \"})\";\nreturn `${a}\n}`",
	} {
		if _, err := Prepare(src); err != nil {
			t.Errorf("Prepare(%q) = %v", src, err)
		}
	}
}

// TestDiagnoseSeesTheRewrites: Diagnose reports on the code after the same
// rewrites Prepare made (fence, export default), at lines of the code as sent.
func TestDiagnoseSeesTheRewrites(t *testing.T) {
	src := "Here:\n```js\nexport default 1;\nif (0)\n```"
	var se *SyntaxError
	if err := Diagnose(src); !errors.As(err, &se) || se.Line != 4 || !strings.Contains(se.Message, "ended early") {
		t.Errorf("Diagnose = %v, want esbuild's error at line 4 of the message", err)
	}
}

func TestPrepareSize(t *testing.T) {
	_, err := Prepare(strings.Repeat("x", MaxBytes+1))
	var se *SizeError
	if !errors.As(err, &se) || se.Size != MaxBytes+1 || se.Limit != MaxBytes {
		t.Fatalf("err = %v, want *SizeError", err)
	}
	if _, err := Prepare("return 1;" + strings.Repeat(" ", MaxBytes-9)); err != nil {
		t.Errorf("exactly %d bytes: %v", MaxBytes, err)
	}
}

// BenchmarkPrepare is TypeScript ending in an expression (esbuild strips the
// types, then checks the rewrite), new code every time.
func BenchmarkPrepare(b *testing.B) {
	src := "interface Issue { title: string }\nconst issues: Issue[] = await github.search_issues({ q: 'is:open' });\nissues.map(i => i.title)"
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		if _, err := Prepare(src + " // " + strconv.Itoa(i)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPrepareAgain is the same TypeScript again, as a resume sends it.
func BenchmarkPrepareAgain(b *testing.B) {
	src := "interface Issue { title: string }\nconst issues: Issue[] = await github.search_issues({ q: 'is:open' });\nissues.map(i => i.title)"
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Prepare(src); err != nil {
			b.Fatal(err)
		}
	}
}

// TestPrepareRemembers: the same code gives the same result from memory,
// callers cannot change what is remembered, and old entries make way.
func TestPrepareRemembers(t *testing.T) {
	src := "```ts\nconst a: number = 1;\na\n```"
	first, err := Prepare(src)
	if err != nil {
		t.Fatal(err)
	}
	first.Notices[0] = "changed by the caller"
	again, err := Prepare(src)
	if err != nil {
		t.Fatal(err)
	}
	if again.JS != "const a = 1;\nreturn a;" || len(again.Notices) != 2 || again.Notices[0] == "changed by the caller" {
		t.Fatalf("again = %+v", again)
	}
	for i := range 2 * len(recent.ring) {
		if _, err := Prepare("return " + strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok := recent.get(src); ok {
		t.Error("an entry older than the last 64 is still remembered")
	}
	if n := len(recent.m); n > len(recent.ring) {
		t.Errorf("%d entries remembered, want at most %d", n, len(recent.ring))
	}
}

// BenchmarkPreparePlain is plain JavaScript, which skips esbuild.
func BenchmarkPreparePlain(b *testing.B) {
	src := "const issues = await github.search_issues({ q: 'is:open' });\nreturn issues.map(i => i.title); // "
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		if p, err := Prepare(src + strconv.Itoa(i)); err != nil || !p.Plain {
			b.Fatal(p, err)
		}
	}
}
