// Package visible writes text that comes from outside the hub (an upstream
// server's tool descriptions and errors, a model's results and logs, the
// commands in an agent's config) so that what a person reads is what the
// text holds. A terminal acts on some characters instead of showing them
// (ESC starts a sequence that moves the cursor, clears or hides lines,
// sets the window title or the clipboard; CR returns to the start of the
// line), and some characters change how the text around them shows
// without showing themselves (a bidi override reverses it). Each of them
// is written as an escape, one JSON reads as the same character, so the
// rule serves JSON text as well.
package visible

import (
	"io"
	"strconv"
	"sync"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Hidden reports whether r acts on a terminal, or changes how the text
// around it shows, instead of showing itself: a C0 control other than \n
// and \t (ESC, CR, BEL, BS…), DEL, a C1 control (U+0080–U+009F), or a
// format character (Unicode category Cf: bidi controls such as U+202E and
// U+2066–U+2069, zero-width and tag characters, the soft hyphen).
func Hidden(r rune) bool {
	return r < 0x20 && r != '\n' && r != '\t' || r >= 0x7f && r <= 0x9f || unicode.Is(unicode.Cf, r)
}

// Escape is b with every hidden character written as an escape (\r, \b, \f
// or \u and four hex digits, a pair of them above U+FFFF), which JSON
// reads as the same character, and every byte that is not part of a UTF-8
// character as \x and two hex digits. It is b itself when there is
// nothing to escape. In JSON text (with no CR between its tokens, which
// encoding/json never writes) hidden characters can only be in strings,
// so the JSON keeps its values.
func Escape(b []byte) []byte {
	if clean(b, false) {
		return b
	}
	return appendEscaped(nil, b, false)
}

// Line is s as one line: Escape, and \n and \t written as escapes too, for
// a field meant to be one line (a summary, a name, a command), where a
// newline would let the text forge the lines after it.
func Line(s string) string {
	if clean([]byte(s), true) {
		return s
	}
	return string(appendEscaped(nil, []byte(s), true))
}

// escaped reports whether r is written as an escape.
func escaped(r rune, line bool) bool {
	return Hidden(r) || line && (r == '\n' || r == '\t')
}

// clean reports whether text has nothing to escape.
func clean(text []byte, line bool) bool {
	for len(text) > 0 {
		r, size := utf8.DecodeRune(text)
		if r == utf8.RuneError && size == 1 || escaped(r, line) {
			return false
		}
		text = text[size:]
	}
	return true
}

// appendEscaped appends text to b, escaped as Escape (and Line when line)
// writes it.
func appendEscaped(b, text []byte, line bool) []byte {
	for len(text) > 0 {
		r, size := utf8.DecodeRune(text)
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, `\x`...)
			b = appendHex(b, rune(text[0]), 2)
		case escaped(r, line):
			b = appendEscape(b, r)
		default:
			b = append(b, text[:size]...)
		}
		text = text[size:]
	}
	return b
}

// appendEscape appends the JSON escape of r.
func appendEscape(b []byte, r rune) []byte {
	switch r {
	case '\n':
		return append(b, `\n`...)
	case '\t':
		return append(b, `\t`...)
	case '\r':
		return append(b, `\r`...)
	case '\b':
		return append(b, `\b`...)
	case '\f':
		return append(b, `\f`...)
	}
	if r > 0xffff {
		r1, r2 := utf16.EncodeRune(r)
		return appendEscape(appendEscape(b, r1), r2)
	}
	return appendHex(append(b, `\u`...), r, 4)
}

func appendHex(b []byte, r rune, digits int) []byte {
	h := strconv.FormatInt(int64(r), 16)
	for i := len(h); i < digits; i++ {
		b = append(b, '0')
	}
	return append(b, h...)
}

// Writer writes what is written to it to another writer, escaped as Escape
// writes it. A character split across two writes is held back until its
// end arrives; Flush writes what is held (a sequence that never ended, as
// \x escapes). It is safe for concurrent use.
type Writer struct {
	mu   sync.Mutex
	w    io.Writer
	held []byte // the start of a UTF-8 sequence the last write ended in
	buf  []byte
}

// NewWriter returns a Writer that writes to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write escapes p and writes it; it reports len(p) unless the underlying
// writer failed.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	text := p
	if len(w.held) > 0 {
		text = append(w.held, p...)
		w.held = nil
	}
	end := len(text) - incomplete(text)
	w.buf = appendEscaped(w.buf[:0], text[:end], false)
	w.held = append(w.held, text[end:]...)
	if len(w.buf) > 0 {
		if _, err := w.w.Write(w.buf); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// Flush writes the start of a character a write ended in, as \x escapes:
// nothing came to end it.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.held) == 0 {
		return nil
	}
	b := appendEscaped(nil, w.held, false)
	w.held = nil
	_, err := w.w.Write(b)
	return err
}

// incomplete is the length of the UTF-8 sequence b ends in that is not
// complete yet (0 when b ends in a whole character or in bytes that cannot
// become one).
func incomplete(b []byte) int {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax+1; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return len(b) - i
			}
			return 0
		}
	}
	return 0
}
