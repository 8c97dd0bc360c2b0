package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/mcpserver"
	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/capabilities-sh/capabilities/store"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkDirectCall: one read (reader.echo, warm upstream) four ways,
// each through a go-sdk client: the upstream alone (the scripted server
// over stdio, no hub), a direct-mode profile's reader__echo (a one-call
// run), code mode's execute making the same call, and hub.Call (no run, no
// MCP server: the floor of the hub's own path). Calls are 8 ms apart, as an
// agent's are; it reports p50 and p90 per way.
func BenchmarkDirectCall(b *testing.B) {
	h := newHub(b)
	h.addScripted("reader", false)
	h.cli("hub", "profiles", "add", "reads", "--mode", "direct", "--namespace", "reader")
	st, err := store.Open(filepath.Join(h.home, "hub"))
	if err != nil {
		b.Fatal(err)
	}
	eng := hub.New(st, hub.Options{})
	b.Cleanup(eng.Close)
	ctx := context.Background()
	connect := func(srv *mcpserver.Server) *mcp.ClientSession {
		ct, stt := mcp.NewInMemoryTransports()
		ss, err := srv.MCP().Connect(ctx, stt, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = ss.Close() })
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, ct, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = cs.Close() })
		return cs
	}
	p, err := eng.Profile(ctx, "reads")
	if err != nil {
		b.Fatal(err)
	}
	direct := connect(mcpserver.New(eng, mcpserver.Options{Profile: p}))
	code := connect(mcpserver.New(eng, mcpserver.Options{}))
	argv := testenv.Scripted(b)
	up, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: exec.Command(argv[0], argv[1:]...)}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = up.Close() })

	ways := []struct {
		name string
		call func(i int) error
	}{
		{"upstream-alone", func(i int) error {
			res, err := up.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": fmt.Sprint("hi ", i)}})
			return check(res, err)
		}},
		{"direct-mode", func(i int) error {
			res, err := direct.CallTool(ctx, &mcp.CallToolParams{Name: "reader__echo", Arguments: map[string]any{"message": fmt.Sprint("hi ", i)}})
			return check(res, err)
		}},
		{"code-mode-execute", func(i int) error {
			res, err := code.CallTool(ctx, &mcp.CallToolParams{Name: "execute", Arguments: map[string]any{"code": fmt.Sprintf(`return await reader.echo({message: "hi %d"})`, i)}})
			return check(res, err)
		}},
		{"hub.Call", func(i int) error {
			res, err := eng.Call(ctx, "reader.echo", json.RawMessage(fmt.Sprintf(`{"message":"hi %d"}`, i)), "")
			return check(res, err)
		}},
	}
	for _, w := range ways { // warm every path: upstream started, runtimes ready
		for i := range 3 {
			if err := w.call(i); err != nil {
				b.Fatalf("%s: %v", w.name, err)
			}
		}
	}
	lat := make([][]time.Duration, len(ways))
	i := 0
	for b.Loop() {
		i++
		for k, w := range ways {
			time.Sleep(8 * time.Millisecond)
			start := time.Now()
			if err := w.call(i); err != nil {
				b.Fatalf("%s: %v", w.name, err)
			}
			lat[k] = append(lat[k], time.Since(start))
		}
	}
	for k, w := range ways {
		d := lat[k]
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		b.ReportMetric(float64(d[len(d)/2].Microseconds())/1000, w.name+"-p50-ms")
		b.ReportMetric(float64(d[len(d)*9/10].Microseconds())/1000, w.name+"-p90-ms")
	}
}

func check(res *mcp.CallToolResult, err error) error {
	if err != nil {
		return err
	}
	if res.IsError {
		b, _ := json.Marshal(res)
		return fmt.Errorf("the call failed: %s", b)
	}
	return nil
}
