package typegen

import (
	"strings"
)

// renderer writes TypeScript type expressions.
type renderer struct {
	b       strings.Builder
	qual    string // prefix for named types: "github." in declarations, "" in signatures
	depth   int    // nested objects deeper than this are referenced by name
	short   bool   // docs: first sentence only
	compact bool   // one line, no docs
	used    []string
	usedSet map[string]bool
}

func (r *renderer) ref(name string) {
	if r.usedSet == nil {
		r.usedSet = map[string]bool{}
	}
	if !r.usedSet[name] {
		r.usedSet[name] = true
		r.used = append(r.used, name)
	}
	r.b.WriteString(r.qual + name)
}

// typ writes t; level is how many objects deep it sits, indent the current
// line's indentation.
func (r *renderer) typ(t *typ, level int, indent string) {
	switch t.kind {
	case kUnknown:
		r.b.WriteString("unknown")
	case kNever:
		r.b.WriteString("never")
	case kPrim, kLit:
		r.b.WriteString(t.text)
	case kRef:
		r.ref(t.text)
	case kArray:
		r.operand(t.elem, level, indent, true)
		r.b.WriteString("[]")
	case kTuple:
		r.b.WriteByte('[')
		for i, it := range t.items {
			if i > 0 {
				r.b.WriteString(", ")
			}
			r.typ(it, level, indent)
		}
		if t.elem != nil {
			if len(t.items) > 0 {
				r.b.WriteString(", ")
			}
			r.b.WriteString("...")
			r.operand(t.elem, level, indent, true)
			r.b.WriteString("[]")
		}
		r.b.WriteByte(']')
	case kUnion, kInter:
		sep := " | "
		if t.kind == kInter {
			sep = " & "
		}
		for i, it := range t.items {
			if i > 0 {
				r.b.WriteString(sep)
			}
			r.operand(it, level, indent, t.kind == kInter)
		}
	case kObject:
		if level > r.depth && t.name != "" {
			r.ref(t.name)
			return
		}
		r.object(t, level, indent)
	}
}

// operand writes t where a union (or, when strict, an intersection) needs
// parentheses.
func (r *renderer) operand(t *typ, level int, indent string, strict bool) {
	paren := t.kind == kUnion || strict && t.kind == kInter
	if paren {
		r.b.WriteByte('(')
	}
	r.typ(t, level, indent)
	if paren {
		r.b.WriteByte(')')
	}
}

func (r *renderer) object(t *typ, level int, indent string) {
	if r.compact {
		r.b.WriteString("{ ")
		for i, p := range t.props {
			if i > 0 {
				r.b.WriteString("; ")
			}
			r.prop(p, level, "")
		}
		if t.index != nil {
			if len(t.props) > 0 {
				r.b.WriteString("; ")
			}
			r.b.WriteString("[key: string]: ")
			r.typ(t.index, level+1, "")
		}
		r.b.WriteString(" }")
		return
	}
	inner := indent + "  "
	r.b.WriteString("{\n")
	r.members(t, level, inner)
	r.b.WriteString(indent + "}")
}

// members writes an object's properties, one a line, each after its JSDoc.
func (r *renderer) members(t *typ, level int, indent string) {
	for _, p := range t.props {
		r.doc(p.doc, indent)
		r.b.WriteString(indent)
		r.prop(p, level, indent)
		r.b.WriteString(";\n")
	}
	if t.index != nil {
		r.b.WriteString(indent + "[key: string]: ")
		r.typ(t.index, level+1, indent)
		r.b.WriteString(";\n")
	}
}

func (r *renderer) prop(p prop, level int, indent string) {
	r.b.WriteString(propName(p.name))
	if !p.required {
		r.b.WriteByte('?')
	}
	r.b.WriteString(": ")
	r.typ(p.t, level+1, indent)
}

// doc writes text as a JSDoc comment at indent.
func (r *renderer) doc(text, indent string) {
	if r.compact {
		return
	}
	if r.short {
		text = FirstSentence(text)
	}
	text = strings.ReplaceAll(text, "*/", "*\\/")
	lines := cleanLines(text)
	switch len(lines) {
	case 0:
		return
	case 1:
		r.b.WriteString(indent + "/** " + lines[0] + " */\n")
		return
	}
	r.b.WriteString(indent + "/**\n")
	for _, l := range lines {
		if l == "" {
			r.b.WriteString(indent + " *\n")
		} else {
			r.b.WriteString(indent + " * " + l + "\n")
		}
	}
	r.b.WriteString(indent + " */\n")
}

// cleanLines splits text into lines with common indentation removed, trailing
// space trimmed, and runs of blank lines collapsed.
func cleanLines(text string) []string {
	raw := strings.Split(strings.ReplaceAll(strings.TrimSpace(text), "\r\n", "\n"), "\n")
	// Shift indented lines left by their smallest indentation: descriptions
	// written as indented Go or JS string literals carry it on every line
	// but the first (and sometimes a last, unindented note).
	common := -1
	for i, l := range raw {
		n := len(l) - len(strings.TrimLeft(l, " \t"))
		if i == 0 || n == 0 || strings.TrimSpace(l) == "" {
			continue
		}
		if common < 0 || n < common {
			common = n
		}
	}
	var out []string
	for i, l := range raw {
		l = strings.TrimRight(l, " \t")
		if i > 0 && common > 0 {
			n := len(l) - len(strings.TrimLeft(l, " \t"))
			l = l[min(n, common):]
		}
		if l == "" && (len(out) == 0 || out[len(out)-1] == "") {
			continue
		}
		out = append(out, l)
	}
	for len(out) > 0 && out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return out
}

// FirstSentence is the first sentence of a description, on one line: the
// text up to the first ". " or blank line, at most 200 characters.
func FirstSentence(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.Index(s, "\n\n"); i >= 0 {
		s = s[:i]
	}
	if i := strings.Index(s, "\n@"); i >= 0 {
		s = s[:i]
	}
	for i := 0; i+1 < len(s); i++ {
		if (s[i] == '.' || s[i] == '!' || s[i] == '?') && (s[i+1] == ' ' || s[i+1] == '\n') {
			// "e.g. " and "i.e. " do not end a sentence.
			if i >= 3 && (s[i-3:i] == "e.g" || s[i-3:i] == "i.e") {
				continue
			}
			s = s[:i+1]
			break
		}
	}
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 200 {
		cut := strings.LastIndexByte(s[:200], ' ')
		if cut < 100 {
			cut = 200
		}
		for cut > 0 && s[cut]&0xC0 == 0x80 { // not inside a UTF-8 sequence
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

// widen replaces a long union of literals by the primitives it draws from.
func widen(t *typ) *typ {
	if t.kind != kUnion && t.kind != kLit {
		return t
	}
	members := t.items
	if t.kind == kLit {
		members = []*typ{t}
	}
	var prims []*typ
	for _, m := range members {
		if m.kind == kPrim {
			prims = append(prims, m)
			continue
		}
		if m.kind != kLit || m.text == "" {
			return t
		}
		p := "number"
		switch c := m.text[0]; {
		case c == '"':
			p = "string"
		case m.text == "true" || m.text == "false":
			p = "boolean"
		case m.text == "null":
			p = "null"
		case c == '{' || c == '[' || c == 'R':
			return t
		}
		prims = append(prims, &typ{kind: kPrim, text: p})
	}
	return union(prims)
}
