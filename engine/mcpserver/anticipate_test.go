package mcpserver

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The stdio filter shows each line it passes to the SDK to arrived, before
// passing it on, and only those: a malformed line is answered by the filter
// and never reaches the hub.
func TestFilterShowsPassedLinesToArrived(t *testing.T) {
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"execute","arguments":{"code":"return 1"}}}`,
		`not json "execute"`,
		`{"id":2,"method":"tools/call","params":{"name":"execute"}}`,
		``,
		`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`,
	}, "\n") + "\n"
	var arrived []string
	pr, pw := io.Pipe()
	passed := make(chan []string)
	go func() {
		b, _ := io.ReadAll(pr)
		passed <- strings.Split(strings.TrimSpace(string(b)), "\n")
	}()
	var answered bytes.Buffer
	asked := 0
	end := filterRequests(strings.NewReader(in), pw, &answered, func(l []byte) { arrived = append(arrived, string(l)) }, func() { asked++ })
	pw.CloseWithError(end)
	if asked != 2 {
		t.Errorf("%d requests counted as asked, want 2 (ids 1 and 3; the malformed lines are not)", asked)
	}
	want := []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"execute","arguments":{"code":"return 1"}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`,
	}
	if diff := cmp.Diff(want, <-passed); diff != "" {
		t.Errorf("lines passed to the SDK (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, arrived); diff != "" {
		t.Errorf("lines shown to arrived (-want +got):\n%s", diff)
	}
	if n := strings.Count(answered.String(), "\n"); n != 2 {
		t.Errorf("the filter answered %d lines, want 2 (the malformed ones):\n%s", n, answered.String())
	}
}

// An HTTP request's body is shown to arrived once, its first bytes read.
func TestArrivingBodyShowsItsFirstRead(t *testing.T) {
	var seen []string
	body := &arrivingBody{ReadCloser: io.NopCloser(strings.NewReader(`{"method":"tools/call","params":{"name":"execute"}}`)), arrived: func(b []byte) { seen = append(seen, string(b)) }}
	buf := make([]byte, 8)
	var got []byte
	for {
		n, err := body.Read(buf)
		got = append(got, buf[:n]...)
		if err != nil {
			break
		}
	}
	if diff := cmp.Diff([]string{`{"method`}, seen); diff != "" {
		t.Errorf("shown to arrived (-want +got):\n%s", diff)
	}
	if string(got) != `{"method":"tools/call","params":{"name":"execute"}}` {
		t.Errorf("the body read through it: %s", got)
	}
}
