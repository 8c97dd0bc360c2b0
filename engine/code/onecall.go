package code

import (
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// OneCall reads code that is one tool call whose value it returns,
//
//	return await github.getIssue({owner: "acme", repo: 'web', number: 7});
//
// the commonest code a model sends, or the same with the value named first,
//
//	const issue = await github.getIssue({number: 7});
//	return issue;
//
// so that the host can make the call without starting JavaScript. ok is
// false for anything else, and for any argument whose value it cannot be
// sure of: then the code runs in the sandbox as any other. args is what the sandbox would send, byte for byte
// (JSON.stringify of the literal). The forms read: `return`, `await`
// optional (no line break right after return; the declaration's await is
// not optional, and its name is no namespace the call names and no reserved
// word); `ns.tool` or `ns["tool"]`; no argument, or one object literal of
// strings (single or double quoted, the escapes JSON has), integers of up to
// 15 digits, decimals written as JavaScript prints them, true, false, null,
// arrays and objects, trailing commas allowed, keys identifiers or strings;
// an optional semicolon; spaces, tabs and newlines. Not read, so left to the
// sandbox: comments, a second argument, any expression, exponents, keys that
// are array indices (JavaScript orders them first) or __proto__ (a literal's
// sets the prototype), a key given twice, and \u escapes of surrogates.
// Whether ns is a namespace the code can reach is the caller's question.
func OneCall(js string) (ns, tool string, args []byte, ok bool) {
	p := &lit{s: js}
	p.space()
	// const r = await ns.tool({…}); return r
	var name string
	if p.word("const") || p.word("let") || p.word("var") {
		p.space()
		if name, ok = p.ident(); !ok || reserved[name] {
			return "", "", nil, false
		}
		p.space()
		if !p.eat('=') {
			return "", "", nil, false
		}
		p.space()
		if !p.word("await") {
			return "", "", nil, false
		}
		p.space()
		// The name is bound only once the call settled: named as the
		// namespace, the call throws a ReferenceError.
		if ns, tool, args, ok = p.call(); !ok || ns == name {
			return "", "", nil, false
		}
		// A semicolon or a line break ends the declaration.
		start := p.i
		p.space()
		broke := strings.ContainsAny(p.s[start:p.i], "\n\r")
		if p.eat(';') {
			p.space()
		} else if !broke {
			return "", "", nil, false
		}
	}
	if !p.word("return") {
		return "", "", nil, false
	}
	// No line break after return: JavaScript would end the statement
	// there (return; and the call never made).
	for p.peek() == ' ' || p.peek() == '\t' {
		p.i++
	}
	if name != "" {
		if got, ok := p.ident(); !ok || got != name {
			return "", "", nil, false
		}
	} else {
		if p.word("await") {
			p.space()
		}
		if ns, tool, args, ok = p.call(); !ok {
			return "", "", nil, false
		}
	}
	p.space()
	p.eat(';')
	p.space()
	if p.i != len(p.s) {
		return "", "", nil, false
	}
	return ns, tool, args, true
}

// call reads ns.tool(…) or ns["tool"](…), with no argument or one object
// literal: args as JSON.stringify writes it.
func (p *lit) call() (ns, tool string, args []byte, ok bool) {
	if ns, ok = p.ident(); !ok {
		return "", "", nil, false
	}
	p.space()
	switch {
	case p.eat('.'):
		p.space()
		tool, ok = p.ident()
	case p.eat('['):
		p.space()
		var b []byte
		if c := p.peek(); c != '"' && c != '\'' {
			ok = false
		} else if b, ok = p.str(nil); ok {
			tool = string(b)
			p.space()
			ok = p.eat(']')
		}
	default:
		ok = false
	}
	if !ok || tool == "" {
		return "", "", nil, false
	}
	p.space()
	if !p.eat('(') {
		return "", "", nil, false
	}
	p.space()
	if p.peek() == ')' {
		args = []byte("{}")
	} else {
		if p.peek() != '{' {
			return "", "", nil, false
		}
		if args, ok = p.value(nil, true); !ok {
			return "", "", nil, false
		}
		p.space()
	}
	if !p.eat(')') {
		return "", "", nil, false
	}
	return ns, tool, args, true
}

// reserved holds the words a declaration may not bind, in strict code and
// in an async function, and the two strict code may not either.
var reserved = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`await break case catch class const continue debugger default delete do
		else enum export extends false finally for function if import in instanceof new null return
		super switch this throw true try typeof var void while with yield let static implements
		interface package private protected public arguments eval`) {
		m[w] = true
	}
	return m
}()

// Restringify is JSON.stringify(JSON.parse(j)) as the sandbox computes it,
// for the JSON a tool call answers: what code that returns the call's value
// returns. ok is false where it cannot be sure (numbers JavaScript would
// print otherwise, keys that are array indices or given twice, surrogate
// escapes, more than 64 levels).
func Restringify(j []byte) ([]byte, bool) {
	p := &lit{s: string(j), json: true}
	p.space()
	out, ok := p.value(make([]byte, 0, len(j)), false)
	if !ok {
		return nil, false
	}
	p.space()
	return out, p.i == len(p.s)
}

// lit reads a JavaScript literal (json: strict JSON) and writes it as
// JSON.stringify would.
type lit struct {
	s     string
	i     int
	depth int
	json  bool
}

const maxDepth = 64

func (p *lit) peek() byte {
	if p.i < len(p.s) {
		return p.s[p.i]
	}
	return 0
}

func (p *lit) eat(c byte) bool {
	if p.peek() == c {
		p.i++
		return true
	}
	return false
}

func (p *lit) space() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func identStart(c byte) bool {
	return c == '_' || c == '$' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

func identPart(c byte) bool { return identStart(c) || '0' <= c && c <= '9' }

// ident reads an ASCII identifier.
func (p *lit) ident() (string, bool) {
	start := p.i
	if !identStart(p.peek()) {
		return "", false
	}
	for p.i < len(p.s) && identPart(p.s[p.i]) {
		p.i++
	}
	return p.s[start:p.i], true
}

// word reads the keyword w, not followed by an identifier's character.
func (p *lit) word(w string) bool {
	if !strings.HasPrefix(p.s[p.i:], w) || p.i+len(w) < len(p.s) && identPart(p.s[p.i+len(w)]) {
		return false
	}
	p.i += len(w)
	return true
}

// value reads one value and appends it to out as JSON.stringify writes it;
// top says an object is the only value accepted.
func (p *lit) value(out []byte, top bool) ([]byte, bool) {
	c := p.peek()
	if top && c != '{' {
		return nil, false
	}
	switch {
	case c == '{':
		return p.object(out)
	case c == '[':
		return p.array(out)
	case c == '"' || c == '\'' && !p.json:
		s, ok := p.str(nil)
		if !ok {
			return nil, false
		}
		return quote(out, s), true
	case c == '-' || '0' <= c && c <= '9':
		return p.number(out)
	}
	for _, w := range []string{"true", "false", "null"} {
		if p.word(w) {
			return append(out, w...), true
		}
	}
	return nil, false
}

func (p *lit) object(out []byte) ([]byte, bool) {
	if p.depth++; p.depth > maxDepth {
		return nil, false
	}
	p.i++ // {
	out = append(out, '{')
	var keys []string
	var seen map[string]bool // past a few keys, to find one given twice
	for {
		p.space()
		if p.eat('}') {
			break
		}
		if len(keys) > 0 {
			if !p.eat(',') {
				return nil, false
			}
			p.space()
			if p.eat('}') {
				if p.json {
					return nil, false
				}
				break
			}
		}
		var key string
		if c := p.peek(); c == '"' || c == '\'' && !p.json {
			b, ok := p.str(nil)
			if !ok {
				return nil, false
			}
			key = string(b)
		} else if !p.json {
			var ok bool
			if key, ok = p.ident(); !ok {
				return nil, false
			}
		} else {
			return nil, false
		}
		if arrayIndex(key) || key == "__proto__" && !p.json {
			return nil, false
		}
		if len(keys) == 8 {
			seen = make(map[string]bool, 16)
			for _, k := range keys {
				seen[k] = true
			}
		}
		if seen != nil && seen[key] || seen == nil && slices.Contains(keys, key) {
			return nil, false
		}
		if seen != nil {
			seen[key] = true
		}
		keys = append(keys, key)
		p.space()
		if !p.eat(':') {
			return nil, false
		}
		p.space()
		if len(keys) > 1 {
			out = append(out, ',')
		}
		out = append(quote(out, []byte(key)), ':')
		var ok bool
		if out, ok = p.value(out, false); !ok {
			return nil, false
		}
	}
	p.depth--
	return append(out, '}'), true
}

func (p *lit) array(out []byte) ([]byte, bool) {
	if p.depth++; p.depth > maxDepth {
		return nil, false
	}
	p.i++ // [
	out = append(out, '[')
	for n := 0; ; n++ {
		p.space()
		if p.eat(']') {
			break
		}
		if n > 0 {
			if !p.eat(',') {
				return nil, false
			}
			p.space()
			if p.eat(']') {
				if p.json {
					return nil, false
				}
				break
			}
			out = append(out, ',')
		}
		var ok bool
		if out, ok = p.value(out, false); !ok {
			return nil, false
		}
	}
	p.depth--
	return append(out, ']'), true
}

// arrayIndex says whether JavaScript orders key before the others: a
// canonical array index. Any key of digits only counts, to be sure.
func arrayIndex(key string) bool {
	if key == "" {
		return false
	}
	for i := 0; i < len(key); i++ {
		if key[i] < '0' || key[i] > '9' {
			return false
		}
	}
	return true
}

// number reads a number JavaScript prints as it is written: an integer of
// up to 15 digits (not -0), or a decimal whose shortest form is itself,
// between 1e-6 and 1e21 (outside, JavaScript prints an exponent).
func (p *lit) number(out []byte) ([]byte, bool) {
	start := p.i
	p.eat('-')
	digits := p.i
	for p.i < len(p.s) && '0' <= p.s[p.i] && p.s[p.i] <= '9' {
		p.i++
	}
	intDigits := p.i - digits
	if intDigits == 0 || intDigits > 1 && p.s[digits] == '0' {
		return nil, false
	}
	frac := false
	if p.eat('.') {
		frac = true
		n := p.i
		for p.i < len(p.s) && '0' <= p.s[p.i] && p.s[p.i] <= '9' {
			p.i++
		}
		if p.i == n {
			return nil, false
		}
	}
	if c := p.peek(); c == 'e' || c == 'E' || c == 'n' || c == '_' || identPart(c) {
		return nil, false
	}
	num := p.s[start:p.i]
	if !frac {
		if intDigits > 15 || num == "-0" {
			return nil, false
		}
		return append(out, num...), true
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || f == 0 {
		return nil, false
	}
	if a := max(f, -f); a < 1e-6 || a >= 1e21 || strconv.FormatFloat(f, 'f', -1, 64) != num {
		return nil, false
	}
	return append(out, num...), true
}

// str reads a quoted string and appends its value (UTF-8) to out. The
// escapes read are JSON's; any other, a raw control character, invalid
// UTF-8 or a surrogate is not read.
func (p *lit) str(out []byte) ([]byte, bool) {
	q := p.s[p.i]
	p.i++
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == q:
			p.i++
			return out, true
		case c < 0x20:
			return nil, false
		case c == '\\':
			if p.i+1 >= len(p.s) {
				return nil, false
			}
			e := p.s[p.i+1]
			p.i += 2
			switch e {
			case '"', '\\', '/':
				out = append(out, e)
			case '\'':
				if p.json {
					return nil, false
				}
				out = append(out, e)
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				if p.i+4 > len(p.s) {
					return nil, false
				}
				v, err := strconv.ParseUint(p.s[p.i:p.i+4], 16, 16)
				if err != nil || 0xD800 <= v && v <= 0xDFFF {
					return nil, false
				}
				p.i += 4
				out = utf8.AppendRune(out, rune(v))
			default:
				return nil, false
			}
		case c < utf8.RuneSelf:
			out = append(out, c)
			p.i++
		default:
			r, n := utf8.DecodeRuneInString(p.s[p.i:])
			if r == utf8.RuneError && n == 1 {
				return nil, false
			}
			out = append(out, p.s[p.i:p.i+n]...)
			p.i += n
		}
	}
	return nil, false
}

// quote appends s as JSON.stringify writes a string: ", \ and control
// characters escaped (the short forms where JSON has them, else \u00xx),
// everything else as it is.
func quote(out, s []byte) []byte {
	const hex = "0123456789abcdef"
	out = append(out, '"')
	for _, c := range s {
		switch {
		case c == '"' || c == '\\':
			out = append(out, '\\', c)
		case c == '\b':
			out = append(out, '\\', 'b')
		case c == '\f':
			out = append(out, '\\', 'f')
		case c == '\n':
			out = append(out, '\\', 'n')
		case c == '\r':
			out = append(out, '\\', 'r')
		case c == '\t':
			out = append(out, '\\', 't')
		case c < 0x20:
			out = append(out, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
		default:
			out = append(out, c)
		}
	}
	return append(out, '"')
}
