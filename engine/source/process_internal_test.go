package source

import (
	"bufio"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestProtocolReaderLineBudget: a line over the limit is dropped as it is
// read (counted as a stray, never held whole), and the lines around it
// pass.
func TestProtocolReaderLineBudget(t *testing.T) {
	const limit = 1 << 10
	for _, tc := range []struct {
		name, in, want string
		strays         int
	}{
		{"under", `{"a":1}` + "\n", `{"a":1}` + "\n", 0},
		{"over-json", `{"a":1}` + "\n" + `{"x":"` + strings.Repeat("x", 200<<10) + `"}` + "\n" + `{"b":2}` + "\n", `{"a":1}` + "\n" + `{"b":2}` + "\n", 1},
		{"over-no-newline", `{"a":1}` + "\n" + strings.Repeat("z", 200<<10), `{"a":1}` + "\n", 1},
		{"at-limit", `{"x":"` + strings.Repeat("x", limit-9) + `"}` + "\n", `{"x":"` + strings.Repeat("x", limit-9) + `"}` + "\n", 0},
		{"garbage", "hello\n" + `[1]` + "\n", `[1]` + "\n", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &process{}
			r := &protocolReader{br: bufio.NewReaderSize(strings.NewReader(tc.in), 4<<10), p: p, log: slog.New(slog.DiscardHandler), max: limit}
			got := readAll(t, r)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("passed on (-want +got):\n%s", diff)
			}
			if p.strays != tc.strays {
				t.Errorf("strays = %d, want %d", p.strays, tc.strays)
			}
		})
	}
}

// TestStrayLinesLogBudget: an upstream that prints a thousand stray lines
// gets maxStrayLogs lines in the hub's log, and every one counted.
func TestStrayLinesLogBudget(t *testing.T) {
	var logged strings.Builder
	p := &process{}
	in := strings.Repeat("working...\n", 1000) + `{"ok":1}` + "\n"
	r := &protocolReader{br: bufio.NewReader(strings.NewReader(in)), p: p, log: slog.New(slog.NewTextHandler(&logged, nil))}
	got := readAll(t, r)
	if got != `{"ok":1}`+"\n" || p.strays != 1000 {
		t.Errorf("passed on %q with %d strays, want the one protocol line and 1000", got, p.strays)
	}
	if n := strings.Count(logged.String(), "\n"); n != maxStrayLogs {
		t.Errorf("%d lines logged, want %d:\n%s", n, maxStrayLogs, logged.String())
	}
	if !strings.Contains(logged.String(), "dropping the rest without logging them") {
		t.Errorf("the log does not say the rest go unlogged:\n%s", logged.String())
	}
}

// readAll is every protocol line r passes, each with a newline, until EOF.
func readAll(t *testing.T, r *protocolReader) string {
	t.Helper()
	var got strings.Builder
	for {
		line, err := r.next()
		if err == io.EOF {
			return got.String()
		}
		if err != nil {
			t.Fatal(err)
		}
		got.Write(line)
		got.WriteByte('\n')
	}
}
