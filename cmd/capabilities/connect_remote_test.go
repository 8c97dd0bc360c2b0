package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/internal/testenv"
)

// connect --hub to a hub served over TLS (serve --http --tls-cert, as a
// server without a proxy in front): a certificate this machine does not
// trust is an error that writes nothing; trusted (SSL_CERT_FILE), connect
// writes the entry, and serve --stdio --hub relays an MCP session over TLS.
func TestConnectHubOverTLS(t *testing.T) {
	e := newCLIEnv(t)
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "hub.crt"), filepath.Join(dir, "hub.key")
	pool := writeTestCert(t, certFile, keyFile)
	port := freePort(t)
	base := fmt.Sprintf("https://127.0.0.1:%d", port)
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true, TLSClientConfig: &tls.Config{RootCAs: pool}}}
	s := e.serveHTTP(base, client, "--listen", fmt.Sprintf("127.0.0.1:%d", port), "--tls-cert", certFile, "--tls-key", keyFile)

	// The agent's machine: its own HOME and hub folder.
	home := t.TempDir()
	agent := func(trust bool, stdin string, args ...string) *exec.Cmd {
		cmd := exec.Command(e.bin, args...)
		cmd.Env = append(os.Environ(), "HOME="+home, "CAPABILITIES_HOME="+filepath.Join(home, "agent"), "NO_KEYRING=1", "CAPABILITIES_HUB_TOKEN=")
		if trust {
			cmd.Env = append(cmd.Env, "SSL_CERT_FILE="+certFile)
		}
		cmd.Stdin = strings.NewReader(stdin)
		return cmd
	}
	run := func(cmd *exec.Cmd) (string, error) {
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		err := waitBounded(cmd)
		return out.String(), err
	}
	claude := filepath.Join(home, ".claude.json")

	out, err := run(agent(false, s.token+"\n", "hub", "connect", "--client", "claude-code", "--hub", base, "--token-stdin"))
	if err == nil || !strings.Contains(out, "certificate signed by unknown authority") || !strings.Contains(out, "nothing was written") {
		t.Errorf("connect --hub to an untrusted certificate: %v\n%s\nwant an error naming the certificate, nothing written", err, out)
	}
	if _, err := os.Stat(claude); !os.IsNotExist(err) {
		t.Errorf("%s after a refused connect: %v, want none", claude, err)
	}

	out, err = run(agent(true, s.token+"\n", "hub", "connect", "--client", "claude-code", "--hub", base+"/mcp", "--token-stdin"))
	if err != nil {
		t.Fatalf("connect --hub %s: %v\n%s", base, err, out)
	}
	b, err := os.ReadFile(claude)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"--hub",`) || !strings.Contains(string(b), `"`+base+`"`) {
		t.Errorf("%s holds no entry with --hub %s:\n%s", claude, base, b)
	}
	if strings.Contains(string(b), s.token) {
		t.Errorf("%s holds the hub's token", claude)
	}

	// An MCP session through serve --stdio --hub, over TLS.
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(bound))
	defer cancel()
	cmd := agent(true, "", "hub", "serve", "--stdio", "--hub", base)
	cmd = exec.CommandContext(ctx, cmd.Path, cmd.Args[1:]...) // same command, bounded
	cmd.Env = append(os.Environ(), "HOME="+home, "CAPABILITIES_HOME="+filepath.Join(home, "agent"), "NO_KEYRING=1", "CAPABILITIES_HUB_TOKEN=", "SSL_CERT_FILE="+certFile)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stdout)
	lines.Buffer(make([]byte, 1<<20), 1<<20)
	next := func() string {
		if !lines.Scan() {
			t.Fatalf("serve --stdio --hub ended: %v\nstderr:\n%s", lines.Err(), stderr.String())
		}
		return lines.Text()
	}
	fmt.Fprintln(in, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if got := next(); !strings.Contains(got, `"name":"capabilities"`) {
		t.Fatalf("initialize over serve --stdio --hub: %s\nstderr:\n%s", got, stderr.String())
	}
	fmt.Fprintln(in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	fmt.Fprintln(in, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"execute","arguments":{"code":"return 40 + 2"}}}`)
	if got := next(); !strings.Contains(got, `"result":42`) {
		t.Errorf("execute over serve --stdio --hub: %s\nstderr:\n%s", got, stderr.String())
	}
	in.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("serve --stdio --hub at the end of its input: %v\nstderr:\n%s", err, stderr.String())
		}
	case <-time.After(testenv.Timeout(bound)):
		t.Errorf("serve --stdio --hub did not end with its input")
	}
}
