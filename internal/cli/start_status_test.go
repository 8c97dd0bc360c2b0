package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/source"
	"github.com/google/go-cmp/cmp"
)

// TestStartStatusPlainLines: when stderr is not a terminal, how a start
// goes is a plain line after 5 s and every 10 s, its upstream's text made
// visible (an escape sequence in its stderr is not sent to the terminal).
func TestStartStatusPlainLines(t *testing.T) {
	var b bytes.Buffer
	s := &startStatus{w: &b, next: statusFirstLine}
	for _, sec := range []int{1, 4, 5, 6, 14, 15, 16} {
		s.update(source.StartStatus{Command: "npx -y x", Elapsed: time.Duration(sec) * time.Second, Waiting: "waiting for it to read the MCP handshake", Stderr: "fetch \x1b[2J" + string(rune('0'+sec%10))})
	}
	s.update(source.StartStatus{Command: "npx -y x", Elapsed: 26 * time.Second, Waiting: "waiting for its answer to the MCP handshake", Idle: 4 * time.Second})
	s.clear()
	want := `capabilities: starting npx -y x: 5 s, waiting for it to read the MCP handshake; its stderr ends with: fetch \u001b[2J5
capabilities: starting npx -y x: 15 s, waiting for it to read the MCP handshake; its stderr ends with: fetch \u001b[2J5
capabilities: starting npx -y x: 26 s, waiting for its answer to the MCP handshake; no output or CPU time for 4 s
`
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("stderr (-want +got):\n%s", diff)
	}
}

// TestStartStatusLine: on a terminal, the status line is drawn from the
// first second, redrawn only when it changes, cut to the terminal's width,
// and cleared when the start ended.
func TestStartStatusLine(t *testing.T) {
	var b bytes.Buffer
	s := &startStatus{w: &b, tty: true, width: 60, next: statusFirstLine}
	st := source.StartStatus{Command: "npx -y x", Waiting: "waiting for the MCP handshake", Stderr: "npm warn something long enough to be cut at the width"}
	for _, ms := range []int{500, 1000, 1200, 2000} {
		st.Elapsed = time.Duration(ms) * time.Millisecond
		s.update(st)
	}
	s.clear()
	lines := strings.Split(b.String(), "\r\x1b[K")
	want := []string{"", "starting npx -y x: 1 s, waiting for the MCP handshake · np…", "starting npx -y x: 2 s, waiting for the MCP handshake · np…", ""}
	if diff := cmp.Diff(want, lines); diff != "" {
		t.Errorf("terminal (-want +got):\n%s", diff)
	}
}
