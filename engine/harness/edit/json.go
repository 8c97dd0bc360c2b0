package edit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/tailscale/hujson"
)

// jsonDoc is a parsed JSON or JSONC file.
type jsonDoc struct {
	bom  bool
	src  []byte // without the BOM
	root hujson.Value
	nl   string
	unit string // one level of indentation
	// verbatim: a value set keeps its own layout (see jsonSetText).
	verbatim bool
}

func parseJSON(src []byte) (*jsonDoc, error) {
	d := &jsonDoc{}
	if bytes.HasPrefix(src, bom) {
		d.bom, src = true, src[len(bom):]
	}
	d.src = src
	d.nl = newline(src)
	if len(bytes.TrimSpace(src)) == 0 {
		// An empty file is an empty object; what it held (whitespace) goes.
		src = []byte("{}" + d.nl)
		d.src = src
	}
	v, err := hujson.Parse(src)
	if err != nil {
		return nil, fmt.Errorf("parsing: %s", strings.TrimPrefix(err.Error(), "hujson: "))
	}
	if _, ok := v.Value.(*hujson.Object); !ok {
		return nil, errors.New("parsing: the file is not a JSON object")
	}
	d.root = v
	d.unit = "  "
	if obj := v.Value.(*hujson.Object); len(obj.Members) > 0 {
		if ws := afterLastNewline(obj.Members[0].Name.BeforeExtra); len(ws) > 0 && isBlank(ws) {
			d.unit = string(ws)
		}
	}
	return d, nil
}

func (d *jsonDoc) pack() []byte {
	out := d.root.Pack()
	if d.bom {
		out = append(append([]byte(nil), bom...), out...)
	}
	return out
}

// afterLastNewline is what follows the last line break of b, nil when b has
// none.
func afterLastNewline(b []byte) []byte {
	i := bytes.LastIndexByte(b, '\n')
	if i < 0 {
		return nil
	}
	return b[i+1:]
}

func isBlank(b []byte) bool { return len(bytes.Trim(b, " \t\r\n")) == 0 }

// member finds the member named name; an object with the name twice is
// refused (which one a harness reads is not ours to guess).
func member(obj *hujson.Object, name string) (int, error) {
	found := -1
	for i, m := range obj.Members {
		lit, ok := m.Name.Value.(hujson.Literal)
		if !ok || lit.String() != name {
			continue
		}
		if found >= 0 {
			return -1, fmt.Errorf("the key %q appears twice in one object", name)
		}
		found = i
	}
	return found, nil
}

// walk follows keyPath as far as it exists: the objects along it (the root
// first) and the member holding each.
func (d *jsonDoc) walk(keyPath []string) ([]*hujson.Object, []*hujson.ObjectMember, error) {
	objs := []*hujson.Object{d.root.Value.(*hujson.Object)}
	var mems []*hujson.ObjectMember
	for _, k := range keyPath {
		obj := objs[len(objs)-1]
		i, err := member(obj, k)
		if err != nil {
			return nil, nil, err
		}
		if i < 0 {
			break
		}
		m := &obj.Members[i]
		next, ok := m.Value.Value.(*hujson.Object)
		if !ok {
			return nil, nil, fmt.Errorf("%q is not an object", k)
		}
		objs = append(objs, next)
		mems = append(mems, m)
	}
	return objs, mems, nil
}

// openIndent is the indentation of the line where the object held by m
// opens (the root's is "").
func (d *jsonDoc) openIndent(m *hujson.ObjectMember) string {
	if m == nil {
		return ""
	}
	return lineIndent(d.src, m.Name.StartOffset)
}

func jsonMissing(src []byte, keyPath []string) (int, error) {
	d, err := parseJSON(src)
	if err != nil {
		return 0, err
	}
	objs, _, err := d.walk(keyPath)
	if err != nil {
		return 0, err
	}
	return len(keyPath) + 1 - len(objs), nil
}

func jsonSet(src []byte, keyPath []string, name string, entry any) ([]byte, error) {
	want, err := marshal(entry)
	if err != nil {
		return nil, fmt.Errorf("setting %s: %w", keyPathString(keyPath, name), err)
	}
	return jsonSetText(src, keyPath, name, want, false, Place{})
}

// jsonSetFlag sets key to value in the entry object at entryPath, as
// jsonSet does, except in an entry with nothing but blanks inside: the
// member goes in on its own line when those blanks hold a line break, on
// the brace's line otherwise, and the blanks stay, so that taking it out
// again (jsonRemoveMember, keepBlank) gives back the bytes before.
func jsonSetFlag(src []byte, entryPath []string, key string, value bool) ([]byte, error) {
	d, err := parseJSON(src)
	if err != nil {
		return nil, err
	}
	objs, mems, err := d.walk(entryPath)
	if err != nil || len(objs) != len(entryPath)+1 {
		return jsonSet(src, entryPath, key, value)
	}
	obj := objs[len(objs)-1]
	if len(obj.Members) > 0 || !isBlank(obj.AfterExtra) {
		return jsonSet(src, entryPath, key, value)
	}
	name, _ := marshal(key)
	before := []byte(" ")
	switch {
	case len(obj.AfterExtra) == 0:
		before = nil
	case bytes.IndexByte(obj.AfterExtra, '\n') >= 0:
		before = []byte(d.nl + d.openIndent(mems[len(mems)-1]) + d.unit)
	}
	obj.Members = append(obj.Members, hujson.ObjectMember{
		Name:  hujson.Value{BeforeExtra: before, Value: hujson.Literal(name)},
		Value: hujson.Value{BeforeExtra: []byte(" "), Value: hujson.Bool(value)},
	})
	want, _ := marshal(value)
	return d.checked(src, entryPath, key, want)
}

// jsonKeep is entry followed by the keys of the entry src already holds
// that are neither entry's nor owned (a timeout the person added), with
// their values.
func jsonKeep(src []byte, keyPath []string, name string, entry Entry, owned []string) (Entry, error) {
	d, err := parseJSON(src)
	if err != nil {
		return nil, err
	}
	objs, _, err := d.walk(keyPath)
	if err != nil || len(objs) != len(keyPath)+1 {
		return entry, nil // the edit says what is wrong, or makes the entry
	}
	i, err := member(objs[len(objs)-1], name)
	if err != nil || i < 0 {
		return entry, nil
	}
	old, ok := objs[len(objs)-1].Members[i].Value.Value.(*hujson.Object)
	if !ok {
		return entry, nil
	}
	out := slices.Clone(entry)
	for _, m := range old.Members {
		lit, ok := m.Name.Value.(hujson.Literal)
		if !ok || ownKey(entry, owned, lit.String()) {
			continue
		}
		v := m.Value.Clone()
		v.Standardize()
		out = append(out, Field{Key: lit.String(), Value: json.RawMessage(v.Pack())})
	}
	return out, nil
}

// jsonSetText sets the entry to want, a JSON text; verbatim keeps want's
// own layout and comments (an entry put back where it was taken from).
func jsonSetText(src []byte, keyPath []string, name string, want []byte, verbatim bool, at Place) ([]byte, error) {
	d, err := parseJSON(src)
	if err != nil {
		return nil, err
	}
	d.verbatim = verbatim
	objs, mems, err := d.walk(keyPath)
	if err != nil {
		return nil, fmt.Errorf("setting %s: %w", keyPathString(keyPath, name), err)
	}
	var parent *hujson.ObjectMember
	if len(mems) > 0 {
		parent = mems[len(mems)-1]
	}
	obj := objs[len(objs)-1]
	if len(objs) == len(keyPath)+1 {
		i, err := member(obj, name)
		if err != nil {
			return nil, fmt.Errorf("setting %s: %w", keyPathString(keyPath, name), err)
		}
		if i >= 0 { // update in place, or leave alone when it says the same
			m := &obj.Members[i]
			if sameJSON(m.Value.Pack(), want) {
				return src, nil
			}
			v, err := d.format(want, lineIndent(d.src, m.Name.StartOffset), !d.multiline(obj))
			if err != nil {
				return nil, err
			}
			m.Value.Value = v.Value
			return d.checked(src, keyPath, name, want)
		}
		compact := !d.multiline(obj)
		if err := d.insert(obj, parent, name, want); err != nil {
			return nil, err
		}
		d.moveLast(obj, at, compact)
		i, _ = member(obj, name)
		if k, ok := writtenKey(at.Key, name); ok {
			m := &obj.Members[i]
			m.Name.Value, m.Name.AfterExtra, m.Value.BeforeExtra = k.Name.Value, k.Name.AfterExtra, k.Value.BeforeExtra
		}
		if at.Tail != nil && i == len(obj.Members)-1 && isTail(*at.Tail) && isBlank(obj.AfterExtra) {
			obj.AfterExtra = []byte(*at.Tail)
		}
		// What stood before its comma; last now, it has a trailing comma
		// only when it was last with one.
		if m := &obj.Members[i]; at.Comma != nil && isBlank([]byte(*at.Comma)) && (i < len(obj.Members)-1 || at.Tail != nil) {
			m.Value.AfterExtra = []byte(*at.Comma)
		} else if i == len(obj.Members)-1 && at.Tail != nil && at.Key != nil {
			m.Value.AfterExtra = nil
		}
		return d.checked(src, keyPath, name, want)
	}
	// Create the missing objects of keyPath around the entry.
	inner := nestedValue(keyPath[len(objs)-1:], name, json.RawMessage(want))
	raw, err := marshal(inner)
	if err != nil {
		return nil, err
	}
	if err := d.insert(obj, parent, keyPath[len(objs)-1], raw); err != nil {
		return nil, err
	}
	return d.checked(src, keyPath, name, want)
}

// nestedValue is {keys[1]: {keys[2]: … {name: entry}}}, the value of
// keys[0].
func nestedValue(keys []string, name string, entry json.RawMessage) any {
	var v any = Entry{{Key: name, Value: entry}}
	for i := len(keys) - 1; i >= 1; i-- {
		v = Entry{{Key: keys[i], Value: v}}
	}
	return v
}

// multiline is false for an object written on one line.
func (d *jsonDoc) multiline(obj *hujson.Object) bool {
	if len(obj.Members) == 0 {
		return true
	}
	return bytes.IndexByte(obj.Members[len(obj.Members)-1].Name.BeforeExtra, '\n') >= 0
}

// format parses raw JSON laid out at the indentation of its line.
func (d *jsonDoc) format(raw []byte, indent string, compact bool) (hujson.Value, error) {
	if d.verbatim {
		return hujson.Parse(raw)
	}
	var b bytes.Buffer
	if compact {
		b.Write(raw)
	} else if err := json.Indent(&b, raw, indent, d.unit); err != nil {
		return hujson.Value{}, err
	}
	text := b.Bytes()
	if d.nl != "\n" {
		text = bytes.ReplaceAll(text, []byte("\n"), []byte(d.nl))
	}
	return hujson.Parse(text)
}

// insert appends the member name: value to obj, laid out like its
// neighbours: the last member's indentation and spacing, the object's
// trailing comma kept.
func (d *jsonDoc) insert(obj *hujson.Object, parent *hujson.ObjectMember, name string, raw []byte) error {
	key, _ := marshal(name)
	open := d.openIndent(parent)
	var before, colon []byte
	indent := open + d.unit
	compact := false
	if n := len(obj.Members); n > 0 {
		last := obj.Members[n-1]
		ws := afterLastNewline(last.Name.BeforeExtra)
		switch {
		case ws == nil: // one line: {"a": 1, "b": 2}
			compact = true
			before = []byte(" ")
			if n > 1 && isBlank(last.Name.BeforeExtra) {
				before = bytes.Clone(last.Name.BeforeExtra)
			}
		case isBlank(ws):
			indent = string(ws)
			before = []byte(d.nl + indent)
		default:
			before = []byte(d.nl + indent)
		}
		colon = []byte(" ")
		if isBlank(last.Value.BeforeExtra) && bytes.IndexByte(last.Value.BeforeExtra, '\n') < 0 {
			colon = bytes.Clone(last.Value.BeforeExtra)
		}
	} else {
		before = []byte(d.nl + indent)
		colon = []byte(" ")
		if isBlank(obj.AfterExtra) {
			obj.AfterExtra = []byte(d.nl + open)
		}
	}
	v, err := d.format(raw, indent, compact)
	if err != nil {
		return err
	}
	v.BeforeExtra = colon
	trailing := len(obj.Members) > 0 && obj.Members[len(obj.Members)-1].Value.AfterExtra != nil
	if trailing {
		v.AfterExtra = []byte{}
	}
	obj.Members = append(obj.Members, hujson.ObjectMember{
		Name:  hujson.Value{BeforeExtra: before, Value: hujson.Literal(key)},
		Value: v,
	})
	return nil
}

// moveLast puts obj's last member, which insert just appended, where at
// says (PutBack), with the blanks and comments that were before its name
// (Place.Lead); in an object on one line, the member it goes before gets
// the appended one's spacing if it had none (it was first).
func (d *jsonDoc) moveLast(obj *hujson.Object, at Place, compact bool) {
	n := len(obj.Members)
	k := n - 1
	// exact: where it was, after the same member or first, and Where
	// recorded all of it (Key): its Lead is written as it was.
	exact := false
	hasAfter := at.After != "" || (at.Key != nil && !at.First) // a member may be named ""
	if j, _ := member(obj, at.After); hasAfter && j >= 0 {
		k, exact = j+1, at.Key != nil
	} else if at.First {
		k, exact = 0, at.Key != nil
	} else if j, _ := member(obj, at.Before); at.Before != "" && j >= 0 {
		k = j
	}
	m := obj.Members[n-1]
	if (exact || !compact && strings.Contains(at.Lead, "\n")) && isLead(at.Lead) {
		m.Name.BeforeExtra = []byte(at.Lead)
	}
	if k < n-1 {
		copy(obj.Members[k+1:], obj.Members[k:n-1])
		if compact && !exact {
			appended := m.Name.BeforeExtra
			if !strings.Contains(at.Lead, "\n") && isLead(at.Lead) {
				m.Name.BeforeExtra = []byte(at.Lead)
			}
			if next := &obj.Members[k+1].Name; len(next.BeforeExtra) == 0 {
				next.BeforeExtra = appended
			}
		}
	}
	obj.Members[k] = m
}

// writtenKey is the member a Place's Key gives (its name as written, the
// colon and the blanks around it), when it names name.
func writtenKey(key *string, name string) (hujson.ObjectMember, bool) {
	if key == nil {
		return hujson.ObjectMember{}, false
	}
	v, err := hujson.Parse([]byte("{" + *key + "0}"))
	if err != nil {
		return hujson.ObjectMember{}, false
	}
	obj := v.Value.(*hujson.Object)
	if len(obj.Members) != 1 || len(obj.Members[0].Name.BeforeExtra) > 0 {
		return hujson.ObjectMember{}, false
	}
	lit, ok := obj.Members[0].Name.Value.(hujson.Literal)
	return obj.Members[0], ok && lit.String() == name
}

// isTail reports whether s is what may stand before an object's closing
// brace: blanks, and comments.
func isTail(s string) bool {
	v, err := hujson.Parse([]byte("{" + s + "}"))
	return err == nil && len(v.Value.(*hujson.Object).Members) == 0
}

// isLead reports whether s is what may stand before a member's name:
// blanks, and comments that end before the name does.
func isLead(s string) bool {
	v, err := hujson.Parse([]byte(s + "0"))
	return err == nil && len(v.AfterExtra) == 0 && string(v.Value.(hujson.Literal)) == "0"
}

// removeMember takes member i out of obj, so that removing the member
// insert appended gives back the bytes before it.
func removeMember(obj *hujson.Object, i int) {
	n := len(obj.Members)
	removed := obj.Members[i]
	obj.Members = append(obj.Members[:i:i], obj.Members[i+1:]...)
	switch {
	case n == 1:
		if isBlank(obj.AfterExtra) && isBlank(removed.Name.BeforeExtra) && isBlank(removed.Value.AfterExtra) {
			obj.AfterExtra = nil
		}
	case i == n-1 && removed.Value.AfterExtra == nil: // it had no trailing comma
		prev := &obj.Members[i-1].Value
		obj.AfterExtra = append(bytes.Clone(prev.AfterExtra), obj.AfterExtra...)
		prev.AfterExtra = nil
	case i == n-1: // it had one: the new last member keeps it
		if prev := &obj.Members[i-1].Value; prev.AfterExtra == nil {
			prev.AfterExtra = []byte{}
		}
	}
}

func jsonRemove(src []byte, keyPath []string, name string) ([]byte, error) {
	return jsonRemoveMember(src, keyPath, name, false)
}

// jsonRemoveMember is jsonRemove; keepBlank leaves an object that had only
// that member with the blanks it has inside (a flag jsonSetFlag added to
// an empty entry: "{ }" comes back as it was).
func jsonRemoveMember(src []byte, keyPath []string, name string, keepBlank bool) ([]byte, error) {
	d, err := parseJSON(src)
	if err != nil {
		return nil, err
	}
	objs, _, err := d.walk(keyPath)
	if err != nil {
		return nil, fmt.Errorf("removing %s: %w", keyPathString(keyPath, name), err)
	}
	if len(objs) < len(keyPath)+1 {
		return src, nil
	}
	obj := objs[len(objs)-1]
	i, err := member(obj, name)
	if err != nil {
		return nil, fmt.Errorf("removing %s: %w", keyPathString(keyPath, name), err)
	}
	if i < 0 {
		return src, nil
	}
	after := obj.AfterExtra
	removeMember(obj, i)
	if keepBlank && len(obj.Members) == 0 && isBlank(after) {
		obj.AfterExtra = after
	}
	return d.checked(src, keyPath, name, nil)
}

// jsonPrune removes the last key of keyPath when it holds an empty object
// without comments; nil when it does not.
func jsonPrune(src []byte, keyPath []string) ([]byte, error) {
	d, err := parseJSON(src)
	if err != nil {
		return nil, err
	}
	objs, _, err := d.walk(keyPath)
	if err != nil || len(objs) < len(keyPath)+1 {
		return nil, err
	}
	last := objs[len(objs)-1]
	if len(last.Members) > 0 || !isBlank(last.AfterExtra) {
		return nil, nil
	}
	parent := objs[len(objs)-2]
	i, err := member(parent, keyPath[len(keyPath)-1])
	if err != nil {
		return nil, err
	}
	removeMember(parent, i)
	return d.pack(), nil
}

// sameJSON says whether two JSON texts hold the same value.
func sameJSON(a, b []byte) bool {
	va, erra := decodeJSON(a)
	vb, errb := decodeJSON(b)
	return erra == nil && errb == nil && reflect.DeepEqual(va, vb)
}

func decodeJSON(b []byte) (any, error) {
	b = bytes.TrimPrefix(b, bom)
	std, err := hujson.Standardize(bytes.Clone(b))
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(std))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// checked packs the edited document and proves the edit changed only the
// entry: the result decodes to the original with the entry set (want) or
// removed (want nil). Anything else is refused and nothing is written.
func (d *jsonDoc) checked(src []byte, keyPath []string, name string, want []byte) ([]byte, error) {
	out := d.pack()
	before, err := decodeJSON(src)
	if len(bytes.TrimSpace(bytes.TrimPrefix(src, bom))) == 0 {
		before, err = map[string]any{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("checking the edit: %w", err)
	}
	after, err := decodeJSON(out)
	if err != nil {
		return nil, fmt.Errorf("%w: the edited file does not parse (%v)", ErrUnsupported, err)
	}
	var wantV any
	if want != nil {
		if wantV, err = decodeJSON(want); err != nil {
			return nil, err
		}
	}
	setPath(before, append(append([]string(nil), keyPath...), name), wantV, want != nil)
	if !reflect.DeepEqual(before, after) {
		return nil, fmt.Errorf("%w: the edit of %s would change more than the entry", ErrUnsupported, keyPathString(keyPath, name))
	}
	return out, nil
}

// setPath sets (or deletes) the value at path in nested maps, creating
// maps as needed.
func setPath(v any, path []string, val any, set bool) {
	m, ok := v.(map[string]any)
	if !ok {
		return
	}
	for _, k := range path[:len(path)-1] {
		next, ok := m[k].(map[string]any)
		if !ok {
			if !set {
				return
			}
			next = map[string]any{}
			m[k] = next
		}
		m = next
	}
	if set {
		m[path[len(path)-1]] = val
	} else {
		delete(m, path[len(path)-1])
	}
}
