package edit

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"

	toml "github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
)

// tomlDoc is a parsed TOML file: its values, and where the tables of one
// entry are written.
type tomlDoc struct {
	bom    bool
	src    []byte // without the BOM
	nl     string
	values map[string]any
}

func parseTOML(src []byte) (*tomlDoc, error) {
	d := &tomlDoc{}
	if bytes.HasPrefix(src, bom) {
		d.bom, src = true, src[len(bom):]
	}
	d.src, d.nl = src, newline(src)
	d.values = map[string]any{}
	if err := toml.Unmarshal(src, &d.values); err != nil {
		var de *toml.DecodeError
		if errors.As(err, &de) {
			row, col := de.Position()
			return nil, fmt.Errorf("parsing: line %d, column %d: %s", row, col, de.Error())
		}
		return nil, fmt.Errorf("parsing: %w", err)
	}
	return d, nil
}

func (d *tomlDoc) with(body []byte) []byte {
	if d.bom {
		return append(append([]byte(nil), bom...), body...)
	}
	return body
}

// span is where the entry's tables are written: from the first byte of its
// header's line to the end of the line of its last key (line break
// included). found is false when no table header names the entry.
type span struct {
	start, end int
	found      bool
}

// locate finds the [a.b.name] table of the entry and its sub-tables
// ([a.b.name.env]); they must follow one another.
func (d *tomlDoc) locate(path []string) (span, error) {
	var s span
	p := unstable.Parser{KeepComments: true}
	p.Reset(d.src)
	inEntry, done := false, false
	lineEnd := func(off int) int {
		if i := bytes.IndexByte(d.src[off:], '\n'); i >= 0 {
			return off + i + 1
		}
		return len(d.src)
	}
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			var keys []string
			first, last := -1, 0
			it := e.Key()
			for it.Next() {
				n := it.Node()
				keys = append(keys, string(n.Data))
				if first < 0 {
					first = int(n.Raw.Offset)
				}
				last = int(n.Raw.Offset + n.Raw.Length)
			}
			mine := len(keys) >= len(path) && reflect.DeepEqual(keys[:len(path)], path)
			switch {
			case mine && e.Kind == unstable.ArrayTable:
				return s, fmt.Errorf("%w: %s is an array of tables", ErrUnsupported, strings.Join(path, "."))
			case mine && done:
				return s, fmt.Errorf("%w: the tables of %s are not written together", ErrUnsupported, strings.Join(path, "."))
			case mine:
				if !inEntry {
					s.start = bytes.LastIndexByte(d.src[:first], '\n') + 1
					s.found = true
				}
				inEntry = true
				s.end = lineEnd(last)
			case inEntry:
				inEntry, done = false, true
			}
		case unstable.KeyValue:
			if inEntry {
				s.end = lineEnd(int(e.Raw.Offset + e.Raw.Length))
			}
		}
	}
	if err := p.Error(); err != nil {
		return s, fmt.Errorf("parsing: %w", err)
	}
	return s, nil
}

var bareKey = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

func tomlKey(k string) string {
	if bareKey.MatchString(k) {
		return k
	}
	return quoteTOML(k)
}

// render writes the entry as a table: a header and one line per field.
func (d *tomlDoc) render(path []string, entry Entry) (string, error) {
	var keys []string
	for _, k := range path {
		keys = append(keys, tomlKey(k))
	}
	var b strings.Builder
	b.WriteString("[" + strings.Join(keys, ".") + "]" + d.nl)
	for _, f := range entry {
		v, err := tomlValue(f.Value)
		if err != nil {
			return "", fmt.Errorf("writing %s: %w", f.Key, err)
		}
		b.WriteString(tomlKey(f.Key) + " = " + v + d.nl)
	}
	return b.String(), nil
}

func tomlValue(v any) (string, error) {
	switch v := v.(type) {
	case string:
		return quoteTOML(v), nil
	case bool:
		return fmt.Sprint(v), nil
	case []string:
		q := make([]string, len(v))
		for i, s := range v {
			q[i] = quoteTOML(s)
		}
		return "[" + strings.Join(q, ", ") + "]", nil
	case map[string]string:
		var parts []string
		for _, k := range sortedKeys(v) {
			parts = append(parts, tomlKey(k)+" = "+quoteTOML(v[k]))
		}
		return "{ " + strings.Join(parts, ", ") + " }", nil
	}
	return "", fmt.Errorf("a value of type %T", v)
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0 && keys[j] < keys[j-1]; j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
	return keys
}

// lookup is the value at path in decoded TOML, and whether there is one.
func lookup(v map[string]any, path []string) (any, bool) {
	var cur any = v
	for _, k := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[k]; !ok {
			return nil, false
		}
	}
	return cur, true
}

func tomlSet(src []byte, keyPath []string, name string, entry Entry, owned []string) ([]byte, error) {
	d, err := parseTOML(src)
	if err != nil {
		return nil, err
	}
	path := append(append([]string(nil), keyPath...), name)
	text, err := d.render(path, entry)
	if err != nil {
		return nil, err
	}
	if _, exists := lookup(d.values, path); exists {
		kept, err := d.kept(path, entry, owned)
		if err != nil {
			return nil, err
		}
		text += kept
	}
	var want map[string]any
	if err := toml.Unmarshal([]byte(text), &want); err != nil {
		return nil, fmt.Errorf("writing the entry: %w", err)
	}
	wantV, _ := lookup(want, path)
	have, exists := lookup(d.values, path)
	if exists && reflect.DeepEqual(have, wantV) {
		return src, nil
	}
	s, err := d.locate(path)
	if err != nil {
		return nil, err
	}
	var out []byte
	switch {
	case s.found:
		out = append(append(append([]byte(nil), d.src[:s.start]...), text...), d.src[s.end:]...)
	case exists:
		return nil, fmt.Errorf("%w: %s is not written as a [%s] table", ErrUnsupported, strings.Join(path, "."), strings.Join(path, "."))
	default:
		out = append([]byte(nil), d.src...)
		if len(out) > 0 {
			out = append(out, d.nl...)
		}
		out = append(out, text...)
	}
	res, err := d.checked(out, path, wantV, true)
	if err != nil && !s.found {
		if parent := d.inline(keyPath); parent != "" {
			return nil, fmt.Errorf("%w: %s is an inline table (%s = { … }), to which no [%s] table can be added; write each of its servers as a [%s.<name>] table and run connect again", ErrUnsupported, parent, parent, strings.Join(path, "."), parent)
		}
	}
	return res, err
}

// inline is the first key of keyPath that is written as an inline table
// (key = { … }) in the file, "" when none is.
func (d *tomlDoc) inline(keyPath []string) string {
	p := unstable.Parser{}
	p.Reset(d.src)
	var table []string
	for p.NextExpression() {
		e := p.Expression()
		var keys []string
		for it := e.Key(); it.Next(); {
			keys = append(keys, string(it.Node().Data))
		}
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			table = keys
		case unstable.KeyValue:
			full := append(append([]string(nil), table...), keys...)
			if e.Value().Kind == unstable.InlineTable && len(full) <= len(keyPath) && reflect.DeepEqual(full, keyPath[:len(full)]) {
				return strings.Join(full, ".")
			}
		}
	}
	return ""
}

// kept is the text of the keys of the [path] table (and of its sub-tables)
// that are neither entry's nor owned, line by line as written: what the person added
// to the entry (startup_timeout_sec), which an update keeps.
func (d *tomlDoc) kept(path []string, entry Entry, owned []string) (string, error) {
	p := unstable.Parser{}
	p.Reset(d.src)
	ours := func(k string) bool { return ownKey(entry, owned, k) }
	lineStart := func(off int) int { return bytes.LastIndexByte(d.src[:off], '\n') + 1 }
	lineEnd := func(off int) int {
		if i := bytes.IndexByte(d.src[off:], '\n'); i >= 0 {
			return off + i + 1
		}
		return len(d.src)
	}
	// above is start moved up over the comment lines right above it.
	above := func(start int) int {
		for start > 0 {
			prev := lineStart(start - 1)
			if !bytes.HasPrefix(bytes.TrimLeft(d.src[prev:start], " \t"), []byte("#")) {
				break
			}
			start = prev
		}
		return start
	}
	var b strings.Builder
	var table []string
	keep := false // the current table is the entry's own, or a sub-table entry does not set
	for p.NextExpression() {
		e := p.Expression()
		var keys []string
		first := -1
		for it := e.Key(); it.Next(); {
			n := it.Node()
			keys = append(keys, string(n.Data))
			if first < 0 {
				first = int(n.Raw.Offset)
			}
		}
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			table = keys
			under := len(keys) > len(path) && slices.Equal(keys[:len(path)], path)
			keep = slices.Equal(keys, path) || (under && !ours(keys[len(path)]))
			if under && keep {
				start := above(lineStart(first))
				if bytes.HasSuffix(d.src[:start], []byte(d.nl+d.nl)) {
					b.WriteString(d.nl) // the blank line before a table
				}
				b.WriteString(strings.TrimRight(string(d.src[start:lineEnd(first)]), "\r\n") + d.nl)
			}
		case unstable.KeyValue:
			if !keep || first < 0 || (slices.Equal(table, path) && ours(keys[0])) {
				continue
			}
			text := string(d.src[above(lineStart(first)):lineEnd(int(e.Raw.Offset+e.Raw.Length))])
			b.WriteString(strings.TrimRight(text, "\r\n") + d.nl)
		}
	}
	if err := p.Error(); err != nil {
		return "", fmt.Errorf("parsing: %w", err)
	}
	return b.String(), nil
}

func tomlRemove(src []byte, keyPath []string, name string) ([]byte, error) {
	d, err := parseTOML(src)
	if err != nil {
		return nil, err
	}
	path := append(append([]string(nil), keyPath...), name)
	if _, exists := lookup(d.values, path); !exists {
		return src, nil
	}
	s, err := d.locate(path)
	if err != nil {
		return nil, err
	}
	if !s.found {
		return nil, fmt.Errorf("%w: %s is not written as a [%s] table", ErrUnsupported, strings.Join(path, "."), strings.Join(path, "."))
	}
	before := d.src[:s.start]
	nl := []byte(d.nl)
	// The blank line that set wrote before the table goes with it.
	if bytes.HasSuffix(before, append(nl, nl...)) || (s.end == len(d.src) && bytes.HasSuffix(before, nl)) {
		before = before[:len(before)-len(nl)]
	}
	out := append(append([]byte(nil), before...), d.src[s.end:]...)
	return d.checked(out, path, nil, false)
}

// checked proves the edit changed only the entry: out decodes to the
// original values with the entry set (or removed). Anything else is
// refused and nothing is written.
func (d *tomlDoc) checked(out []byte, path []string, want any, set bool) ([]byte, error) {
	var after map[string]any
	if err := toml.Unmarshal(out, &after); err != nil {
		return nil, fmt.Errorf("%w: the edited file would not parse (%v)", ErrUnsupported, err)
	}
	var before map[string]any
	_ = toml.Unmarshal(d.src, &before)
	if before == nil {
		before = map[string]any{}
	}
	setPath(before, path, want, set)
	if !set {
		pruneEmpty(before, after, path[:len(path)-1])
	}
	if !reflect.DeepEqual(before, after) {
		return nil, fmt.Errorf("%w: the edit of %s would change more than the entry", ErrUnsupported, strings.Join(path, "."))
	}
	return d.with(out), nil
}

// pruneEmpty: a parent table that only the removed entry made (its header
// implied it) disappears from the decoded result; so it may from before.
func pruneEmpty(before, after map[string]any, parents []string) {
	for i := len(parents); i > 0; i-- {
		if _, ok := lookup(after, parents[:i]); ok {
			return
		}
		if v, ok := lookup(before, parents[:i]); ok {
			if m, ok := v.(map[string]any); ok && len(m) == 0 {
				setPath(before, parents[:i], nil, false)
			}
		}
	}
}
