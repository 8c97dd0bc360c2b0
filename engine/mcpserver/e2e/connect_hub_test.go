package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/capabilities-sh/capabilities/engine/mcpserver"
	"github.com/capabilities-sh/capabilities/engine/source"
	"github.com/capabilities-sh/capabilities/internal/testenv"
)

// TestConnectHubThroughNginx is the README's shared hub on a server, end to
// end: a hub on a real PostgreSQL (hub init), three `hub serve --http`
// behind a real nginx running deploy/nginx/capabilities.conf, and an
// agent's machine (its own HOME and hub folder, no store) on which
// `connect --hub <nginx URL> --token-stdin` writes Claude Code's entry;
// the @modelcontextprotocol/sdk 1.x client over `serve --stdio` with the
// entry's CAPABILITIES_HUB_URL searches and executes on the server's hub,
// through nginx, with the token from the agent's secret store.
func TestConnectHubThroughNginx(t *testing.T) {
	t.Parallel()
	pg := testenv.StartPostgres(t)
	db := pg.NewDatabase(t)
	work := t.TempDir()
	node := testenv.Node(t)
	clients := clientsDir(t)

	procs := make([]*hubProc, 3)
	for i := range procs {
		procs[i] = &hubProc{node: fmt.Sprintf("hub%d", i+1), home: filepath.Join(work, fmt.Sprintf("m%d", i+1))}
	}
	env := func(p *hubProc) []string {
		return append(os.Environ(), "CAPABILITIES_HOME="+p.home, "CAPABILITIES_STORE="+db,
			"CAPABILITIES_CONNECT_TIMEOUT="+testenv.Timeout(source.DefaultConnectTimeout).String(),
			"CAPABILITIES_NO_BROWSER=1", "CAPABILITIES_NODE=")
	}
	run := func(environ []string, stdin string, args ...string) (string, error) {
		t.Helper()
		cmd := exec.Command(binPath, args...)
		cmd.Env = environ
		cmd.Stdin = strings.NewReader(stdin)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		return out.String(), err
	}
	must := func(environ []string, stdin string, args ...string) string {
		t.Helper()
		out, err := run(environ, stdin, args...)
		if err != nil {
			t.Fatalf("capabilities %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}

	must(env(procs[0]), "", "hub", "init")
	must(env(procs[0]), "", append([]string{"hub", "add", "--yes", "--namespace", "reader", "--"}, testenv.Scripted(t)...)...)
	must(env(procs[0]), "", append([]string{"hub", "add", "--yes", "--namespace", "writer", "--env", "SCRIPTED_TOOLS=4", "--"}, testenv.Scripted(t)...)...)
	cmd := exec.Command(binPath, "hub", "http-token")
	cmd.Env = env(procs[0])
	tb, err := cmd.Output()
	if err != nil {
		t.Fatalf("hub http-token: %v", err)
	}
	token := strings.TrimSpace(string(tb))
	for _, p := range procs[1:] {
		if b, err := os.ReadFile(filepath.Join(procs[0].home, "hub", mcpserver.TokenFile)); err == nil {
			if err := os.MkdirAll(filepath.Join(p.home, "hub"), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(p.home, "hub", mcpserver.TokenFile), b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, p := range procs {
		p.port = testenv.FreePort(t)
		p.cmd = exec.Command(binPath, "hub", "serve", "--http", "--node", p.node, "--port", strconv.Itoa(p.port))
		p.cmd.Env = env(p)
		p.stderr = &testenv.Buffer{}
		p.cmd.Stderr = p.stderr
		if err := p.cmd.Start(); err != nil {
			t.Fatalf("starting hub serve --http --node %s: %v", p.node, err)
		}
		t.Cleanup(func() { stopProc(t, p) })
	}
	for _, p := range procs {
		waitReady(t, p)
	}
	conf, err := os.ReadFile(filepath.Join(testenv.Root(t), "deploy", "nginx", "capabilities.conf"))
	if err != nil {
		t.Fatal(err)
	}
	ngx := testenv.StartNginx(t, func(port int) string {
		s := string(conf)
		for old, repl := range map[string]string{
			"127.0.0.1:8790": "127.0.0.1:" + strconv.Itoa(port),
			"127.0.0.1:4791": procs[0].addr(), "127.0.0.1:4792": procs[1].addr(), "127.0.0.1:4793": procs[2].addr(),
		} {
			s = strings.ReplaceAll(s, old, repl)
		}
		return s
	})
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("nginx's access log:\n%s\nnginx's error log:\n%s", ngx.AccessLog(), ngx.Logs())
		}
	})

	// The agent's machine.
	home := filepath.Join(work, "laptop")
	agentHome := filepath.Join(home, ".capabilities")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	agent := append(os.Environ(), "HOME="+home, "CAPABILITIES_HOME="+agentHome, "NO_KEYRING=1",
		"CAPABILITIES_STORE=", "CAPABILITIES_HUB_TOKEN=", "CAPABILITIES_HUB_URL=")
	if out, err := run(agent, "not-the-token\n", "hub", "connect", "--client", "claude-code", "--hub", ngx.URL(), "--token-stdin"); err == nil || !strings.Contains(out, "it refuses this token (HTTP 401)") {
		t.Errorf("connect --hub with a wrong token through nginx: %v\n%s", err, out)
	}
	out := must(agent, token+"\n", "hub", "connect", "--client", "claude-code", "--hub", ngx.URL(), "--token-stdin")
	if !strings.Contains(out, "claude-code: "+filepath.Join(home, ".claude.json")+" changed") {
		t.Errorf("connect --hub printed:\n%s", out)
	}
	cfg, err := os.ReadFile(filepath.Join(home, ".claude.json"))
	if err != nil {
		t.Fatal(err)
	}
	var claude struct {
		MCPServers map[string]struct {
			Command string            `json:"command"`
			Args    []string          `json:"args"`
			Env     map[string]string `json:"env"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal(cfg, &claude); err != nil {
		t.Fatal(err)
	}
	entry := claude.MCPServers["capabilities"]
	if want := []string{"hub", "serve", "--stdio", "--profile", "default", "--hub", ngx.URL()}; strings.Join(entry.Args, " ") != strings.Join(want, " ") {
		t.Errorf("the entry's args = %q, want %q", entry.Args, want)
	}
	if strings.Contains(string(cfg), token) {
		t.Errorf("~/.claude.json holds the hub's token")
	}

	// The agent: the 1.x SDK over serve --stdio, the hub's URL from the
	// environment as an entry could set it.
	c := exec.Command(node, filepath.Join(clients, "sdk1_stdio.mjs"), "surface")
	c.Env = append(agent, "CAP_BIN="+binPath, "CAPABILITIES_HUB_URL="+ngx.URL())
	var stdout, stderr bytes.Buffer
	c.Stdout, c.Stderr = &stdout, &stderr
	if err := c.Run(); err != nil {
		t.Fatalf("sdk1_stdio.mjs surface over serve --stdio --hub: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	var got struct {
		Search struct {
			Text    string
			IsError bool
		}
		Read struct {
			Structured *envelope
			Text       string
		}
		J2 struct {
			Structured *envelope
			Text       string
		}
	}
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatalf("sdk1_stdio.mjs printed something that is not JSON: %v\n%s", err, stdout.String())
	}
	if got.Search.IsError || !strings.Contains(got.Search.Text, "reader.echo") {
		t.Errorf("search through the remote hub = %+v", got.Search)
	}
	if e := got.Read.Structured; e == nil || e.Status != "completed" || string(e.Result) != `"Echo: hi"` {
		t.Errorf("execute through the remote hub = %+v %q", e, got.Read.Text)
	}
	if e := got.J2.Structured; e == nil || e.Status == "failed" || e.RunID == "" {
		t.Errorf("the write through the remote hub = %+v %q", e, got.J2.Text)
	}
	if _, err := os.Stat(filepath.Join(agentHome, "hub", "runs")); !os.IsNotExist(err) {
		t.Errorf("the agent's machine has runs of its own (%v): serve --stdio --hub ran an engine", err)
	}
	if a := ngx.AccessLog(); !strings.Contains(a, "POST /mcp") {
		t.Errorf("nginx's access log shows no POST /mcp:\n%s", a)
	}
}
