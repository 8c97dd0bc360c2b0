package edit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/tailscale/hujson"
)

// SetFlag returns src with key set to value in the entry at entryPath (the
// servers object's key path and the entry's name): Codex's enabled = false,
// Windsurf's "disabled": true. The entry must exist; only that key's bytes
// change.
func SetFlag(format Format, src []byte, entryPath []string, key string, value bool) ([]byte, error) {
	if len(entryPath) < 2 {
		return nil, errors.New("setting a flag: the entry's key path is too short")
	}
	switch format {
	case JSON, JSONC:
		if err := jsonHasEntry(src, entryPath); err != nil {
			return nil, err
		}
		return jsonSetFlag(src, entryPath, key, value)
	case TOML:
		return tomlSetFlag(src, entryPath, key, value)
	}
	return nil, fmt.Errorf("setting a flag: unknown format %q", format)
}

// RemoveFlag returns src without key in the entry at entryPath (src
// unchanged when the entry or the key is not there).
func RemoveFlag(format Format, src []byte, entryPath []string, key string) ([]byte, error) {
	if len(entryPath) < 2 {
		return nil, errors.New("removing a flag: the entry's key path is too short")
	}
	switch format {
	case JSON, JSONC:
		return jsonRemoveMember(src, entryPath, key, true)
	case TOML:
		return tomlRemoveFlag(src, entryPath, key)
	}
	return nil, fmt.Errorf("removing a flag: unknown format %q", format)
}

// PutBack returns src with the entry name set to text, what Take gave for
// it (its layout and comments kept), in a JSON or JSONC file, where Where
// found it: after the member it followed, first, or before the member it
// preceded, whichever is still there (else last, as for the zero Place).
func PutBack(format Format, src []byte, keyPath []string, name string, text string, at Place) ([]byte, error) {
	if format != JSON && format != JSONC {
		return nil, fmt.Errorf("putting back %s: a JSON entry in a %s file", keyPathString(keyPath, name), format)
	}
	if len(keyPath) == 0 {
		return nil, errors.New("putting back an entry: empty key path")
	}
	if _, err := hujson.Parse([]byte(text)); err != nil {
		return nil, fmt.Errorf("putting back %s: the entry does not parse: %w", keyPathString(keyPath, name), err)
	}
	return jsonSetText(src, keyPath, name, []byte(text), true, at)
}

// Take is the text of the entry name of the object at keyPath, as written
// (comments and layout kept), and whether there is one: what PutBack
// writes again. JSON and JSONC only.
func Take(format Format, src []byte, keyPath []string, name string) (string, bool, error) {
	if format != JSON && format != JSONC {
		return "", false, fmt.Errorf("taking %s: a JSON entry in a %s file", keyPathString(keyPath, name), format)
	}
	d, err := parseJSON(src)
	if err != nil {
		return "", false, err
	}
	objs, _, err := d.walk(keyPath)
	if err != nil || len(objs) < len(keyPath)+1 {
		return "", false, err
	}
	i, err := member(objs[len(objs)-1], name)
	if err != nil || i < 0 {
		return "", false, err
	}
	v := objs[len(objs)-1].Members[i].Value
	v.BeforeExtra, v.AfterExtra = nil, nil
	return string(v.Pack()), true, nil
}

// Place is where an entry sat in its object, for PutBack: after the
// member After, or First; Before is the member that followed it ("" when
// it was last), Index its position, Lead the text before its name as
// written (the blanks and comments above it), Comma what stood between it
// and the comma after it (nil: no comma; last with a trailing comma, "" or
// blanks). The zero Place is unknown:
// PutBack puts the entry last.
type Place struct {
	After  string  `json:"after,omitempty"`
	First  bool    `json:"first,omitempty"`
	Before string  `json:"before,omitempty"`
	Index  int     `json:"index,omitempty"`
	Lead   string  `json:"lead,omitempty"`
	Comma  *string `json:"comma,omitempty"`
	// Tail is what stood between the entry and the object's closing brace
	// when it was last (blanks, comments); nil when it was not.
	Tail *string `json:"tail,omitempty"`
	// Key is the entry's name as written, to its value: the quoted name,
	// the colon and the blanks around it ("name": ).
	Key *string `json:"key,omitempty"`
}

// Where is the Place of the entry name of the object at keyPath, and
// whether there is one. JSON and JSONC only.
func Where(format Format, src []byte, keyPath []string, name string) (Place, bool, error) {
	if format != JSON && format != JSONC {
		return Place{}, false, fmt.Errorf("finding %s: a JSON entry in a %s file", keyPathString(keyPath, name), format)
	}
	d, err := parseJSON(src)
	if err != nil {
		return Place{}, false, err
	}
	objs, _, err := d.walk(keyPath)
	if err != nil || len(objs) < len(keyPath)+1 {
		return Place{}, false, err
	}
	obj := objs[len(objs)-1]
	i, err := member(obj, name)
	if err != nil || i < 0 {
		return Place{}, false, err
	}
	name0 := func(j int) string {
		lit, _ := obj.Members[j].Name.Value.(hujson.Literal)
		return lit.String()
	}
	last := i == len(obj.Members)-1
	p := Place{Index: i, First: i == 0, Lead: string(obj.Members[i].Name.BeforeExtra)}
	if c := obj.Members[i].Value.AfterExtra; c != nil {
		comma := string(c)
		p.Comma = &comma
	}
	if last {
		tail := string(obj.AfterExtra)
		p.Tail = &tail
	}
	nm := obj.Members[i].Name
	nm.BeforeExtra = nil
	key := string(nm.Pack()) + ":" + string(obj.Members[i].Value.BeforeExtra)
	p.Key = &key
	if i > 0 {
		p.After = name0(i - 1)
	}
	if i+1 < len(obj.Members) {
		p.Before = name0(i + 1)
	}
	return p, true, nil
}

func jsonHasEntry(src []byte, entryPath []string) error {
	d, err := parseJSON(src)
	if err != nil {
		return err
	}
	objs, _, err := d.walk(entryPath)
	if err != nil {
		return fmt.Errorf("setting a flag of %s: %w", strings.Join(entryPath, "."), err)
	}
	if len(objs) < len(entryPath)+1 {
		return fmt.Errorf("setting a flag of %s: there is no such entry", strings.Join(entryPath, "."))
	}
	return nil
}

// flagLine finds, in the entry's own table (not its sub-tables), the line
// that sets key: its start and end (line break included), or -1.
func (d *tomlDoc) flagLine(s span, key string) (start, end, header int) {
	body := d.src[s.start:s.end]
	header = bytes.IndexByte(body, '\n') + 1
	if header == 0 {
		header = len(body)
	}
	re := regexp.MustCompile(`^[ \t]*(` + regexp.QuoteMeta(key) + `|"` + regexp.QuoteMeta(key) + `")[ \t]*=`)
	for off := header; off < len(body); {
		lineEnd := bytes.IndexByte(body[off:], '\n')
		next := len(body)
		if lineEnd >= 0 {
			next = off + lineEnd + 1
		}
		line := body[off:next]
		if bytes.HasPrefix(bytes.TrimLeft(line, " \t"), []byte("[")) {
			break // a sub-table: the entry's own keys are over
		}
		if re.Match(line) {
			return s.start + off, s.start + next, s.start + header
		}
		off = next
	}
	return -1, -1, s.start + header
}

// boolValue is a key = true|false line; group 1 is the value.
var boolValue = regexp.MustCompile(`^[^=]*=[ \t]*(true|false)\b`)

func tomlSetFlag(src []byte, entryPath []string, key string, value bool) ([]byte, error) {
	d, err := parseTOML(src)
	if err != nil {
		return nil, err
	}
	path := append(append([]string(nil), entryPath...), key)
	if _, ok := lookup(d.values, entryPath); !ok {
		return nil, fmt.Errorf("setting %s: there is no such entry", strings.Join(path, "."))
	}
	if have, ok := lookup(d.values, path); ok && have == value {
		return src, nil
	}
	s, err := d.locate(entryPath)
	if err != nil {
		return nil, err
	}
	if !s.found {
		return nil, fmt.Errorf("%w: %s is not written as a [%s] table", ErrUnsupported, strings.Join(entryPath, "."), strings.Join(entryPath, "."))
	}
	line := tomlKey(key) + " = " + fmt.Sprint(value) + d.nl
	start, end, header := d.flagLine(s, key)
	switch {
	case start < 0: // a new line right under the header
		start, end = header, header
		if header == len(d.src) && !bytes.HasSuffix(d.src, []byte("\n")) {
			line = d.nl + strings.TrimSuffix(line, d.nl) // the file still ends without a line break
		}
	case boolValue.Match(d.src[start:end]):
		// Only the value changes: spacing, a comment and the line break stay.
		m := boolValue.FindSubmatchIndex(d.src[start:end])
		start, end = start+m[2], start+m[3]
		line = fmt.Sprint(value)
	default: // another kind of value: the line is written anew
		if !bytes.HasSuffix(d.src[start:end], []byte("\n")) {
			line = strings.TrimSuffix(line, d.nl)
		}
	}
	out := append(append(append([]byte(nil), d.src[:start]...), line...), d.src[end:]...)
	return d.checked(out, path, value, true)
}

func tomlRemoveFlag(src []byte, entryPath []string, key string) ([]byte, error) {
	d, err := parseTOML(src)
	if err != nil {
		return nil, err
	}
	path := append(append([]string(nil), entryPath...), key)
	if _, ok := lookup(d.values, path); !ok {
		return src, nil
	}
	s, err := d.locate(entryPath)
	if err != nil {
		return nil, err
	}
	start, end, _ := d.flagLine(s, key)
	if !s.found || start < 0 {
		return nil, fmt.Errorf("%w: %s is not written as a line of the [%s] table", ErrUnsupported, strings.Join(path, "."), strings.Join(entryPath, "."))
	}
	if end == len(d.src) && !bytes.HasSuffix(d.src, []byte("\n")) {
		// The last line, without a line break: the one before it goes.
		start -= len(d.nl)
		if start < 0 || !bytes.HasPrefix(d.src[start:], []byte(d.nl)) {
			start += len(d.nl)
		}
	}
	out := append(append([]byte(nil), d.src[:start]...), d.src[end:]...)
	return d.checked(out, path, nil, false)
}

// EntryJSON is the value at keyPath/name as compact JSON, and whether
// there is one (a flag's value before an edit, an entry's presence).
func EntryJSON(format Format, src []byte, keyPath []string, name string) (json.RawMessage, bool, error) {
	var v any
	switch format {
	case JSON, JSONC:
		doc, err := decodeJSON(src)
		if err != nil {
			return nil, false, err
		}
		v = doc
	case TOML:
		d, err := parseTOML(src)
		if err != nil {
			return nil, false, err
		}
		v = d.values
	default:
		return nil, false, fmt.Errorf("reading %q: unknown format", format)
	}
	for _, k := range append(append([]string(nil), keyPath...), name) {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false, nil
		}
		if v, ok = m[k]; !ok {
			return nil, false, nil
		}
	}
	b, err := marshal(v)
	if err != nil {
		return nil, false, err
	}
	return b, true, nil
}
