//go:build linux

package pgfaults

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// upstream is an MCP server written for these tests, served over streamable
// HTTP on a loopback port of its own: one tool, record, that is not
// read-only (a write), and that appends the id it is given to its call log,
// a line written and fsynced before it answers. It then holds its answer
// back for up to maxHold: the instant when the write is made and the hub
// cannot have journaled its outcome, the worst one to be killed at.
type upstream struct {
	URL     string
	logPath string

	mu  sync.Mutex
	log *os.File

	maxHold time.Duration
	srv     *http.Server

	gate    chan struct{} // closed: wait answers
	waiting atomic.Int64  // wait calls received
}

func startUpstream(t testing.TB, maxHold time.Duration) *upstream {
	t.Helper()
	u := &upstream{logPath: filepath.Join(t.TempDir(), "calls.log"), maxHold: maxHold, gate: make(chan struct{})}
	f, err := os.OpenFile(u.logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	u.log = f
	server := mcp.NewServer(&mcp.Implementation{Name: "pgfaults-upstream", Version: "1.0.0"}, nil)
	server.AddTool(&mcp.Tool{
		Name:        "record",
		Description: "Record an item by its id (a write: appended to the server's call log).",
		InputSchema: map[string]any{
			"type":                 "object",
			"properties":           map[string]any{"id": map[string]any{"type": "string"}},
			"required":             []string{"id"},
			"additionalProperties": false,
		},
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: false},
	}, u.record)
	server.AddTool(&mcp.Tool{
		Name:        "wait",
		Description: "Wait until the test lets it answer (a read).",
		InputSchema: map[string]any{"type": "object"},
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
	}, u.wait)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u.URL = "http://" + ln.Addr().String() + "/mcp"
	u.srv = &http.Server{Handler: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, &mcp.StreamableHTTPOptions{Stateless: true})}
	go func() { _ = u.srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = u.srv.Shutdown(ctx)
		_ = u.srv.Close()
		_ = f.Close()
	})
	return u
}

func (u *upstream) record(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var in struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(req.Params.Arguments, &in); err != nil || in.ID == "" || strings.ContainsAny(in.ID, "\n\r") {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "record: pass {id: string}"}}}, nil
	}
	u.mu.Lock()
	_, err := u.log.WriteString(in.ID + "\n")
	if err == nil {
		err = u.log.Sync()
	}
	u.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if u.maxHold > 0 {
		select {
		case <-time.After(rand.N(u.maxHold)):
		case <-ctx.Done():
		}
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "recorded " + in.ID}}}, nil
}

// wait answers once the test closes u.gate.
func (u *upstream) wait(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	u.waiting.Add(1)
	select {
	case <-u.gate:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "waited"}}}, nil
}

// calls counts the ids in the call log, read from the file.
func (u *upstream) calls(t testing.TB) map[string]int {
	t.Helper()
	b, err := os.ReadFile(u.logPath)
	if err != nil {
		t.Fatal(err)
	}
	n := map[string]int{}
	for line := range strings.SplitSeq(string(b), "\n") {
		if line != "" {
			n[line]++
		}
	}
	return n
}
