package code

import (
	"strings"
	"testing"

	"github.com/tdewolff/parse/v2"
	"github.com/tdewolff/parse/v2/js"
)

// FuzzPrepare: Prepare never panics; it returns JavaScript or a located
// error; and valid plain JavaScript skips esbuild only when esbuild's path
// would have sent the same program (nothing is rewritten).
func FuzzPrepare(f *testing.F) {
	for _, s := range []string{
		"return 1", "1 + 1", "const a: number = 1;\nreturn a", "return f<T>(x)",
		"```js\nreturn 2\n```", "export default async () => 3", "if (a) {\n  return 1;\n}",
		"return `a ${b}`", "async function main() { return 1 }", "return 1 +", "/* c */ return /re/g.test(x) // d",
		"label: for (;;) break label;\nreturn 1", "return a ? b : c", "return x?.y ?? z", "return #x in y",
		"}); console.log(1); if (0) (async function () {", "const s = `})\n`; return s",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		p, err := Prepare(src)
		if err != nil {
			se, ok := err.(*SyntaxError)
			closes := ok && se.Message == errClosesWrapper().Message
			if ok && (se.Line < 1 || se.Column < 1) && !closes {
				t.Fatalf("syntax error without a location: %+v", se)
			}
			if closes && !strings.Contains(src, "```") && !exportDefault.MatchString(src) {
				// A body that parses as statements closes nothing.
				if _, perr := js.Parse(parse.NewInputString(src), js.Options{Inline: true}); perr == nil {
					t.Fatalf("%q parses as a function body but was refused as closing it", src)
				}
			}
			return
		}
		if !plainJS(src) || strings.Contains(src, "```") || exportDefault.MatchString(src) {
			return
		}
		if p.JS != src {
			t.Fatalf("plain JavaScript changed: %q -> %q", src, p.JS)
		}
		js, err := strip(src)
		if err != nil {
			// Invalid code this parser let through: QuickJS refuses it
			// before anything runs, and Diagnose explains.
			if Diagnose(src) == nil {
				t.Fatalf("esbuild rejects %q but Diagnose finds nothing", src)
			}
			return
		}
		if _, notice := rewriteEnd(js); notice != "" {
			t.Fatalf("plainJS(%q) but esbuild's path rewrites it: %s", src, notice)
		}
	})
}
