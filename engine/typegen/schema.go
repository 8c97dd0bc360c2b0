package typegen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// object is a JSON object that keeps its key order: property order is part
// of what a model reads.
type object struct {
	keys []string
	vals map[string]any
}

func (o *object) get(k string) (any, bool) {
	if o == nil {
		return nil, false
	}
	v, ok := o.vals[k]
	return v, ok
}

func (o *object) str(k string) string {
	v, _ := o.get(k)
	s, _ := v.(string)
	return s
}

// decode parses JSON into *object, []any, string, json.Number, bool and nil.
// It is a small recursive-descent parser: several times faster than
// encoding/json's token stream, which matters when a namespace's schemas
// are converted on its first describe.
func decode(data []byte) (any, error) {
	p := &parser{s: data}
	v, err := p.value(0)
	if err != nil {
		return nil, err
	}
	if p.ws(); p.i != len(p.s) {
		return nil, p.fail("trailing data")
	}
	return v, nil
}

type parser struct {
	s []byte
	i int
}

const maxNesting = 1000

func (p *parser) fail(what string) error {
	return fmt.Errorf("parsing JSON at byte %d: %s", p.i, what)
}

func (p *parser) ws() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t' || p.s[p.i] == '\n' || p.s[p.i] == '\r') {
		p.i++
	}
}

func (p *parser) value(depth int) (any, error) {
	if depth > maxNesting {
		return nil, p.fail("nested too deeply")
	}
	p.ws()
	if p.i >= len(p.s) {
		return nil, p.fail("unexpected end")
	}
	switch c := p.s[p.i]; {
	case c == '{':
		p.i++
		o := &object{vals: map[string]any{}}
		p.ws()
		if p.i < len(p.s) && p.s[p.i] == '}' {
			p.i++
			return o, nil
		}
		for {
			p.ws()
			k, err := p.str()
			if err != nil {
				return nil, err
			}
			if p.ws(); p.i >= len(p.s) || p.s[p.i] != ':' {
				return nil, p.fail("expected ':'")
			}
			p.i++
			v, err := p.value(depth + 1)
			if err != nil {
				return nil, err
			}
			if _, dup := o.vals[k]; !dup {
				o.keys = append(o.keys, k)
			}
			o.vals[k] = v
			if p.ws(); p.i < len(p.s) && p.s[p.i] == ',' {
				p.i++
				continue
			}
			if p.i < len(p.s) && p.s[p.i] == '}' {
				p.i++
				return o, nil
			}
			return nil, p.fail("expected ',' or '}'")
		}
	case c == '[':
		p.i++
		a := []any{}
		p.ws()
		if p.i < len(p.s) && p.s[p.i] == ']' {
			p.i++
			return a, nil
		}
		for {
			v, err := p.value(depth + 1)
			if err != nil {
				return nil, err
			}
			a = append(a, v)
			if p.ws(); p.i < len(p.s) && p.s[p.i] == ',' {
				p.i++
				continue
			}
			if p.i < len(p.s) && p.s[p.i] == ']' {
				p.i++
				return a, nil
			}
			return nil, p.fail("expected ',' or ']'")
		}
	case c == '"':
		return p.str()
	case c == '-' || c >= '0' && c <= '9':
		return p.num()
	}
	for _, lit := range []struct {
		text string
		v    any
	}{{"true", true}, {"false", false}, {"null", nil}} {
		if bytes.HasPrefix(p.s[p.i:], []byte(lit.text)) {
			p.i += len(lit.text)
			return lit.v, nil
		}
	}
	return nil, p.fail("unexpected character")
}

func (p *parser) str() (string, error) {
	if p.i >= len(p.s) || p.s[p.i] != '"' {
		return "", p.fail("expected a string")
	}
	start := p.i
	escaped := false
	for p.i++; p.i < len(p.s); p.i++ {
		switch c := p.s[p.i]; {
		case c == '\\':
			escaped = true
			p.i++
		case c < 0x20:
			return "", p.fail("control character in string")
		case c == '"':
			p.i++
			raw := p.s[start:p.i]
			if !escaped && utf8.Valid(raw) {
				return string(raw[1 : len(raw)-1]), nil
			}
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				return "", p.fail("bad string")
			}
			return s, nil
		}
	}
	return "", p.fail("unterminated string")
}

// num scans a JSON number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (p *parser) num() (json.Number, error) {
	start := p.i
	digits := func() int {
		n := 0
		for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
			p.i++
			n++
		}
		return n
	}
	if p.s[p.i] == '-' {
		p.i++
	}
	if p.i < len(p.s) && p.s[p.i] == '0' {
		p.i++
	} else if digits() == 0 {
		return "", p.fail("bad number")
	}
	if p.i < len(p.s) && p.s[p.i] == '.' {
		p.i++
		if digits() == 0 {
			return "", p.fail("bad number")
		}
	}
	if p.i < len(p.s) && (p.s[p.i] == 'e' || p.s[p.i] == 'E') {
		p.i++
		if p.i < len(p.s) && (p.s[p.i] == '+' || p.s[p.i] == '-') {
			p.i++
		}
		if digits() == 0 {
			return "", p.fail("bad number")
		}
	}
	return json.Number(p.s[start:p.i]), nil
}

// literal renders a JSON value as a TypeScript literal type. JSON strings,
// numbers, true, false and null are TypeScript literal types as written;
// objects and arrays become object and tuple types of literals.
func literal(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return strconv.FormatBool(v)
	case json.Number:
		if _, err := strconv.ParseFloat(string(v), 64); err != nil {
			return "number"
		}
		return string(v)
	case string:
		b, _ := json.Marshal(v)
		return string(b)
	case []any:
		parts := make([]string, len(v))
		for i, x := range v {
			parts[i] = literal(x)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case *object:
		if len(v.keys) == 0 {
			return "Record<string, never>"
		}
		parts := make([]string, len(v.keys))
		for i, k := range v.keys {
			parts[i] = propName(k) + ": " + literal(v.vals[k])
		}
		return "{ " + strings.Join(parts, "; ") + " }"
	}
	return "unknown"
}

// canonical is a stable text of a schema value, used to recognize identical
// definitions shared by several tools.
func canonical(v any) string {
	var b strings.Builder
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case *object:
			b.WriteByte('{')
			for _, k := range v.keys {
				b.WriteString(strconv.Quote(k))
				b.WriteByte(':')
				walk(v.vals[k])
				b.WriteByte(',')
			}
			b.WriteByte('}')
		case []any:
			b.WriteByte('[')
			for _, x := range v {
				walk(x)
				b.WriteByte(',')
			}
			b.WriteByte(']')
		default:
			b.WriteString(literal(v))
		}
	}
	walk(v)
	return b.String()
}

// isIdent reports whether s can be written bare as a property name.
func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if !(r == '_' || r == '$' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// propName renders a property name, quoting it when it is not an identifier.
func propName(s string) string {
	if isIdent(s) {
		return s
	}
	b, _ := json.Marshal(s)
	return string(b)
}

// pascal turns "issue_fields", "get-sum" or "richTextRequest" into
// "IssueFields", "GetSum", "RichTextRequest".
func pascal(s string) string {
	var b strings.Builder
	up := true
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			up = true
			continue
		}
		if up && r >= 'a' && r <= 'z' {
			r -= 'a' - 'A'
		}
		up = false
		b.WriteRune(r)
	}
	out := b.String()
	if out == "" || out[0] >= '0' && out[0] <= '9' {
		out = "T" + out
	}
	return out
}
