package cli

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/source"
	"github.com/capabilities-sh/capabilities/engine/visible"
	"golang.org/x/term"
)

// startStatus shows how the start of a local server goes while add or
// import waits on it (npx downloading a package can take a minute): on a
// terminal, a status line on stderr rewritten in place from the first
// second; otherwise a plain line on stderr after 5 s and every 10 s.
// Nothing goes to stdout.
type startStatus struct {
	mu    sync.Mutex
	w     io.Writer // the terminal itself, or the command's stderr
	tty   bool
	width int
	drawn string        // the status line on the terminal ("" for none)
	next  time.Duration // when the next plain line is due
	last  string        // the command of the start shown last
}

const (
	statusFirstLine = 5 * time.Second  // a plain line, not before
	statusEvery     = 10 * time.Second // and then every
)

// startOptions are hub options that show how starts go on e's stderr.
func (e *env) startOptions() hub.Options {
	if e.status == nil {
		s := &startStatus{w: e.stderr, next: statusFirstLine}
		if f, ok := e.rawErr.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
			s.w, s.tty, s.width = f, true, 80
			if w, _, err := term.GetSize(int(f.Fd())); err == nil && w > 20 {
				s.width = w
			}
		}
		e.status = s
	}
	var o hub.Options
	o.Source.OnStart = e.status.update
	return o
}

// clearStatus takes the status line off the terminal: the start ended.
func (e *env) clearStatus() {
	if e.status != nil {
		e.status.clear()
	}
}

func (s *startStatus) update(st source.StartStatus) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st.Command != s.last { // another server, or the same started again
		s.last, s.next = st.Command, max(statusFirstLine, st.Elapsed)
	}
	text := fmt.Sprintf("starting %s: %d s, %s", visible.Line(st.Command), int(st.Elapsed.Seconds()), st.Waiting)
	if st.Idle >= 3*time.Second {
		text += fmt.Sprintf("; no output or CPU time for %d s", int(st.Idle.Seconds()))
	}
	if s.tty {
		if st.Elapsed < time.Second {
			return
		}
		if st.Stderr != "" {
			text += " · " + visible.Line(st.Stderr)
		}
		if text = fit(text, s.width-1); text != s.drawn {
			fmt.Fprintf(s.w, "\r\x1b[K%s", text)
			s.drawn = text
		}
		return
	}
	if st.Elapsed < s.next {
		return
	}
	s.next = st.Elapsed + statusEvery
	if st.Stderr != "" {
		text += "; its stderr ends with: " + visible.Line(st.Stderr)
	}
	fmt.Fprintf(s.w, "capabilities: %s\n", text)
}

func (s *startStatus) clear() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.drawn != "" {
		fmt.Fprint(s.w, "\r\x1b[K")
		s.drawn = ""
	}
	s.last = ""
}

// fit cuts text to n characters, ending in … when cut.
func fit(text string, n int) string {
	r := []rune(text)
	if len(r) <= n {
		return text
	}
	return strings.TrimRight(string(r[:max(n-1, 0)]), " ") + "…"
}
