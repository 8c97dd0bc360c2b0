// Package edit writes one MCP server entry into an agent harness's config
// file, and takes it out again, changing only the entry's bytes: comments,
// key order, indentation, trailing commas, line endings, a byte order mark
// and every other key stay byte for byte. It also snapshots the files it is
// about to change, writes them atomically without overwriting a file that
// changed meanwhile, and restores a snapshot byte for byte (rollback).
package edit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Format is how a config file is written.
type Format string

// The formats edit writes.
const (
	JSON  Format = "json"
	JSONC Format = "jsonc" // JSON with comments and trailing commas
	TOML  Format = "toml"
)

// Field is one key of an entry.
type Field struct {
	Key   string
	Value any // string, []string, bool, or map[string]string
}

// Entry is a server entry: its keys in the order they are written.
type Entry []Field

// MarshalJSON writes the fields in order.
func (e Entry) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range e {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := marshal(f.Key)
		if err != nil {
			return nil, err
		}
		v, err := marshal(f.Value)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// marshal is json.Marshal without HTML escaping (a path with & stays as is).
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// ErrUnsupported is returned for a file edit does not change, to keep it
// intact: the entry is written in a form edit cannot rewrite exactly.
var ErrUnsupported = errors.New("cannot edit this file without changing more than the entry")

// SetEntry returns src with the entry name set to entry in the object at
// keyPath (created when missing). The keys the entry already has that are
// neither entry's nor owned (a timeout, or trust, the person added) stay,
// after entry's; owned are keys the caller writes, taken out when entry
// does not set them. An entry that already holds the same value leaves src
// unchanged.
func SetEntry(format Format, src []byte, keyPath []string, name string, entry Entry, owned ...string) ([]byte, error) {
	if len(keyPath) == 0 {
		return nil, errors.New("setting an entry: empty key path")
	}
	switch format {
	case JSON, JSONC:
		entry, err := jsonKeep(src, keyPath, name, entry, owned)
		if err != nil {
			return nil, err
		}
		return jsonSet(src, keyPath, name, entry)
	case TOML:
		return tomlSet(src, keyPath, name, entry, owned)
	}
	return nil, fmt.Errorf("setting an entry: unknown format %q", format)
}

// RemoveEntry returns src without the entry name of the object at keyPath;
// src unchanged when there is none.
func RemoveEntry(format Format, src []byte, keyPath []string, name string) ([]byte, error) {
	if len(keyPath) == 0 {
		return nil, errors.New("removing an entry: empty key path")
	}
	switch format {
	case JSON, JSONC:
		return jsonRemove(src, keyPath, name)
	case TOML:
		return tomlRemove(src, keyPath, name)
	}
	return nil, fmt.Errorf("removing an entry: unknown format %q", format)
}

// Missing says how many keys at the end of keyPath src does not have: what
// SetEntry will create, and Prune can take out again.
func Missing(format Format, src []byte, keyPath []string) (int, error) {
	switch format {
	case JSON, JSONC:
		return jsonMissing(src, keyPath)
	case TOML:
		return 0, nil // a [a.b.name] table creates its parents implicitly
	}
	return 0, fmt.Errorf("reading %q: unknown format", format)
}

// Prune takes out the last n keys of keyPath when what they hold is empty
// (no entries, no comments): the inverse of what SetEntry created when
// Missing said n.
func Prune(format Format, src []byte, keyPath []string, n int) ([]byte, error) {
	if n <= 0 || format == TOML {
		return src, nil
	}
	if n > len(keyPath) {
		n = len(keyPath)
	}
	out := src
	for i := len(keyPath); i > len(keyPath)-n; i-- {
		next, err := jsonPrune(out, keyPath[:i])
		if err != nil {
			return nil, err
		}
		if next == nil {
			break // not empty: keep it and its parents
		}
		out = next
	}
	return out, nil
}

// Unprune gives back blank, the whitespace a file held before connect
// made it an object (SnapFile.Blank), when src is that object again with
// nothing in it (no member, no comment): disconnect's inverse of reading an
// empty file as "{}". Anything else in src keeps it as it is.
func Unprune(format Format, src []byte, blank *string) []byte {
	if blank == nil || (format != JSON && format != JSONC) {
		return src
	}
	if string(bytes.TrimSpace(bytes.TrimPrefix(src, bom))) != "{}" {
		return src
	}
	return []byte(*blank)
}

// newline is the file's line ending: CRLF when it uses one, else LF.
func newline(src []byte) string {
	if i := bytes.IndexByte(src, '\n'); i > 0 && src[i-1] == '\r' {
		return "\r\n"
	}
	return "\n"
}

var bom = []byte("\xEF\xBB\xBF")

// lineIndent is the run of spaces and tabs at the start of the line holding
// offset.
func lineIndent(src []byte, offset int) string {
	start := bytes.LastIndexByte(src[:offset], '\n') + 1
	end := start
	for end < len(src) && (src[end] == ' ' || src[end] == '\t') {
		end++
	}
	return string(src[start:end])
}

// quoteTOML writes a TOML basic string (a JSON string is one).
func quoteTOML(s string) string {
	b, _ := marshal(s)
	return string(b)
}

// ownKey reports whether key is one entry sets or the caller owns.
func ownKey(entry Entry, owned []string, key string) bool {
	return slices.Contains(owned, key) || slices.ContainsFunc(entry, func(f Field) bool { return f.Key == key })
}

func keyPathString(keyPath []string, name string) string {
	return strings.Join(append(append([]string(nil), keyPath...), name), ".")
}
