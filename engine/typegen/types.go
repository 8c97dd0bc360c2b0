package typegen

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// kind is the shape of a TypeScript type.
type kind uint8

const (
	kUnknown kind = iota
	kNever
	kPrim   // text: string, number, boolean, null
	kLit    // text: a literal type
	kArray  // elem[]
	kTuple  // [items..., ...elem[]]
	kObject // props, index
	kUnion  // items joined by |
	kInter  // items joined by &
	kRef    // text: the name of a named type
)

// typ is a TypeScript type converted from a JSON Schema.
type typ struct {
	kind  kind
	text  string
	elem  *typ
	items []*typ
	props []prop
	index *typ   // index signature value type, nil if none
	name  string // kObject: the named type it becomes when not inlined
}

type prop struct {
	name     string
	t        *typ
	required bool
	doc      string
}

var (
	tUnknown = &typ{kind: kUnknown}
	tNever   = &typ{kind: kNever}
)

// named is a type declared by name in its namespace: a $defs entry, a tool's
// output, or a nested object type.
type named struct {
	name string
	t    *typ
	doc  string
}

// registry holds the named types of one namespace.
type registry struct {
	byName map[string]*named
	byKey  map[string]*named // shared $defs, by canonical schema text
	order  []*named
}

func newRegistry() *registry {
	return &registry{byName: map[string]*named{}, byKey: map[string]*named{}}
}

// add registers a type under the first free name among cands, numbering the
// last candidate when all are taken.
func (r *registry) add(t *typ, doc string, cands ...string) *named {
	name := ""
	for _, c := range cands {
		if r.byName[c] == nil && !reservedNames[c] {
			name = c
			break
		}
	}
	for i := 2; name == ""; i++ {
		if c := cands[len(cands)-1] + strconv.Itoa(i); r.byName[c] == nil {
			name = c
		}
	}
	n := &named{name: name, t: t, doc: doc}
	r.byName[name] = n
	r.order = append(r.order, n)
	return n
}

// reservedNames are global types the declarations use by name; a named
// type of the same name would shadow them inside its namespace block.
var reservedNames = map[string]bool{"CallOptions": true, "Record": true, "Promise": true, "Array": true, "Object": true}

// builder converts the schemas of one tool.
type builder struct {
	reg    *registry
	root   any
	method string // the tool part of the address, PascalCase
	refs   map[string]*typ
	depth  int
}

const maxDepth = 48

// conv converts schema s found at path (a PascalCase name for the objects it
// holds). nameIt says whether an object here gets a name of its own.
func (b *builder) conv(s any, path string, nameIt bool) *typ {
	if b.depth > maxDepth {
		return tUnknown
	}
	b.depth++
	defer func() { b.depth-- }()
	switch s := s.(type) {
	case bool:
		if s {
			return tUnknown
		}
		return tNever
	case *object:
		return b.convObject(s, path, nameIt)
	}
	return tUnknown // null, a number, a string, an array: not a schema
}

func (b *builder) convObject(s *object, path string, nameIt bool) *typ {
	if ref, ok := s.get("$ref"); ok {
		if r, ok := ref.(string); ok {
			return b.ref(r)
		}
		return tUnknown
	}
	var parts []*typ // intersected
	if c, ok := s.get("const"); ok {
		parts = append(parts, litType(c))
	} else if e, ok := s.get("enum"); ok {
		if arr, ok := e.([]any); ok {
			lits := make([]*typ, len(arr))
			for i, v := range arr {
				lits[i] = litType(v)
			}
			parts = append(parts, union(lits))
		}
	} else if base := b.convTyped(s, path, nameIt); base != nil {
		parts = append(parts, base)
	}
	for _, kw := range []string{"anyOf", "oneOf"} {
		if arr, ok := s.vals[kw].([]any); ok && len(arr) > 0 {
			alts := make([]*typ, len(arr))
			for i, a := range arr {
				alts[i] = b.conv(a, path+"Option"+strconv.Itoa(i+1), true)
			}
			parts = append(parts, union(alts))
		}
	}
	if arr, ok := s.vals["allOf"].([]any); ok {
		for i, a := range arr {
			parts = append(parts, b.conv(a, path+"Part"+strconv.Itoa(i+1), true))
		}
	}
	t := inter(parts)
	if nb, _ := s.vals["nullable"].(bool); nb {
		t = union([]*typ{t, {kind: kPrim, text: "null"}})
	}
	return t
}

func litType(v any) *typ {
	if s := literal(v); s != "number" {
		return &typ{kind: kLit, text: s}
	}
	return &typ{kind: kPrim, text: "number"} // a number TypeScript cannot write
}

// convTyped converts the "type" keyword and the keywords it governs; nil
// when the schema says nothing about its type.
func (b *builder) convTyped(s *object, path string, nameIt bool) *typ {
	var types []string
	switch tv := s.vals["type"].(type) {
	case string:
		types = []string{tv}
	case []any:
		for _, x := range tv {
			if x, ok := x.(string); ok {
				types = append(types, x)
			} else {
				return tUnknown
			}
		}
		if len(types) == 0 {
			return tUnknown
		}
	case nil:
		if _, ok := s.vals["type"]; ok {
			return tUnknown
		}
		_, p := s.vals["properties"]
		_, ap := s.vals["additionalProperties"]
		_, pp := s.vals["patternProperties"]
		_, it := s.vals["items"]
		_, pi := s.vals["prefixItems"]
		switch {
		case p || ap || pp:
			types = []string{"object"}
		case it || pi:
			types = []string{"array"}
		default:
			return nil
		}
	default:
		return tUnknown
	}
	alts := make([]*typ, 0, len(types))
	for _, name := range types {
		switch name {
		case "string", "boolean", "null", "number":
			alts = append(alts, &typ{kind: kPrim, text: name})
		case "integer":
			alts = append(alts, &typ{kind: kPrim, text: "number"})
		case "object":
			alts = append(alts, b.objectType(s, path, nameIt))
		case "array":
			alts = append(alts, b.arrayType(s, path))
		default:
			return tUnknown
		}
	}
	return union(alts)
}

func (b *builder) objectType(s *object, path string, nameIt bool) *typ {
	t := &typ{kind: kObject}
	req := map[string]bool{}
	if r, ok := s.vals["required"].([]any); ok {
		for _, x := range r {
			if x, ok := x.(string); ok {
				req[x] = true
			}
		}
	}
	if props, ok := s.vals["properties"].(*object); ok {
		var opt []prop
		for _, k := range props.keys {
			ps := props.vals[k]
			p := prop{name: k, required: req[k], t: b.conv(ps, path+pascal(k), true), doc: docOf(ps)}
			if p.required {
				t.props = append(t.props, p)
			} else {
				opt = append(opt, p)
			}
		}
		t.props = append(t.props, opt...)
	}
	var idx []*typ
	if ap, ok := s.vals["additionalProperties"]; ok {
		if _, isBool := ap.(bool); !isBool {
			idx = append(idx, b.conv(ap, path+"Value", true))
		}
	}
	if pp, ok := s.vals["patternProperties"].(*object); ok {
		for _, k := range pp.keys {
			idx = append(idx, b.conv(pp.vals[k], path+"Value", true))
		}
	}
	if len(idx) > 0 {
		all := idx
		optional := false
		for _, p := range t.props {
			all = append(all, p.t)
			optional = optional || !p.required
		}
		if optional {
			all = append(all, &typ{kind: kPrim, text: "undefined"})
		}
		t.index = union(all)
	}
	if len(t.props) == 0 && t.index == nil {
		if ap, ok := s.vals["additionalProperties"].(bool); ok && !ap {
			return &typ{kind: kLit, text: "Record<string, never>"}
		}
		return &typ{kind: kLit, text: "Record<string, unknown>"}
	}
	if nameIt {
		t.name = b.reg.add(t, docOf(s), path).name
	}
	return t
}

func (b *builder) arrayType(s *object, path string) *typ {
	tuple, _ := s.vals["prefixItems"].([]any)
	rest, hasRest := s.vals["items"]
	if arr, ok := rest.([]any); ok && tuple == nil { // draft 4 tuple
		tuple = arr
		rest, hasRest = s.vals["additionalItems"]
	}
	if tuple == nil {
		if !hasRest {
			return &typ{kind: kArray, elem: tUnknown}
		}
		return &typ{kind: kArray, elem: b.conv(rest, path+"Item", true)}
	}
	t := &typ{kind: kTuple}
	for i, x := range tuple {
		t.items = append(t.items, b.conv(x, path+"Item"+strconv.Itoa(i+1), true))
	}
	if _, isArr := rest.([]any); hasRest && !isArr {
		if e := b.conv(rest, path+"Item", true); e.kind != kNever {
			t.elem = e
		}
	} else if !hasRest {
		t.elem = tUnknown
	}
	return t
}

// ref resolves a local JSON pointer ("#/$defs/Issue", "#") to a named type.
func (b *builder) ref(ptr string) *typ {
	if t, ok := b.refs[ptr]; ok {
		return t
	}
	target, ok := resolve(b.root, ptr)
	if !ok {
		return tUnknown
	}
	key := canonical(target)
	if strings.Contains(key, `"$ref"`) {
		defs, _ := b.root.(*object).get("$defs")
		old, _ := b.root.(*object).get("definitions")
		key += "|" + canonical(defs) + "|" + canonical(old)
	}
	if n, ok := b.reg.byKey[key]; ok {
		t := &typ{kind: kRef, text: n.name}
		b.refs[ptr] = t
		return t
	}
	seg := ptr[strings.LastIndex(ptr, "/")+1:]
	cands := []string{pascal(seg), b.method + pascal(seg)}
	if seg == "#" || seg == "" {
		cands = []string{b.method + "Input"}
	}
	n := b.reg.add(nil, docOf(target), cands...)
	b.reg.byKey[key] = n
	t := &typ{kind: kRef, text: n.name}
	b.refs[ptr] = t
	n.t = b.conv(target, n.name, false)
	if n.t.kind == kObject {
		n.t.name = n.name
	}
	return t
}

func resolve(root any, ptr string) (any, bool) {
	if !strings.HasPrefix(ptr, "#") {
		return nil, false // remote references are not followed
	}
	cur := root
	rest := strings.TrimPrefix(ptr, "#")
	if rest == "" {
		return cur, true
	}
	if rest[0] != '/' {
		return nil, false
	}
	for _, seg := range strings.Split(rest[1:], "/") {
		seg = strings.ReplaceAll(strings.ReplaceAll(seg, "~1", "/"), "~0", "~")
		switch c := cur.(type) {
		case *object:
			v, ok := c.vals[seg]
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(c) {
				return nil, false
			}
			cur = c[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

// union joins alternatives: duplicates collapse, never disappears, unknown
// absorbs everything.
func union(alts []*typ) *typ {
	var out []*typ
	seen := map[string]bool{}
	for _, a := range alts {
		members := []*typ{a}
		if a.kind == kUnion {
			members = a.items
		}
		for _, m := range members {
			switch m.kind {
			case kUnknown:
				return tUnknown
			case kNever:
				continue
			}
			k := compactKey(m)
			if !seen[k] {
				seen[k] = true
				out = append(out, m)
			}
		}
	}
	switch len(out) {
	case 0:
		return tNever
	case 1:
		return out[0]
	}
	return &typ{kind: kUnion, items: out}
}

// inter intersects parts: unknown parts drop out, never wins.
func inter(parts []*typ) *typ {
	var out []*typ
	for _, p := range parts {
		switch p.kind {
		case kUnknown:
			continue
		case kNever:
			return tNever
		}
		out = append(out, p)
	}
	switch len(out) {
	case 0:
		return tUnknown
	case 1:
		return out[0]
	}
	return &typ{kind: kInter, items: out}
}

func compactKey(t *typ) string {
	if t.kind == kPrim || t.kind == kLit || t.kind == kRef {
		return t.text
	}
	return fmt.Sprintf("%p", t)
}

// docOf is the JSDoc text of a schema: its description, then its default,
// format and ranges as tags.
func docOf(s any) string {
	o, ok := s.(*object)
	if !ok {
		return ""
	}
	var b strings.Builder
	b.WriteString(strings.TrimSpace(o.str("description")))
	if b.Len() == 0 {
		b.WriteString(strings.TrimSpace(o.str("title")))
	}
	tag := func(name string, v any) {
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString("@" + name)
		if s := oneLine(v); s != "" {
			b.WriteString(" " + s)
		}
	}
	if v, ok := o.get("default"); ok {
		tag("default", v)
	}
	for _, k := range []string{"format", "pattern", "minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum", "minLength", "maxLength", "minItems", "maxItems"} {
		if v, ok := o.get(k); ok {
			if _, isObj := v.(*object); !isObj {
				tag(k, v)
			}
		}
	}
	if _, ok := o.get("deprecated"); ok {
		tag("deprecated", "")
	}
	return b.String()
}

func oneLine(v any) string {
	if s, ok := v.(string); ok && !strings.ContainsAny(s, "\n\r") {
		return s
	}
	var b []byte
	switch v := v.(type) {
	case *object, []any:
		b = []byte(canonicalJSON(v))
	default:
		b, _ = json.Marshal(v)
	}
	return string(b)
}

// canonicalJSON renders a decoded value back as compact JSON.
func canonicalJSON(v any) string {
	switch v := v.(type) {
	case *object:
		parts := make([]string, len(v.keys))
		for i, k := range v.keys {
			kb, _ := json.Marshal(k)
			parts[i] = string(kb) + ":" + canonicalJSON(v.vals[k])
		}
		return "{" + strings.Join(parts, ",") + "}"
	case []any:
		parts := make([]string, len(v))
		for i, x := range v {
			parts[i] = canonicalJSON(x)
		}
		return "[" + strings.Join(parts, ",") + "]"
	case json.Number:
		return string(v)
	}
	b, _ := json.Marshal(v)
	return string(b)
}
