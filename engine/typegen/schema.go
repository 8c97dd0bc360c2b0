package typegen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
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
func decode(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := decodeValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("trailing data after JSON value")
	}
	return v, nil
}

func decodeValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch tok := tok.(type) {
	case json.Delim:
		switch tok {
		case '{':
			o := &object{vals: map[string]any{}}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, _ := kt.(string)
				v, err := decodeValue(dec)
				if err != nil {
					return nil, err
				}
				if _, dup := o.vals[k]; !dup {
					o.keys = append(o.keys, k)
				}
				o.vals[k] = v
			}
			_, err := dec.Token()
			return o, err
		case '[':
			a := []any{}
			for dec.More() {
				v, err := decodeValue(dec)
				if err != nil {
					return nil, err
				}
				a = append(a, v)
			}
			_, err := dec.Token()
			return a, err
		}
		return nil, fmt.Errorf("unexpected %v", tok)
	default:
		return tok, nil
	}
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
