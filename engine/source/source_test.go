package source_test

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/scrub"
	"github.com/capabilities-sh/capabilities/engine/source"
	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func stdio(ns string, argv []string, env map[string]string) model.Source {
	return model.Source{Namespace: ns, Kind: model.KindStdio, Command: argv[0], Args: argv[1:], Env: env}
}

func connect(t *testing.T, src model.Source, opts source.Options) *source.Session {
	t.Helper()
	s, err := source.Connect(context.Background(), src, opts)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func text(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func tool(t *testing.T, m *model.Manifest, addr string) *model.Tool {
	t.Helper()
	tl := m.Tool(addr)
	if tl == nil {
		var have []string
		for _, x := range m.Tools {
			have = append(have, x.Address)
		}
		t.Fatalf("no tool %s in manifest; have %v", addr, have)
	}
	return tl
}

func TestEverythingStdio(t *testing.T) {
	s := connect(t, stdio("everything", testenv.Everything(t), nil), source.Options{})
	m, err := s.ListTools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Tools) < 10 {
		t.Fatalf("server-everything listed %d tools, want at least 10", len(m.Tools))
	}
	echo := tool(t, m, "everything.echo")
	if echo.Effect() != model.EffectRead || len(echo.Contract) != 64 {
		t.Errorf("echo: effect %s contract %q", echo.Effect(), echo.Contract)
	}
	tool(t, m, "everything.getSum") // get-sum normalized
	if m.ServerName == "" || m.Protocol == "" {
		t.Errorf("manifest lacks server info: %+v", m)
	}
	res, err := s.CallTool(context.Background(), "echo", json.RawMessage(`{"message":"hi"}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := text(t, res); !strings.Contains(got, "hi") {
		t.Errorf("echo returned %q", got)
	}
}

func TestEverythingHTTP(t *testing.T) {
	url := testenv.EverythingHTTP(t)
	s := connect(t, model.Source{Namespace: "everything", Kind: model.KindHTTP, URL: url}, source.Options{})
	m, err := s.ListTools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	tool(t, m, "everything.echo")
	res, err := s.CallTool(context.Background(), "get-sum", json.RawMessage(`{"a":2,"b":3}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := text(t, res); !strings.Contains(got, "5") {
		t.Errorf("get-sum returned %q", got)
	}
}

func TestMemoryAndFilesystem(t *testing.T) {
	dir := t.TempDir()
	mem := connect(t, stdio("memory", testenv.Memory(t), map[string]string{"MEMORY_FILE_PATH": filepath.Join(dir, "memory.jsonl")}), source.Options{})
	m, err := mem.ListTools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if tool(t, m, "memory.createEntities").Effect() == model.EffectRead {
		t.Error("create_entities counted as read-only")
	}
	if tool(t, m, "memory.readGraph").Effect() != model.EffectRead {
		t.Error("read_graph not read-only")
	}
	if _, err := mem.CallTool(context.Background(), "create_entities", json.RawMessage(`{"entities":[{"name":"Ada","entityType":"person","observations":["wrote programs"]}]}`)); err != nil {
		t.Fatal(err)
	}
	res, err := mem.CallTool(context.Background(), "read_graph", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text(t, res), "Ada") {
		t.Errorf("read_graph after create = %q", text(t, res))
	}

	files := t.TempDir()
	os.WriteFile(filepath.Join(files, "hello.txt"), []byte("hello from a file"), 0o600)
	fsys := connect(t, stdio("filesystem", testenv.Filesystem(t, files), nil), source.Options{})
	fm, err := fsys.ListTools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	tool(t, fm, "filesystem.readTextFile")
	res, err = fsys.CallTool(context.Background(), "read_text_file", json.RawMessage(`{"path":"`+filepath.Join(files, "hello.txt")+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text(t, res), "hello from a file") {
		t.Errorf("read_text_file = %q", text(t, res))
	}
}

func TestLegacyFallback(t *testing.T) {
	start := time.Now()
	s := connect(t, stdio("legacy", testenv.Scripted(t), map[string]string{"SCRIPTED_MODE": "legacy"}),
		source.Options{DiscoverTimeout: 700 * time.Millisecond})
	if got := s.Protocol(); got != source.ProtocolLegacy {
		t.Errorf("protocol = %q, want the fallback %q", got, source.ProtocolLegacy)
	}
	if _, err := s.ListTools(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Logf("connected through the fallback in %v", time.Since(start))
	// With the remembered protocol there is no discovery wait.
	s2 := connect(t, stdio("legacy", testenv.Scripted(t), map[string]string{"SCRIPTED_MODE": "legacy"}),
		source.Options{Protocol: source.ProtocolLegacy})
	if s2.Protocol() != source.ProtocolLegacy {
		t.Errorf("remembered protocol: got %q", s2.Protocol())
	}
}

func TestMethodNotFoundDiscoverFallsBack(t *testing.T) {
	s := connect(t, stdio("scripted", testenv.Scripted(t), nil), source.Options{})
	if got := s.Protocol(); got != source.ProtocolLegacy {
		t.Errorf("protocol = %q, want %q", got, source.ProtocolLegacy)
	}
}

func TestGarbageOnStdout(t *testing.T) {
	s := connect(t, stdio("garbage", testenv.Scripted(t), map[string]string{"SCRIPTED_MODE": "garbage"}), source.Options{})
	m, err := s.ListTools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.CallTool(context.Background(), "echo", json.RawMessage(`{"message":"still here"}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Tools) != 3 || !strings.Contains(text(t, res), "still here") {
		t.Errorf("tools %d, echo %q", len(m.Tools), text(t, res))
	}
}

func TestStartFailures(t *testing.T) {
	notMCP := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "Not Implemented", http.StatusNotImplemented)
	}))
	t.Cleanup(notMCP.Close)
	rpcError := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"unsupported protocol version"}}`))
	}))
	t.Cleanup(rpcError.Close)
	tests := []struct {
		name string
		src  model.Source
		opts source.Options
		want []string
		not  []string
	}{
		{"exits at start", stdio("x", testenv.Scripted(t), map[string]string{"SCRIPTED_MODE": "exit"}), source.Options{},
			[]string{"exit status 3", "missing configuration"}, nil},
		{"never answers", stdio("x", testenv.Scripted(t), map[string]string{"SCRIPTED_MODE": "silent"}),
			source.Options{ConnectTimeout: 1500 * time.Millisecond, DiscoverTimeout: 500 * time.Millisecond},
			[]string{"did not answer the MCP handshake in time"}, nil},
		{"a script that is not there", stdio("x", []string{testenv.Node(t), "/nonexistent/server.js"}, nil), source.Options{},
			[]string{"exited (exit status 1) during start", "Error: Cannot find module '/nonexistent/server.js'"}, nil},
		{"no such command", model.Source{Namespace: "x", Kind: model.KindStdio, Command: "no-such-mcp-server-here"}, source.Options{},
			[]string{`command "no-such-mcp-server-here" not found`}, nil},
		{"a working directory that is gone", model.Source{Namespace: "x", Kind: model.KindStdio, Command: testenv.Node(t), Cwd: "/nonexistent/proj"}, source.Options{},
			[]string{"its working directory /nonexistent/proj does not exist: recreate it, or remove the source with `capabilities hub remove x` and add it again"}, []string{"fork/exec"}},
		{"a working directory that is a file", model.Source{Namespace: "x", Kind: model.KindStdio, Command: testenv.Node(t), Cwd: testenv.Node(t)}, source.Options{},
			[]string{"its working directory " + testenv.Node(t) + " is not a directory: recreate it"}, []string{"fork/exec"}},
		{"a working directory that is not there, being added", model.Source{Kind: model.KindStdio, Command: testenv.Node(t), Cwd: "/nonexistent/proj"}, source.Options{},
			[]string{"its working directory /nonexistent/proj does not exist: create it, or add the server with another working directory"}, []string{"hub remove"}},
		{"unreachable url", model.Source{Namespace: "x", Kind: model.KindHTTP, URL: "http://127.0.0.1:1/mcp"}, source.Options{},
			[]string{"connecting to x (http://127.0.0.1:1/mcp)", "connection refused; nothing is listening at http://127.0.0.1:1/mcp: is the server running?"}, nil},
		// A source being added has no namespace yet: named by what was typed.
		{"unreachable url, being added", model.Source{Kind: model.KindHTTP, URL: "http://127.0.0.1:1/mcp"}, source.Options{},
			[]string{"connecting to http://127.0.0.1:1/mcp: ", "nothing is listening at http://127.0.0.1:1/mcp"}, []string{"()", "to  "}},
		{"a script that is not there, being added", model.Source{Kind: model.KindStdio, Command: "node", Args: []string{"/nonexistent/server.js"}}, source.Options{},
			[]string{"connecting to node /nonexistent/server.js: the server exited"}, []string{"()", "to  "}},
		{"not an MCP endpoint", model.Source{Kind: model.KindHTTP, URL: notMCP.URL + "/mcp"}, source.Options{},
			[]string{"Not Implemented; the server answered HTTP 501: is this the URL of an MCP endpoint (streamable HTTP)?"}, nil},
		{"an MCP endpoint's JSON-RPC error", model.Source{Kind: model.KindHTTP, URL: rpcError.URL + "/mcp"}, source.Options{},
			[]string{"unsupported protocol version"}, []string{"is this the URL of an MCP endpoint"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			s, err := source.Connect(context.Background(), tt.src, tt.opts)
			if err == nil {
				s.Close()
				t.Fatal("Connect succeeded")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			for _, w := range tt.not {
				if strings.Contains(err.Error(), w) {
					t.Errorf("error %q contains %q", err, w)
				}
			}
			// Far less than the connect timeout: the failure was seen, not waited out.
			if d := time.Since(start); d > testenv.Timeout(8*time.Second) {
				t.Errorf("failing took %v", d)
			}
		})
	}
}

func TestPagination(t *testing.T) {
	s := connect(t, stdio("paged", testenv.Scripted(t), map[string]string{"SCRIPTED_PAGE": "2", "SCRIPTED_TOOLS": "7"}), source.Options{})
	m, err := s.ListTools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Tools) != 7 {
		t.Fatalf("followed pagination to %d tools, want 7", len(m.Tools))
	}
}

func TestToolListChanged(t *testing.T) {
	changed := make(chan string, 4)
	s := connect(t, stdio("scripted", testenv.Scripted(t), nil), source.Options{OnToolsChanged: func(ns string) { changed <- ns }})
	before, err := s.ListTools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CallTool(context.Background(), "change-tools", nil); err != nil {
		t.Fatal(err)
	}
	select {
	case ns := <-changed:
		if ns != "scripted" {
			t.Errorf("OnToolsChanged(%q)", ns)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no tools/list_changed reaction within 5 s")
	}
	after, err := s.ListTools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if before.Tools[0].Contract == after.Tools[0].Contract {
		t.Error("contract did not change with the description")
	}
}

func TestCloseReapsProcessGroup(t *testing.T) {
	p := source.NewPool(source.Options{})
	src := stdio("scripted", testenv.Scripted(t), nil)
	s, err := p.Session(context.Background(), src, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	s2, err := p.Session(context.Background(), src, "", nil)
	if err != nil || s2 != s {
		t.Fatalf("second Session = %p, %v; want the same live session", s2, err)
	}
	pid := s.Pid()
	p.Close()
	if err := syscall.Kill(pid, 0); err == nil {
		t.Errorf("process %d still alive after Pool.Close", pid)
	}
	if _, err := p.Session(context.Background(), src, "", nil); err == nil {
		t.Error("Session after Close succeeded")
	}
}

func TestEnvironIsMinimal(t *testing.T) {
	t.Setenv("CAPABILITIES_TEST_LEAK", "should-not-pass")
	env := source.Environ(&model.Source{Env: map[string]string{"MEMORY_FILE_PATH": "/tmp/m"}})
	joined := strings.Join(env, "\n")
	if strings.Contains(joined, "CAPABILITIES_TEST_LEAK") {
		t.Error("the hub's own environment leaked into the upstream's")
	}
	if !strings.Contains(joined, "MEMORY_FILE_PATH=/tmp/m") || !strings.Contains(joined, "PATH=") {
		t.Errorf("environment lacks configured or needed variables: %v", env)
	}
}

// TestStartFailureShowsScrubbedStderr: a server that prints to stderr and
// exits 1 at start. The error carries its last stderr lines, without the
// stack frames and blank lines that would crowd out the message, and with
// its credential scrubbed.
func TestStartFailureShowsScrubbedStderr(t *testing.T) {
	const token = "tok-3f9a-very-secret"
	script := filepath.Join(t.TempDir(), "server.sh")
	body := `echo "starting up" >&2
echo "Error: the token $TOKEN was refused by the API" >&2
for i in 1 2 3 4 5 6 7 8; do echo "    at frame$i (file.js:$i:1)" >&2; done
echo "" >&2
printf "  code: 'EAUTH',\n  errno: -13,\n  syscall: 'connect'\n}\n\nNode.js v20\n" >&2
exit 1
`
	if err := os.WriteFile(script, []byte(body), 0o700); err != nil {
		t.Fatal(err)
	}
	src := model.Source{Namespace: "x", Kind: model.KindStdio, Command: "sh", Args: []string{script}, SecretEnv: "TOKEN"}
	s, err := source.ConnectWith(context.Background(), src, &source.Credential{Connection: "default", Value: token}, source.Options{})
	if err == nil {
		s.Close()
		t.Fatal("Connect succeeded")
	}
	msg := err.Error()
	for _, w := range []string{"exited (exit status 1) during start", "Error: the token [secret] was refused by the API\n  …\n", "syscall: 'connect'", "Node.js v20"} {
		if !strings.Contains(msg, w) {
			t.Errorf("error does not contain %q:\n%s", w, msg)
		}
	}
	for _, no := range []string{token, "at frame", "starting up"} {
		if strings.Contains(msg, no) {
			t.Errorf("error contains %q:\n%s", no, msg)
		}
	}
}

// TestPoolReusesSessionWithCredential: a source with a credential keeps its
// one session across calls (the credential in the started environment does
// not make the source look changed).
func TestPoolReusesSessionWithCredential(t *testing.T) {
	p := source.NewPool(source.Options{})
	t.Cleanup(p.Close)
	src := stdio("scripted", testenv.Scripted(t), map[string]string{"SCRIPTED_REQUIRE": "TOKEN"})
	src.SecretEnv = "TOKEN"
	cred := &source.Credential{Connection: "default", Value: "tok-value"}
	s, err := p.Session(context.Background(), src, "", cred)
	if err != nil {
		t.Fatal(err)
	}
	s2, err := p.Session(context.Background(), src, "", cred)
	if err != nil {
		t.Fatal(err)
	}
	if s2 != s || s2.Pid() != s.Pid() {
		t.Errorf("second Session started upstream %d, want the live session of %d", s2.Pid(), s.Pid())
	}
}

// A remote source's own headers (imported from an agent's config, or hub
// add --header) go with every request, beside the credential; a recording
// proxy in front of the real server-everything sees them.
func TestHTTPSourceSendsItsHeaders(t *testing.T) {
	up, err := url.Parse(testenv.EverythingHTTP(t))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var seen []http.Header
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: up.Scheme, Host: up.Host})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Clone())
		mu.Unlock()
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	src := model.Source{Namespace: "everything", Kind: model.KindHTTP, URL: srv.URL + up.Path, Headers: map[string]string{"X-Region": "eu"}, SecretHeader: "X-Api-Key"}
	s, err := source.ConnectWith(context.Background(), src, &source.Credential{Connection: "default", Value: "k-123"}, source.Options{})
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := s.CallTool(context.Background(), "echo", json.RawMessage(`{"message":"hi"}`)); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) < 2 {
		t.Fatalf("the proxy saw %d requests, want the handshake and the call", len(seen))
	}
	for i, h := range seen {
		if h.Get("X-Region") != "eu" || h.Get("X-Api-Key") != "k-123" {
			t.Errorf("request %d: X-Region %q, X-Api-Key %q; want eu and the credential", i, h.Get("X-Region"), h.Get("X-Api-Key"))
		}
	}
}

// An HTTP server sees its credential in every request's header and may
// write it into how it describes itself: the manifest ListTools returns
// holds no form of it (I1), and a tool named with it (as hex) is left out.
func TestListToolsScrubsTheCredential(t *testing.T) {
	const token = "tok-9f8e7d6c5b4a"
	handler := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		auth := r.Header.Get("Authorization")
		s := mcp.NewServer(&mcp.Implementation{Name: "echoes " + auth, Version: "1 " + auth}, &mcp.ServerOptions{Instructions: "send " + auth})
		peek := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		}
		s.AddTool(&mcp.Tool{
			Name: "peek", Title: "peek " + auth, Description: "the key is " + auth,
			InputSchema:  map[string]any{"type": "object", "properties": map[string]any{"q": map[string]any{"type": "string", "default": auth}}},
			OutputSchema: map[string]any{"type": "object", "description": "base64 " + base64.StdEncoding.EncodeToString([]byte(token))},
			Annotations:  &mcp.ToolAnnotations{Title: auth, ReadOnlyHint: true},
		}, peek)
		s.AddTool(&mcp.Tool{Name: "t_" + hex.EncodeToString([]byte(token)), InputSchema: map[string]any{"type": "object"}}, peek)
		return s
	}, nil)
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	src := model.Source{Namespace: "echoes", Kind: model.KindHTTP, URL: srv.URL}
	s, err := source.ConnectWith(context.Background(), src, &source.Credential{Connection: "default", Value: token}, source.Options{})
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	m, err := s.ListTools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(m)
	for _, form := range scrub.Forms(token) {
		if strings.Contains(string(b), form) {
			t.Errorf("the manifest holds %q:\n%s", form, b)
		}
	}
	if len(m.Tools) != 1 || !strings.Contains(m.Tools[0].Description, "the key is Bearer [secret]") || !strings.Contains(m.Instructions, "[secret]") {
		t.Errorf("want peek alone, its description and the instructions with [secret]:\n%s", b)
	}
}
