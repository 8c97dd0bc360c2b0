package testenv

import (
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"
)

// FreePort returns a loopback TCP port that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("finding a free port: %v", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		// A port handed out before may not be bound yet (a server still
		// starting): never hand it out twice in one process.
		if _, taken := handedOut.LoadOrStore(port, true); !taken {
			return port
		}
	}
	t.Fatalf("finding a free port: the kernel kept offering ports this process handed out already")
	return 0
}

// handedOut are the ports FreePort returned in this process.
var handedOut sync.Map

// EverythingHTTP starts server-everything in its streamableHttp mode on a
// loopback port and returns its MCP endpoint URL. The server is stopped when
// the test ends.
func EverythingHTTP(t testing.TB) string {
	t.Helper()
	port := FreePort(t)
	cmd := exec.Command(Node(t), NPMPath(t, "@modelcontextprotocol/server-everything/dist/index.js"), "streamableHttp")
	cmd.Env = append(cmd.Environ(), "PORT="+strconv.Itoa(port))
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting server-everything over HTTP: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	addr := "127.0.0.1:" + strconv.Itoa(port)
	wait := Timeout(15 * time.Second)
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return fmt.Sprintf("http://%s/mcp", addr)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("server-everything did not listen on %s within %v", addr, wait)
	return ""
}

// Scripted returns the argv of testdata/upstreams/scripted.mjs, a small MCP
// server whose misbehaviour the test picks with SCRIPTED_* variables.
func Scripted(t testing.TB) []string {
	t.Helper()
	return []string{Node(t), Root(t) + "/testdata/upstreams/scripted.mjs"}
}
