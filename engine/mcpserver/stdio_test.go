package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/store"
)

// TestStdioKeepsServingAfterMalformedInput: garbage, a message without
// "jsonrpc", one without a method and a broken batch each get a JSON-RPC
// error, and the session goes on to answer initialize and tools/list.
func TestStdioKeepsServingAfterMalformedInput(t *testing.T) {
	h := hub.New(store.NewMem(), hub.Options{})
	defer h.Close()
	s := New(h, Options{})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = s.Serve(ctx, inR, outW); outW.Close() }()
	lines := []string{
		`not json at all`,
		`{"id":5,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":6}`,
		`[1,2`,
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
	}
	go func() {
		for _, l := range lines {
			_, _ = io.WriteString(inW, l+"\n")
		}
	}()
	want := map[string]int{"null": -32700, "5": -32600, "6": -32600}
	got := map[string]int{}
	var tools []string
	sc := bufio.NewScanner(outR)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	deadline := time.After(10 * time.Second)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for sc.Scan() {
			var m struct {
				ID     json.RawMessage
				Error  *struct{ Code int }
				Result *struct {
					Tools []struct{ Name string }
				}
			}
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				t.Errorf("the server wrote a non-JSON line: %s", sc.Text())
				return
			}
			if m.Error != nil {
				got[string(m.ID)] = m.Error.Code
			}
			if string(m.ID) == "2" && m.Result != nil {
				for _, tl := range m.Result.Tools {
					tools = append(tools, tl.Name)
				}
				return
			}
		}
	}()
	select {
	case <-done:
	case <-deadline:
		t.Fatal("no answer to tools/list after malformed input: the session ended")
	}
	for id, code := range want {
		if got[id] != code {
			t.Errorf("message id %s: error code %d, want %d", id, got[id], code)
		}
	}
	if strings.Join(tools, ",") != "search,describe,execute" && strings.Join(tools, ",") != "describe,execute,search" {
		t.Errorf("tools/list after malformed input = %v", tools)
	}
	_ = inW.Close()
}
