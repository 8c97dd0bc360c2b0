// Package hosted_test checks the hosted hub's deployment files: the
// systemd unit (systemd-analyze), the Containerfile's build (its go build,
// from only the directories it copies) and the nginx server block (served
// by a real nginx with a test CA's certificate).
package hosted_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"debug/elf"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/internal/testenv"
)

// need finds a tool; without it the test fails when CI=true and is skipped
// elsewhere, saying what installs it.
func need(t *testing.T, name, hint string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		msg := name + " is not installed: " + hint
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return p
}

// TestSystemdUnit: systemd-analyze verify finds nothing to say about the
// unit (an unknown key or a bad value is a line on its output, even when
// it exits 0), and its exposure (systemd-analyze security) stays at 2.0 or
// below. The ExecStart binary is swapped for one that exists here.
func TestSystemdUnit(t *testing.T) {
	sa := need(t, "systemd-analyze", "scripts/setup.sh --tests installs it (Debian's systemd package)")
	unit, err := os.ReadFile("capabilities-hosted.service")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(unit, []byte("ExecStart=/usr/bin/capabilities hosted serve\n")) {
		t.Fatal("the unit does not start /usr/bin/capabilities hosted serve")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "capabilities-hosted.service")
	if err := os.WriteFile(file, bytes.ReplaceAll(unit, []byte("ExecStart=/usr/bin/capabilities "), []byte("ExecStart="+self+" ")), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(sa, "verify", file).CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
	out, err = exec.Command(sa, "security", "--offline=yes", "--threshold=20", file).CombinedOutput()
	if err != nil {
		t.Fatalf("systemd-analyze security: the exposure is over 2.0 (%v):\n%s", err, out)
	}
	if m := regexp.MustCompile(`Overall exposure level for \S+: ([0-9.]+)`).FindSubmatch(out); m != nil {
		t.Logf("exposure %s (systemd-analyze security)", m[1])
	}
	// The secrets come as credentials, never in the environment file.
	for _, want := range []string{
		"LoadCredential=kek:", "LoadCredential=idp-client-secret:",
		"Environment=CAPABILITIES_HOSTED_KEK_FILE=%d/kek", "Environment=CAPABILITIES_HOSTED_IDP_CLIENT_SECRET_FILE=%d/idp-client-secret",
		"NoNewPrivileges=yes", "ProtectSystem=strict", "PrivateTmp=yes", "RestrictAddressFamilies=", "DynamicUser=yes",
	} {
		if !bytes.Contains(unit, []byte(want)) {
			t.Errorf("the unit has no %s", want)
		}
	}
}

// TestEnvironmentExample: every variable of the example is a
// CAPABILITIES_HOSTED_ one, and none is a secret.
func TestEnvironmentExample(t *testing.T) {
	b, err := os.ReadFile("hosted.env.example")
	if err != nil {
		t.Fatal(err)
	}
	s := bufio.NewScanner(bytes.NewReader(b))
	n := 0
	for s.Scan() {
		line := strings.TrimPrefix(strings.TrimSpace(s.Text()), "#")
		name, value, ok := strings.Cut(line, "=")
		if !ok || strings.ContainsAny(name, " ") || name == "" {
			continue
		}
		n++
		if !strings.HasPrefix(name, "CAPABILITIES_HOSTED_") {
			t.Errorf("%s is not a CAPABILITIES_HOSTED_ variable", name)
		}
		if strings.Contains(name, "SECRET") || strings.Contains(name, "KEK") || strings.Contains(value, "password") || regexp.MustCompile(`://[^/@]*:[^/@]*@`).MatchString(value) {
			t.Errorf("%s=%s: a secret in the environment file", name, value)
		}
	}
	if n < 5 {
		t.Fatalf("the example sets %d variables; want the store, public URL, listen address and the provider's issuer and client id", n)
	}
}

// TestContainerfileBuild runs the Containerfile's build stage command from
// a directory holding only what the build stage copies: a directory the
// binary needs and the Containerfile forgets fails here. The binary is
// static (no interpreter: distroless/static runs it), and the final stage
// runs it as a non-root user as `hosted serve`, with the secrets as files;
// every CAPABILITIES_HOSTED_ variable of the deployment files names one of
// its flags.
func TestContainerfileBuild(t *testing.T) {
	b, err := os.ReadFile("Containerfile")
	if err != nil {
		t.Fatal(err)
	}
	cf := string(b)
	build, final, ok := strings.Cut(cf, "\nFROM gcr.io/distroless/static-debian12:nonroot\n")
	if !ok {
		t.Fatal("the Containerfile's final stage is not distroless/static")
	}
	root := testenv.Root(t)
	src := t.TempDir()
	var goBuild string
	for _, line := range strings.Split(build, "\n") {
		switch {
		case strings.HasPrefix(line, "COPY "):
			for _, p := range strings.Fields(line)[1 : len(strings.Fields(line))-1] {
				if err := os.CopyFS(filepath.Join(src, p), os.DirFS(filepath.Join(root, p))); err != nil {
					// A file (go.mod, go.sum).
					data, rerr := os.ReadFile(filepath.Join(root, p))
					if rerr != nil {
						t.Fatalf("copying %s: %v", p, err)
					}
					if err := os.WriteFile(filepath.Join(src, p), data, 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
		case strings.HasPrefix(line, "RUN CGO_ENABLED=0 go build "):
			goBuild = strings.TrimPrefix(line, "RUN ")
		}
	}
	if goBuild == "" || !strings.Contains(goBuild, "-o /out/capabilities ./cmd/capabilities") {
		t.Fatalf("the build stage has no `RUN CGO_ENABLED=0 go build … -o /out/capabilities ./cmd/capabilities`")
	}
	out := t.TempDir()
	cmd := exec.Command("sh", "-c", strings.Replace(goBuild, "/out/", out+"/", 1))
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=readonly", "GOWORK=off")
	if got, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", goBuild, err, got)
	}
	bin := filepath.Join(out, "capabilities")
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Fatal("the binary is dynamically linked: distroless/static cannot run it")
		}
	}
	// Every CAPABILITIES_HOSTED_ variable the deployment files set is a
	// flag of the built binary's `hosted serve`.
	help, err := exec.Command(bin, "hosted", "serve", "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("capabilities hosted serve --help: %v\n%s", err, help)
	}
	for _, file := range []string{"Containerfile", "capabilities-hosted.service", "hosted.env.example"} {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range regexp.MustCompile(`CAPABILITIES_HOSTED_([A-Z_]+)=`).FindAllSubmatch(data, -1) {
			flag := "--" + strings.ReplaceAll(strings.ToLower(string(m[1])), "_", "-")
			if !regexp.MustCompile(regexp.QuoteMeta(flag) + `\b`).Match(help) {
				t.Errorf("%s sets CAPABILITIES_HOSTED_%s, but hosted serve has no %s", file, m[1], flag)
			}
		}
	}
	for _, want := range []string{
		`ENTRYPOINT ["/usr/local/bin/capabilities", "hosted", "serve"]`,
		"USER 65532:65532",
		"CAPABILITIES_HOSTED_KEK_FILE=/run/secrets/kek",
		"CAPABILITIES_HOSTED_IDP_CLIENT_SECRET_FILE=/run/secrets/idp-client-secret",
	} {
		if !strings.Contains(final, want) {
			t.Errorf("the final stage has no %s", want)
		}
	}
}

// TestNginxServerBlock serves nginx.conf in a real nginx, changed only in
// its ports and certificate files, in front of two stand-ins of `hosted
// serve --node hub1` and `--node hub2` (each answering the older protocol's
// sessions it opened, and 404 to the others', as the hub does): over TLS (a
// test CA), the hub sees the client's Host, port included, and https as
// the scheme; answers carry HSTS; an event stream under /mcp passes as it
// is written; requests without a session reach both processes; each
// session's next requests reach the process that opened it (the
// TypeScript SDK 1.x's sessions), and when that process is gone, another
// (which answers 404); the probes are not served outside.
func TestNginxServerBlock(t *testing.T) {
	conf, err := os.ReadFile("nginx.conf")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan seen, 64)
	procs := []*standIn{newStandIn(t, "hub1", got), newStandIn(t, "hub2", got)}

	ca := testenv.ProcessCA(t)
	certs := ca.Issue(t, "hub.example.com").Dir
	site := func(port int) string {
		s := string(conf)
		// The clear-text server (a redirect) needs port 80: left out.
		s = regexp.MustCompile(`(?s)server \{\s*listen 80;.*?\n\}\n`).ReplaceAllString(s, "")
		for _, r := range []struct{ old, new string }{
			{"    listen 443 ssl http2;\n", "    listen 127.0.0.1:" + strconv.Itoa(port) + " ssl http2;\n"},
			{"    listen [::]:443 ssl http2;\n", ""},
			{"/etc/ssl/hub.example.com.crt", filepath.Join(certs, "hub.crt")},
			{"/etc/ssl/hub.example.com.key", filepath.Join(certs, "hub.key")},
			{"127.0.0.1:8790;", procs[0].addr + ";"},
			{"127.0.0.1:8791;", procs[1].addr + ";"},
			{"127.0.0.1:8790 backup;", procs[0].addr + " backup;"},
			{"127.0.0.1:8791 backup;", procs[1].addr + " backup;"},
		} {
			if !strings.Contains(s, r.old) {
				t.Fatalf("nginx.conf has no %q, which this test changes (it serves two processes, 127.0.0.1:8790 and :8791, each with its own upstream)", r.old)
			}
			s = strings.ReplaceAll(s, r.old, r.new)
		}
		return s
	}
	n := testenv.StartNginx(t, site)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(n.Port))
	client := &http.Client{Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: ca.Pool()},
		// hub.example.com, on any port, is this nginx.
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		},
	}}
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(30*time.Second))
	defer cancel()
	do := func(method, url, session, body string) *http.Response {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s through nginx: %v\n%s", method, url, err, n.Logs())
		}
		return resp
	}
	next := func() seen {
		t.Helper()
		select {
		case s := <-got:
			return s
		case <-ctx.Done():
			t.Fatalf("no request reached a process\n%s", n.AccessLog())
			return seen{}
		}
	}

	resp := do("GET", "https://hub.example.com/", "", "")
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "hub" || resp.Header.Get("Strict-Transport-Security") == "" {
		t.Fatalf("GET /: %s %q %v", resp.Status, body, resp.Header)
	}
	if s := next(); s.host != "hub.example.com" || s.proto != "https" || s.path != "/" {
		t.Fatalf("the hub saw %+v; want the client's Host, https", s)
	}

	// A public URL with a port: the hub checks Host against it, port
	// included.
	resp = do("GET", "https://hub.example.com:8443/", "", "")
	resp.Body.Close()
	if s := next(); s.host != "hub.example.com:8443" {
		t.Fatalf("GET https://hub.example.com:8443/: the hub saw Host %q; want hub.example.com:8443 (the port kept)", s.host)
	}

	// The event stream's first event arrives while the stream is open.
	resp = do("GET", "https://hub.example.com/mcp", "", "")
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	resp.Body.Close()
	if err != nil || line != "data: first\n" {
		t.Fatalf("the event stream under /mcp: %q %v (buffered by nginx?)", line, err)
	}
	if s := next(); s.host != "hub.example.com" || s.path != "/mcp" {
		t.Fatalf("the hub saw %+v", s)
	}

	// Older-protocol sessions, as the TypeScript SDK 1.x opens them:
	// initialize (no session id) goes to any process, which names itself
	// in the session id; the session's next requests go to it.
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}`
	opened := map[string]int{}
	for i := 0; i < 6; i++ {
		resp := do("POST", "https://hub.example.com/mcp", "", initialize)
		resp.Body.Close()
		id := resp.Header.Get("Mcp-Session-Id")
		first := next()
		if resp.StatusCode != 200 || !strings.HasPrefix(id, first.node+".") {
			t.Fatalf("initialize: %s, session %q from %s", resp.Status, id, first.node)
		}
		opened[first.node]++
		for j := 0; j < 3; j++ {
			resp := do("POST", "https://hub.example.com/mcp", id, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
			resp.Body.Close()
			s := next()
			if resp.StatusCode != 200 || s.node != first.node {
				t.Fatalf("session %s's request %d: %s from %s; want 200 from %s, which holds it\n%s", id, j+2, resp.Status, s.node, first.node, n.AccessLog())
			}
		}
	}
	// Stateless (2026-07-28) requests and initializes spread over both.
	for i := 0; i < 4; i++ {
		resp := do("POST", "https://hub.example.com/mcp", "", `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`)
		resp.Body.Close()
		opened[next().node]++
	}
	if opened["hub1"] == 0 || opened["hub2"] == 0 {
		t.Fatalf("requests without a session reached only %v; want both processes", opened)
	}

	// hub1 is gone: its session's next request reaches hub2 (a backup),
	// which does not hold it: 404, and the client starts again there.
	resp = do("POST", "https://hub.example.com/mcp", "", initialize)
	resp.Body.Close()
	id := resp.Header.Get("Mcp-Session-Id")
	if s := next(); s.node != "hub1" {
		// Round robin: the next one is hub1's.
		resp = do("POST", "https://hub.example.com/mcp", "", initialize)
		resp.Body.Close()
		id = resp.Header.Get("Mcp-Session-Id")
		if s := next(); s.node != "hub1" {
			t.Fatalf("two initializes in a row did not reach hub1")
		}
	}
	procs[0].srv.Close()
	resp = do("POST", "https://hub.example.com/mcp", id, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	resp.Body.Close()
	if s := next(); resp.StatusCode != http.StatusNotFound || s.node != "hub2" {
		t.Fatalf("hub1 gone, its session's request: %s from %s; want 404 from hub2", resp.Status, s.node)
	}

	resp = do("GET", "https://hub.example.com/readyz", "", "")
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("GET /readyz from outside: %s; want 404", resp.Status)
	}
	select {
	case s := <-got:
		t.Fatalf("the probe reached the hub from outside: %+v", s)
	default:
	}
}

// seen is a request as a stand-in process saw it.
type seen struct{ node, host, proto, path string }

// standIn stands in for `hosted serve --node <node>` behind nginx: GET /mcp
// is an event stream; POST /mcp's initialize opens a session named
// "<node>.<random>", a request naming a session it holds is answered, one
// naming another's 404 (as the hub does); anything else is "hub".
type standIn struct {
	node, addr string
	srv        *httptest.Server
	mu         sync.Mutex
	sessions   map[string]bool
}

func newStandIn(t *testing.T, node string, got chan<- seen) *standIn {
	p := &standIn{node: node, sessions: map[string]bool{}}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- seen{node, r.Host, r.Header.Get("X-Forwarded-Proto"), r.URL.Path}
		switch {
		case r.URL.Path == "/mcp" && r.Method == http.MethodGet:
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "data: first\n\n")
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		case r.URL.Path == "/mcp":
			body, _ := io.ReadAll(r.Body)
			id := r.Header.Get("Mcp-Session-Id")
			p.mu.Lock()
			defer p.mu.Unlock()
			switch {
			case id != "" && !p.sessions[id]:
				http.Error(w, "session not found", http.StatusNotFound)
				return
			case id == "" && bytes.Contains(body, []byte(`"initialize"`)):
				id = node + "." + rand.Text()
				p.sessions[id] = true
				w.Header().Set("Mcp-Session-Id", id)
			}
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
		default:
			io.WriteString(w, "hub")
		}
	}))
	t.Cleanup(p.srv.Close)
	p.addr = strings.TrimPrefix(p.srv.URL, "http://")
	return p
}
