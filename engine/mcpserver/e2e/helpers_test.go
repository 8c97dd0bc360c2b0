// Package e2e drives the hub's MCP surface (`capabilities hub serve`) with
// real MCP clients nobody here wrote — @modelcontextprotocol/sdk 1.x,
// @modelcontextprotocol/client 2.x, @modelcontextprotocol/inspector-cli and
// the protocol's conformance suite — against real upstream processes, and
// measures it. The clients are the Node scripts in testdata/clients; the npm
// packages are pinned in testdata/npm (installed by scripts/setup.sh).
package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/source"
	"github.com/capabilities-sh/capabilities/internal/testenv"
)

// binPath is the capabilities binary built once for the package.
var binPath string

func TestMain(m *testing.M) { testenv.MainWithBinary(m, &binPath) }

// hubEnv is one hub in a temporary CAPABILITIES_HOME.
type hubEnv struct {
	t    testing.TB
	home string
	work string
}

// newHub initialises a hub in a temporary directory.
func newHub(t testing.TB) *hubEnv {
	t.Helper()
	work := t.TempDir()
	h := &hubEnv{t: t, home: filepath.Join(work, "home"), work: work}
	h.cli("hub", "init")
	return h
}

// env is the environment of every process run against this hub. No test
// opens the approval page in a real browser (CAPABILITIES_NO_BROWSER=1; the
// page's own tests override it).
func (h *hubEnv) env() []string {
	return append(os.Environ(), "CAPABILITIES_HOME="+h.home, "CAP_BIN="+binPath, "CAPABILITIES_NO_BROWSER=1",
		"CAPABILITIES_CONNECT_TIMEOUT="+testenv.Timeout(source.DefaultConnectTimeout).String())
}

// cli runs the binary and fails the test when it fails.
func (h *hubEnv) cli(args ...string) string {
	h.t.Helper()
	out, err := h.cliErr(args...)
	if err != nil {
		h.t.Fatalf("capabilities %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func (h *hubEnv) cliErr(args ...string) (string, error) {
	cmd := exec.Command(binPath, args...)
	cmd.Env = h.env()
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// addScripted adds testdata/upstreams/scripted.mjs as namespace ns; its
// tools/calls are appended to the returned file. write adds the record tool.
func (h *hubEnv) addScripted(ns string, write bool) string {
	h.t.Helper()
	calls := filepath.Join(h.work, ns+"-calls.jsonl")
	args := []string{"hub", "add", "--yes", "--namespace", ns, "--env", "SCRIPTED_CALLS=" + calls}
	if write {
		args = append(args, "--env", "SCRIPTED_TOOLS=4")
	}
	args = append(args, "--")
	args = append(args, testenv.Scripted(h.t)...)
	h.cli(args...)
	return calls
}

// j2 sets up the journey's two sources: reader (reads) and writer (a write
// tool that asks).
func (h *hubEnv) j2() (readerCalls, writerCalls string) {
	h.t.Helper()
	return h.addScripted("reader", false), h.addScripted("writer", true)
}

// lines counts the lines of a calls file (0 when it does not exist).
func lines(t testing.TB, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Count(b, []byte("\n"))
}

// client runs a Node client script from testdata/clients and decodes the
// JSON object it prints.
func (h *hubEnv) client(out any, extraEnv []string, script string, args ...string) {
	h.t.Helper()
	raw := h.clientRaw(extraEnv, script, args...)
	if err := json.Unmarshal(raw, out); err != nil {
		h.t.Fatalf("%s printed something that is not JSON: %v\n%s", script, err, raw)
	}
}

func (h *hubEnv) clientRaw(extraEnv []string, script string, args ...string) []byte {
	h.t.Helper()
	clientsDir(h.t)
	argv := append([]string{filepath.Join(clientsDir(h.t), script)}, args...)
	cmd := exec.Command(testenv.Node(h.t), argv...)
	cmd.Env = append(h.env(), extraEnv...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		h.t.Fatalf("node %s %s: %v\nstdout:\n%s\nstderr:\n%s", script, strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.Bytes()
}

// clientsDir is testdata/clients; its node_modules links to testdata/npm's.
func clientsDir(t testing.TB) string {
	t.Helper()
	testenv.NPMPath(t, "@modelcontextprotocol/sdk/package.json")
	testenv.NPMPath(t, "@modelcontextprotocol/client/package.json")
	return filepath.Join(testenv.Root(t), "testdata", "clients")
}

// serveHTTP starts `hub serve --http` on a free port and returns its URL
// and bearer token. It is stopped when the test ends.
func (h *hubEnv) serveHTTP() (url, token string) {
	h.t.Helper()
	url, token, _ = h.serveHTTPLogged()
	return url, token
}

// serveHTTPLogged is serveHTTP, with what serve writes on stderr.
func (h *hubEnv) serveHTTPLogged() (url, token string, stderr *testenv.Buffer) {
	h.t.Helper()
	port := testenv.FreePort(h.t)
	cmd := exec.Command(binPath, "hub", "serve", "--http", "--port", strconv.Itoa(port))
	cmd.Env = h.env()
	stderr = &testenv.Buffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		h.t.Fatalf("starting hub serve --http: %v", err)
	}
	h.t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(testenv.Timeout(5 * time.Second)):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	addr := "127.0.0.1:" + strconv.Itoa(port)
	wait := testenv.Timeout(10 * time.Second)
	deadline := time.Now().Add(wait)
	// Serve writes a missing token, binds the port, then announces itself
	// in endpoint.json (for the stdio shim): wait for all three.
	tokenFile := filepath.Join(h.home, "hub", "http-token")
	announced := filepath.Join(h.home, "hub", "endpoint.json")
	var tok []byte
	for {
		c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond)
		if err == nil {
			c.Close()
			_, aerr := os.Stat(announced)
			if tok, err = os.ReadFile(tokenFile); err == nil && aerr == nil && len(strings.TrimSpace(string(tok))) >= 32 {
				break
			}
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("hub serve --http did not listen on %s with its token in %s and its announcement within %v\n%s", addr, tokenFile, wait, stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return "http://" + addr + "/mcp", strings.TrimSpace(string(tok)), stderr
}

// stdioSession is `hub serve --stdio` driven with raw newline-delimited
// JSON-RPC (used where the test needs the wire itself: timing, malformed
// input).
type stdioSession struct {
	t     testing.TB
	cmd   *exec.Cmd
	in    *bufio.Writer
	inRaw interface{ Close() error }
	out   *bufio.Scanner
	id    int
}

func (h *hubEnv) serveStdio() *stdioSession {
	h.t.Helper()
	cmd := exec.Command(binPath, "hub", "serve", "--stdio")
	cmd.Env = h.env()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		h.t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		h.t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		h.t.Fatalf("starting hub serve --stdio: %v", err)
	}
	s := &stdioSession{t: h.t, cmd: cmd, in: bufio.NewWriter(stdin), inRaw: stdin, out: bufio.NewScanner(stdout)}
	s.out.Buffer(make([]byte, 1<<20), 16<<20)
	h.t.Cleanup(s.close)
	return s
}

func (s *stdioSession) close() {
	if s.cmd == nil {
		return
	}
	_ = s.inRaw.Close()
	done := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(testenv.Timeout(5 * time.Second)):
		_ = s.cmd.Process.Kill()
		<-done
	}
	s.cmd = nil
}

// send writes one line as it is.
func (s *stdioSession) send(line string) {
	s.t.Helper()
	if _, err := s.in.WriteString(line + "\n"); err != nil {
		s.t.Fatal(err)
	}
	if err := s.in.Flush(); err != nil {
		s.t.Fatal(err)
	}
}

// request sends a request and returns the response with its id (skipping
// notifications).
func (s *stdioSession) request(method string, params any) map[string]any {
	s.t.Helper()
	s.id++
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": s.id, "method": method, "params": params})
	s.send(string(b))
	return s.readID(float64(s.id))
}

func (s *stdioSession) readID(id any) map[string]any {
	s.t.Helper()
	for s.out.Scan() {
		var m map[string]any
		if err := json.Unmarshal(s.out.Bytes(), &m); err != nil {
			s.t.Fatalf("serve --stdio wrote a line that is not JSON: %q", s.out.Text())
		}
		if m["id"] == id {
			return m
		}
	}
	s.t.Fatalf("serve --stdio closed stdout before answering id %v: %v", id, s.out.Err())
	return nil
}

// initialize performs the 2025-11-25 handshake.
func (s *stdioSession) initialize() {
	s.t.Helper()
	res := s.request("initialize", map[string]any{
		"protocolVersion": "2025-11-25",
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": "e2e-raw", "version": "1"},
	})
	if res["error"] != nil {
		s.t.Fatalf("initialize: %v", res["error"])
	}
	s.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

func toolNames(res map[string]any) []string {
	r, _ := res["result"].(map[string]any)
	tools, _ := r["tools"].([]any)
	var names []string
	for _, t := range tools {
		names = append(names, t.(map[string]any)["name"].(string))
	}
	return names
}
