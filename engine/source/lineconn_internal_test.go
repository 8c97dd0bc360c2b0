package source

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// TestLineConnReads: the connection hands go-sdk each protocol line as a
// message, a batch's messages one by one, drops what is not protocol, and
// says what went wrong with a line that is JSON but not JSON-RPC.
func TestLineConnReads(t *testing.T) {
	in := `{"jsonrpc":"2.0","id":1,"result":{"ok":true}}` + "\n" +
		"starting up...\n" +
		`[{"jsonrpc":"2.0","id":"a","method":"ping"},{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}]` + "\n" +
		`{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"no such method"}}` + "\n" +
		`{"hello":"world"}` + "\n"
	p := &process{}
	r := &protocolReader{br: bufio.NewReader(strings.NewReader(in)), raw: nopReadCloser{}, p: p, log: slog.New(slog.DiscardHandler)}
	c := &lineConn{r: r, w: nopWriteCloser{io.Discard}}
	ctx := context.Background()
	var got []string
	for range 4 {
		m, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("after %v: %v", got, err)
		}
		switch m := m.(type) {
		case *jsonrpc.Response:
			if m.Error != nil {
				got = append(got, fmt.Sprintf("error %v: %v", m.ID.Raw(), m.Error))
			} else {
				got = append(got, fmt.Sprintf("result %v: %s", m.ID.Raw(), m.Result))
			}
		case *jsonrpc.Request:
			got = append(got, fmt.Sprintf("request %s, a call: %v", m.Method, m.IsCall()))
		}
	}
	want := []string{
		`result 1: {"ok":true}`,
		"request ping, a call: true",
		"request notifications/tools/list_changed, a call: false",
		"error 2: no such method",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
	if _, err := c.Read(ctx); err == nil || !strings.Contains(err.Error(), "reading the upstream") {
		t.Errorf("a JSON line that is no message: %v", err)
	}
	if p.strays != 1 {
		t.Errorf("strays = %d, want 1", p.strays)
	}
}

// TestLineConnCloseEndsRead: Close unblocks a Read waiting on a silent
// upstream.
func TestLineConnCloseEndsRead(t *testing.T) {
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pw.Close()
	c := &lineConn{r: &protocolReader{br: bufio.NewReader(pr), raw: pr, p: &process{}, log: slog.New(slog.DiscardHandler)}, w: nopWriteCloser{io.Discard}}
	done := make(chan error, 1)
	go func() { _, err := c.Read(context.Background()); done <- err }()
	time.Sleep(10 * time.Millisecond)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err == nil {
			t.Error("Read after Close returned no error")
		}
	case <-time.After(testenv.Timeout(5 * time.Second)):
		t.Fatal("Read still waits after Close")
	}
}

// TestLineConnWrites: each message goes out as one line.
func TestLineConnWrites(t *testing.T) {
	var out strings.Builder
	c := &lineConn{w: nopWriteCloser{&out}}
	id, _ := jsonrpc.MakeID(float64(7))
	if err := c.Write(context.Background(), &jsonrpc.Request{ID: id, Method: "tools/list"}); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != `{"jsonrpc":"2.0","id":7,"method":"tools/list"}`+"\n" {
		t.Errorf("wrote %q", got)
	}
}

type nopReadCloser struct{ io.Reader }

func (nopReadCloser) Close() error { return nil }

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// TestLineConnMessageBudget: a protocol line over MaxMessageBytes ends the
// connection with an error saying so, as go-sdk's frame limit did; the
// stdout reader itself drops only lines over maxProtocolLine.
func TestLineConnMessageBudget(t *testing.T) {
	big := `{"jsonrpc":"2.0","id":1,"result":{"x":"` + strings.Repeat("x", MaxMessageBytes) + `"}}` + "\n"
	r := &protocolReader{br: bufio.NewReader(strings.NewReader(big)), p: &process{}, log: slog.New(slog.DiscardHandler)}
	c := &lineConn{r: r, w: nopWriteCloser{io.Discard}}
	if _, err := c.Read(context.Background()); err == nil || !strings.Contains(err.Error(), "over the limit of") {
		t.Errorf("a %d-byte message: %v", len(big), err)
	}
}
