package e2e

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkRemoteExecute: one execute of one upstream call, from a go-sdk
// client over `hub serve --stdio`, to a `serve --http` hub: "local-shim",
// the stdio process relaying to the hub announced on this machine (proof of
// the token per connection, endpoint.json); "hub-url", the same process
// given the hub's URL (serve --stdio --hub, the token from the agent's
// secret store, as connect --hub leaves it). Both relay to the same hub
// over loopback: the difference is the relay's own cost.
func BenchmarkRemoteExecute(b *testing.B) {
	h := newHub(b)
	h.addScripted("reader", false)
	url, token := h.serveHTTP()
	base := url[:len(url)-len("/mcp")]
	laptop := b.TempDir()
	agentEnv := append(os.Environ(), "HOME="+laptop, "CAPABILITIES_HOME="+filepath.Join(laptop, ".capabilities"), "NO_KEYRING=1",
		"CAPABILITIES_HUB_TOKEN=", "CAPABILITIES_HUB_URL=")
	connect := exec.Command(binPath, "hub", "connect", "--client", "claude-code", "--hub", base, "--token-stdin")
	connect.Env = agentEnv
	connect.Stdin = strings.NewReader(token + "\n")
	if out, err := connect.CombinedOutput(); err != nil {
		b.Fatalf("connect --hub: %v\n%s", err, out)
	}
	for _, tc := range []struct {
		name string
		args []string
		env  []string
	}{
		{"local-shim", []string{"hub", "serve", "--stdio"}, h.env()},
		{"hub-url", []string{"hub", "serve", "--stdio", "--hub", base}, agentEnv},
	} {
		b.Run(tc.name, func(b *testing.B) {
			ctx := context.Background()
			cmd := exec.Command(binPath, tc.args...)
			cmd.Env = tc.env
			cmd.Stderr = io.Discard // the agent's secret store warns it is a file (NO_KEYRING)
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer cs.Close()
			call := func(i int) {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "execute", Arguments: map[string]any{"code": fmt.Sprintf(`return await reader.echo({message: "hi %d"})`, i)}})
				if err != nil || res.IsError {
					b.Fatalf("execute: %v %+v", err, res)
				}
			}
			call(-1) // the upstream started
			b.ResetTimer()
			for i := range b.N {
				call(i)
			}
		})
	}
}
