// Package code turns the code a model sends to execute into plain JavaScript
// for the sandbox.
//
//	p, err := code.Prepare(src)
//	// p.JS: the body of an async function, TypeScript stripped (esbuild).
//	// p.Notices: one line per forgiving rewrite applied.
//	// err: *SizeError (over MaxBytes) or *SyntaxError (line and column in src).
//
// Forgiving rewrites, each adding one notice: take the body of a fenced code
// block, unwrap `export default`, call a lone function expression or
// declaration, and `return` a final expression statement.
package code

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/evanw/esbuild/pkg/api"
	"github.com/tdewolff/parse/v2"
	"github.com/tdewolff/parse/v2/js"
)

// MaxBytes is the largest code accepted.
const MaxBytes = 64 << 10

// Prepared is code ready for the sandbox.
type Prepared struct {
	JS      string   // body of an async function, plain JavaScript
	Notices []string // one line per rewrite applied
	// Plain reports that the code went on as it was sent, without esbuild:
	// when the sandbox cannot compile it, Diagnose has the better message.
	Plain bool
}

// SizeError reports code over MaxBytes.
type SizeError struct{ Size, Limit int }

func (e *SizeError) Error() string {
	return fmt.Sprintf("the code is %d bytes, over the limit of %d bytes: send less code and keep data in tool calls rather than in the source", e.Size, e.Limit)
}

// SyntaxError locates a syntax error in the model's original code.
type SyntaxError struct {
	Line, Column int    // 1-based, in the code as sent
	Message      string // what is wrong (esbuild's words, plus a hint for known cases)
	LineText     string // the offending line, as sent
}

func (e *SyntaxError) Error() string {
	if e.Line == 0 { // no place in the code to show (see errClosesWrapper)
		return "syntax error: " + e.Message
	}
	caret := strings.Repeat(" ", max(0, e.Column-1)) + "^"
	return fmt.Sprintf("syntax error at line %d, column %d: %s\n  %d | %s\n  %s | %s",
		e.Line, e.Column, e.Message, e.Line, e.LineText, strings.Repeat(" ", len(fmt.Sprint(e.Line))), caret)
}

const wrapperPrefix = "(async function () {"

var (
	fence         = regexp.MustCompile("(?s)```[A-Za-z0-9_+-]*[^\n]*\n(.*?)\n?```")
	exportDefault = regexp.MustCompile(`(?m)^export\s+default\s+`)
	statementKw   = regexp.MustCompile(`^(return|const|let|var|if|for|while|do|switch|try|throw|function|async\s+function|class|break|continue|debugger|import|export|[A-Za-z_$][\w$]*\s*:[^:])\b?`)
	loneFunction  = regexp.MustCompile(`^(\(\s*)?(async\s+)?(function\b|\([^()]*\)\s*=>|[A-Za-z_$][\w$]*\s*=>)`)
	declaredFunc  = regexp.MustCompile(`^(async\s+)?function\s*\*?\s*([A-Za-z_$][\w$]*)\s*\(`)
)

// Prepare checks the size, applies the forgiving rewrites, strips TypeScript
// and returns the body of an async function as plain JavaScript. The last
// results are remembered: a resume, or a model sending the same code again,
// does not pay for esbuild twice.
func Prepare(src string) (Prepared, error) {
	if len(src) > MaxBytes {
		return Prepared{}, &SizeError{Size: len(src), Limit: MaxBytes}
	}
	if p, ok := recent.get(src); ok {
		return p, nil
	}
	p, err := prepareNew(src, true)
	if err == nil {
		recent.put(src, p)
	}
	return p, err
}

// recent remembers the last Prepare results (the code as the key).
var recent = &memo{m: map[string]Prepared{}}

type memo struct {
	mu   sync.Mutex
	m    map[string]Prepared
	ring [64]string // keys, oldest replaced first
	next int
}

func (c *memo) get(src string) (Prepared, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.m[src]
	p.Notices = slices.Clone(p.Notices)
	return p, ok
}

func (c *memo) put(src string, p Prepared) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[src]; ok {
		return
	}
	delete(c.m, c.ring[c.next])
	c.ring[c.next] = src
	c.next = (c.next + 1) % len(c.ring)
	p.Notices = slices.Clone(p.Notices)
	c.m[src] = p
}

// prepareNew applies the rewrites at the start of the code (fence, export
// default), then sends plain JavaScript on as it is when plain allows, and
// anything else through esbuild.
func prepareNew(src string, plain bool) (Prepared, error) {
	var p Prepared
	orig := src
	lineOffset := 0 // lines of orig before src's first line
	if m := fence.FindStringSubmatchIndex(src); m != nil {
		lineOffset = strings.Count(src[:m[2]], "\n")
		src = src[m[2]:m[3]]
		p.Notices = append(p.Notices, "took the code from the fenced code block; send plain code next time")
	}
	exportLine, exportShift, callAfter := 0, 0, ""
	if m := exportDefault.FindStringIndex(src); m != nil {
		exportLine = strings.Count(src[:m[0]], "\n") + 1
		rest := src[m[1]:]
		replacement := ""
		switch fn := declaredFunc.FindStringSubmatch(rest); {
		case fn != nil:
			callAfter = fn[2]
		case loneFunction.MatchString(rest):
			replacement, callAfter = "const __default = ", "__default"
		default:
			replacement = "return "
		}
		exportShift = (m[1] - m[0]) - len(replacement)
		src = src[:m[0]] + replacement + rest
		p.Notices = append(p.Notices, fmt.Sprintf("removed `export default` (line %d): the code is the body of an async function", exportLine+lineOffset))
	}

	if plain && callAfter == "" && plainJS(src) {
		p.JS, p.Plain = src, true
		return p, nil
	}
	js, err := strip(src)
	if err != nil {
		if se, ok := err.(*SyntaxError); ok && se.Line > 0 {
			if se.Line == exportLine && se.Column > 1 {
				se.Column += exportShift
			}
			se.Line += lineOffset
			lines := strings.Split(orig, "\n")
			if se.Line >= 1 && se.Line <= len(lines) {
				se.LineText = lines[se.Line-1]
			}
			if t := strings.TrimSpace(se.LineText); strings.HasPrefix(t, "import ") || strings.HasPrefix(t, "export ") || strings.HasPrefix(t, "require(") {
				se.Message += " (modules are not available: the code is the body of an async function, and tools are globals such as github.search_issues)"
			}
		}
		return Prepared{}, err
	}
	if callAfter != "" {
		js += "\nreturn await " + callAfter + "();"
		p.Notices = append(p.Notices, "called the default-exported function")
	} else if rewritten, notice := rewriteEnd(js); notice != "" && parses(rewritten) {
		js = rewritten
		p.Notices = append(p.Notices, notice)
	}
	p.JS = js
	return p, nil
}

// Diagnose runs esbuild over code that Prepare let through as plain and the
// sandbox could not compile, for esbuild's located *SyntaxError (nil when
// esbuild accepts the code).
func Diagnose(src string) error {
	if len(src) > MaxBytes {
		return &SizeError{Size: len(src), Limit: MaxBytes}
	}
	_, err := prepareNew(src, false)
	return err
}

// plainJS reports whether body can go to the sandbox as it is, skipping
// esbuild (0.3–0.7 ms, most of an execute of short code): it parses as the
// body of an async function in plain JavaScript (so there is no TypeScript to
// strip), it cannot be a TypeScript generic call (`f<T>(x)` is also
// JavaScript, with another meaning), and its last statement is not one
// rewriteEnd would change (an expression or a function declaration).
// Anything else takes esbuild's path. This parser is laxer than esbuild and
// QuickJS (it takes `if (0)` at the end of input): QuickJS compiles the code
// before any of it runs, and Diagnose then explains what it rejected.
func plainJS(body string) bool {
	if strings.Contains(body, "<") && strings.Count(body, ">") > strings.Count(body, "=>") {
		return false
	}
	ast, err := js.Parse(parse.NewInputString(body), js.Options{Inline: true})
	if err != nil {
		return false
	}
	list := ast.BlockStmt.List
	for len(list) > 0 {
		if _, ok := list[len(list)-1].(*js.Comment); !ok {
			break
		}
		list = list[:len(list)-1]
	}
	if len(list) == 0 {
		return false
	}
	switch list[len(list)-1].(type) {
	case *js.ExprStmt, *js.FuncDecl, *js.EmptyStmt:
		return false
	}
	return true
}

// strip runs esbuild over the wrapped body and returns the body, dedented.
// Template literals are lowered to plain strings so that every line of the
// output that starts at column 0 starts a statement (rewriteEnd relies on it);
// helpers esbuild adds for that (tagged templates) move into the body.
func strip(body string) (string, error) {
	r := api.Transform(wrapperPrefix+body+"\n})", api.TransformOptions{
		Loader:        api.LoaderTS,
		Charset:       api.CharsetUTF8,
		LegalComments: api.LegalCommentsNone,
		Supported:     map[string]bool{"template-literal": false},
	})
	if len(r.Errors) > 0 {
		e := syntaxError(r.Errors[0])
		lines := strings.Split(body, "\n")
		if e.Line > len(lines) { // in the wrapper's closing line: the body ended early
			e.Line = len(lines)
			e.Column = len(lines[e.Line-1]) + 1
			e.Message = "the code ended early: a bracket, brace, parenthesis or string is not closed"
		}
		return "", e
	}
	out := strings.TrimSuffix(string(r.Code), "\n")
	const open = "(async function() {\n"
	start := strings.Index(out, open)
	end := strings.LastIndex(out, "\n});")
	if start < 0 || end < start+len(open) {
		return strings.TrimSpace(out[:max(0, start)]), nil // empty body
	}
	helpers := out[:start]
	lines := strings.Split(out[start+len(open):end], "\n")
	for i, l := range lines {
		// esbuild indents everything inside the function; a line that is
		// not indented was written after the function closed.
		if l != "" && !strings.HasPrefix(l, "  ") {
			return "", errClosesWrapper()
		}
		lines[i] = strings.TrimPrefix(l, "  ")
	}
	return helpers + strings.Join(lines, "\n"), nil
}

// errClosesWrapper is code with a `}` that closes the async function it is
// the body of, followed by more code, which would then run outside it. Where
// the stray `}` is cannot be told from esbuild's output, so it has no line.
func errClosesWrapper() *SyntaxError {
	return &SyntaxError{Message: "the code closes the function it runs in: a `}` has no matching `{` before it, and code follows it (the code is the body of an async function); remove the extra closing bracket"}
}

func syntaxError(m api.Message) *SyntaxError {
	e := &SyntaxError{Line: 1, Column: 1, Message: m.Text}
	if m.Location != nil {
		e.Line = m.Location.Line
		e.Column = m.Location.Column + 1
		if e.Line == 1 {
			e.Column = max(1, e.Column-len(wrapperPrefix))
		}
	}
	return e
}

// parses reports whether a rewritten body is still valid JavaScript; a
// rewrite that is not is dropped rather than sent to the sandbox.
func parses(body string) bool {
	r := api.Transform(wrapperPrefix+body+"\n})", api.TransformOptions{Loader: api.LoaderJS})
	return len(r.Errors) == 0
}

// rewriteEnd calls a lone function and returns a final expression. js is
// esbuild output, one top-level statement starting on an unindented line.
func rewriteEnd(js string) (string, string) {
	lines := strings.Split(js, "\n")
	starts := []int{}
	for i, l := range lines {
		if l == "" || l[0] == ' ' || l[0] == '}' || l[0] == ')' || l[0] == ']' || strings.HasPrefix(l, "//") {
			continue
		}
		starts = append(starts, i)
	}
	if len(starts) == 0 {
		return js, ""
	}
	lastStart := starts[len(starts)-1]
	last := strings.Join(lines[lastStart:], "\n")
	head := strings.Join(lines[:lastStart], "\n")
	if head != "" {
		head += "\n"
	}
	if len(starts) == 1 {
		if m := declaredFunc.FindStringSubmatch(last); m != nil {
			return js + "\nreturn await " + m[2] + "();", fmt.Sprintf("called %s(), which the code declared but never called", m[2])
		}
		if loneFunction.MatchString(last) {
			expr := strings.TrimSuffix(strings.TrimSpace(last), ";")
			return head + "return await (" + expr + ")();", "called the function expression, which the code defined but never called"
		}
	}
	if statementKw.MatchString(last) || strings.HasPrefix(last, "{") || strings.HasPrefix(last, ";") {
		return js, ""
	}
	return head + "return " + last, "returned the value of the last expression; write `return` explicitly next time"
}
