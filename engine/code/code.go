// Package code turns what the model sends to execute into plain JavaScript
// for the sandbox: the body of an async function, TypeScript annotations
// stripped (esbuild, loader TS), with a few forgiving rewrites, each noted.
//
// Rewrites, in order, each adding one line to Prepared.Notices:
//
//  1. A fenced code block (```js … ```): its body is taken.
//  2. `export default <function>`: the export is dropped.
//  3. A lone function (a declaration, a function expression or an arrow
//     function, and nothing else): it is called, and its result returned.
//  4. A final expression statement with no top-level `return` in the code:
//     it is returned ("return" is put before the last line when that line
//     alone is an expression).
//
// Syntax errors come back as *SyntaxError with the line and column in the
// model's own code and the offending line.
package code

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/evanw/esbuild/pkg/api"
)

// MaxBytes is the largest code accepted.
const MaxBytes = 64 << 10

// Prepared is code ready for the sandbox.
type Prepared struct {
	JS      string   // the body of an async function, plain JavaScript
	Notices []string // one line per forgiving rewrite
}

// SyntaxError locates a syntax error in the model's code.
type SyntaxError struct {
	Line     int // 1-based, in the code as sent
	Column   int // 1-based
	Message  string
	LineText string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("syntax error at line %d, column %d: %s\n  %s\n  %s^", e.Line, e.Column, e.Message, e.LineText, strings.Repeat(" ", max(0, e.Column-1)))
}

var (
	fenceRE    = regexp.MustCompile("(?s)^\\s*```[A-Za-z0-9_+-]*[ \\t]*\\n(.*?)\\n?```\\s*$")
	exportRE   = regexp.MustCompile(`(?m)^export\s+default\s+`)
	loneFuncRE = regexp.MustCompile(`^\s*(async\s+)?(function\b|\([^)]*\)\s*=>|[A-Za-z_$][\w$]*\s*=>)`)
	stmtRE     = regexp.MustCompile(`^(const|let|var|if|for|while|do|switch|try|return|throw|function|async\s+function|class|import|export|break|continue|\}|\)|\]|//|/\*|\*)`)
	topReturn  = regexp.MustCompile(`(?m)^return\b`)
)

// Prepare checks, rewrites and strips the code.
func Prepare(src string) (Prepared, error) {
	if len(src) > MaxBytes {
		return Prepared{}, fmt.Errorf("the code is %d bytes; the limit is %d (64 KB): send less code, or split the work across runs", len(src), MaxBytes)
	}
	if strings.TrimSpace(src) == "" {
		return Prepared{}, fmt.Errorf("the code is empty: send the body of an async function, e.g. return await everything.echo({message: \"hi\"})")
	}
	var p Prepared
	body, lineShift := src, 0
	if m := fenceRE.FindStringSubmatchIndex(src); m != nil {
		body = src[m[2]:m[3]]
		lineShift = strings.Count(src[:m[2]], "\n")
		p.Notices = append(p.Notices, "took the code out of its ``` fenced block")
	}
	if exportRE.MatchString(body) {
		body = exportRE.ReplaceAllString(body, "")
		p.Notices = append(p.Notices, "dropped `export default`: the code is the body of a function, not a module")
	}
	if loneFuncRE.MatchString(body) {
		candidate := "return await (\n" + body + "\n)();"
		if _, err := transform(candidate); err == nil {
			p.Notices = append(p.Notices, "called the lone function and returned its result")
			js, _ := transform(candidate)
			p.JS = js
			return p, nil
		}
	}
	if !topReturn.MatchString(body) {
		if candidate, ok := returnLast(body); ok {
			if js, err := transform(candidate); err == nil {
				p.Notices = append(p.Notices, "returned the value of the last expression")
				p.JS = js
				return p, nil
			}
		}
	}
	js, err := transform(body)
	if err != nil {
		if se, ok := err.(*SyntaxError); ok {
			se.Line += lineShift
			return Prepared{}, se
		}
		return Prepared{}, err
	}
	p.JS = js
	return p, nil
}

// returnLast puts "return" before the last line when that line alone is an
// expression statement.
func returnLast(body string) (string, bool) {
	lines := strings.Split(strings.TrimRight(body, " \t\n;"), "\n")
	last := len(lines) - 1
	for last >= 0 && strings.TrimSpace(lines[last]) == "" {
		last--
	}
	if last < 0 {
		return "", false
	}
	line := strings.TrimSpace(lines[last])
	if line == "" || stmtRE.MatchString(line) || strings.HasPrefix(lines[last], " ") || strings.HasPrefix(lines[last], "\t") {
		return "", false
	}
	// The line must be an expression on its own.
	if _, err := transform("return (\n" + strings.TrimSuffix(line, ";") + "\n);"); err != nil {
		return "", false
	}
	lines[last] = "return " + strings.TrimSuffix(line, ";") + ";"
	return strings.Join(lines[:last+1], "\n"), true
}

const (
	wrapOpen  = "(async () => {\n"
	wrapClose = "\n});\n"
)

// transform strips TypeScript from the body of an async function and
// returns the body as plain JavaScript.
func transform(body string) (string, error) {
	res := api.Transform(wrapOpen+body+wrapClose, api.TransformOptions{
		Loader:            api.LoaderTS,
		Target:            api.ESNext,
		Sourcefile:        "code.ts",
		LogLevel:          api.LogLevelSilent,
		MinifyWhitespace:  false,
		MinifySyntax:      false,
		MinifyIdentifiers: false,
	})
	if len(res.Errors) > 0 {
		m := res.Errors[0]
		se := &SyntaxError{Message: m.Text}
		if loc := m.Location; loc != nil {
			se.Line = loc.Line - 1 // the wrapper's first line
			se.Column = loc.Column + 1
			se.LineText = loc.LineText
			if se.Line < 1 {
				se.Line = 1
			}
			lines := strings.Split(body, "\n")
			if se.Line > len(lines) {
				se.Line, se.LineText = len(lines), lines[len(lines)-1]
				se.Column = len(se.LineText) + 1
			}
		}
		return "", se
	}
	out := string(res.Code)
	start := strings.Index(out, "{\n")
	end := strings.LastIndex(out, "}")
	if start < 0 || end < start {
		return "", fmt.Errorf("preparing the code: unexpected output from the TypeScript stripper")
	}
	return out[start+2 : end], nil
}
