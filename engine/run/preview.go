package run

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/capabilities-sh/capabilities/engine/visible"
)

// PreviewArgs is what a person reads of a call's arguments before deciding
// on it: compact JSON of at most limit bytes that keeps every field, in the
// order the code wrote them. A preview cut at its first limit bytes let code
// put a long harmless value first and the field that matters (a path, a
// recipient) after the cut, or append a payload to a long text. So the
// longest strings are shortened first, each to its head and its tail around
// a marker saying how much is not shown; then long arrays keep their first
// items and a marker; only when the fields alone do not fit are the last
// fields replaced by one marker. Arguments that are not JSON are shown as a
// string, cut the same way; bytes that are not UTF-8 as U+FFFD. Characters
// that change how text shows without showing themselves (bidi overrides,
// zero-width and tag characters, C1 controls) are written as \u escapes
// (visible.Escape): "/tmp/\u202egnp.sh" cannot pass for "/tmp/hs.png".
func PreviewArgs(args json.RawMessage, limit int) json.RawMessage {
	var compact bytes.Buffer
	if err := json.Compact(&compact, args); err != nil {
		return fitString(string(args), limit)
	}
	if utf8.Valid(compact.Bytes()) {
		if b := visible.Escape(compact.Bytes()); len(b) <= limit {
			return b
		}
	}
	var v node
	d := json.NewDecoder(bytes.NewReader(compact.Bytes()))
	d.UseNumber()
	if err := v.decode(d); err != nil {
		return fitString(compact.String(), limit)
	}
	// The widest string cap, then the widest item count, that fit.
	for _, items := range []int{1 << 30, 64, 16, 4, 1} {
		lo, hi := 16, limit // string caps in runes
		if b := v.render(lo, items, 1<<30); len(b) > limit {
			continue
		}
		for lo < hi {
			mid := (lo + hi + 1) / 2
			if len(v.render(mid, items, 1<<30)) <= limit {
				lo = mid
			} else {
				hi = mid - 1
			}
		}
		return v.render(lo, items, 1<<30)
	}
	// Too many fields: the first ones, and a marker for the rest.
	for fields := 256; fields >= 1; fields /= 2 {
		if b := v.render(16, 1, fields); len(b) <= limit {
			return b
		}
	}
	return fitString(compact.String(), limit)
}

// fitString is s as a JSON string of at most limit bytes, shortened as
// little as that allows (escapes make some characters 6 bytes long).
func fitString(s string, limit int) json.RawMessage {
	if b := marshalString(s); len(b) <= limit {
		return b // whole: no search
	}
	n := utf8.RuneCountInString(s)
	lo, hi := 0, n
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if len(marshalString(shortenN(s, n, mid))) <= limit {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return marshalString(shortenN(s, n, lo))
}

// marshalString is s as a JSON string, its hidden characters escaped.
func marshalString(s string) []byte {
	b, _ := json.Marshal(s)
	return visible.Escape(b)
}

// node is a decoded JSON value that keeps the order of object fields.
type node struct {
	kind   byte // 's' string, 'a' array, 'o' object, 'v' anything else (raw)
	str    string
	runes  int // in str
	raw    json.RawMessage
	keys   []string
	values []node
}

func (n *node) decode(d *json.Decoder) error {
	t, err := d.Token()
	if err != nil {
		return err
	}
	switch t := t.(type) {
	case json.Delim:
		if t == '[' {
			n.kind = 'a'
			for d.More() {
				var c node
				if err := c.decode(d); err != nil {
					return err
				}
				n.values = append(n.values, c)
			}
		} else {
			n.kind = 'o'
			for d.More() {
				k, err := d.Token()
				if err != nil {
					return err
				}
				var c node
				if err := c.decode(d); err != nil {
					return err
				}
				n.keys = append(n.keys, k.(string))
				n.values = append(n.values, c)
			}
		}
		_, err := d.Token() // the closing delimiter
		return err
	case string:
		n.kind, n.str, n.runes = 's', t, utf8.RuneCountInString(t)
	default:
		n.kind = 'v'
		n.raw, _ = json.Marshal(t)
	}
	return nil
}

// render writes n with strings cut to runes, arrays to items and objects to
// fields.
func (n *node) render(runes, items, fields int) []byte {
	var b bytes.Buffer
	n.write(&b, runes, items, fields)
	return b.Bytes()
}

func (n *node) write(b *bytes.Buffer, runes, items, fields int) {
	switch n.kind {
	case 's':
		b.Write(marshalString(shortenN(n.str, n.runes, runes)))
	case 'a':
		b.WriteByte('[')
		for i := range n.values {
			if i == items {
				s, _ := json.Marshal(fmt.Sprintf("…[%d more items not shown]", len(n.values)-items))
				b.WriteByte(',')
				b.Write(s)
				break
			}
			if i > 0 {
				b.WriteByte(',')
			}
			n.values[i].write(b, runes, items, fields)
		}
		b.WriteByte(']')
	case 'o':
		b.WriteByte('{')
		for i := range n.values {
			if i > 0 {
				b.WriteByte(',')
			}
			if i == fields {
				s, _ := json.Marshal(fmt.Sprintf("%d more fields not shown", len(n.values)-fields))
				b.WriteString(`"…":`)
				b.Write(s)
				break
			}
			b.Write(marshalString(n.keys[i]))
			b.WriteByte(':')
			n.values[i].write(b, runes, items, fields)
		}
		b.WriteByte('}')
	default:
		b.Write(n.raw)
	}
}

// shortenN keeps s, which has n runes, or its head and tail around a
// marker when it has more than max: a payload appended to a long text
// shows at its end.
func shortenN(s string, n, max int) string {
	if n <= max {
		return s
	}
	marker := "…[" + strconv.Itoa(n) + " characters, middle not shown]…"
	keep := max - utf8.RuneCountInString(marker)
	if keep < 2 {
		keep = 2
	}
	head, tail := keep*2/3, keep-keep*2/3
	h := 0
	for i := 0; i < head; i++ {
		_, size := utf8.DecodeRuneInString(s[h:])
		h += size
	}
	t := len(s)
	for i := 0; i < tail; i++ {
		_, size := utf8.DecodeLastRuneInString(s[:t])
		t -= size
	}
	return s[:h] + marker + s[t:]
}
