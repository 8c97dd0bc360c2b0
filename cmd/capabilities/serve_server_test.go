package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/internal/testenv"
)

// lockedBuffer is a process's stderr, read while it runs.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// freePort is a loopback port nothing listens on.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// served is a running `hub serve --http`.
type served struct {
	t      *testing.T
	cmd    *exec.Cmd
	stderr *lockedBuffer
	base   string // scheme://host:port
	client *http.Client
	token  string
	exited chan error
}

func (e *cliEnv) serveHTTP(base string, client *http.Client, args ...string) *served {
	e.t.Helper()
	cmd := e.command(append([]string{"hub", "serve", "--http"}, args...)...)
	s := &served{t: e.t, cmd: cmd, stderr: &lockedBuffer{}, base: base, client: client, exited: make(chan error, 1)}
	cmd.Stderr = s.stderr
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	go func() { s.exited <- cmd.Wait() }()
	e.t.Cleanup(func() {
		_ = cmd.Process.Kill()
		select {
		case <-s.exited:
		case <-time.After(bound):
		}
	})
	// Ready: the store reads and the sandbox is warm.
	deadline := time.Now().Add(testenv.Timeout(bound))
	for {
		code, body, err := s.get("/readyz")
		if err == nil && code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("/readyz never answered 200: %d %q %v\nstderr:\n%s", code, body, err, s.stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	tok := e.run("", "hub", "http-token")
	if !regexp.MustCompile(`^[0-9a-f]{64}\n$`).MatchString(tok) {
		e.t.Fatalf("hub http-token printed %q, want the token alone on one line", tok)
	}
	s.token = strings.TrimSpace(tok)
	return s
}

// get asks a path with no token.
func (s *served) get(path string) (int, string, error) {
	resp, err := s.client.Get(s.base + path)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), nil
}

// call sends one 2026-07-28 request (no session) with Host host (the
// address's own when empty) and returns its status and body.
func (s *served) call(host, method string, params map[string]any) (int, http.Header, string, error) {
	params["_meta"] = map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "serve-server-test", "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": map[string]any{},
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	req, err := http.NewRequest(http.MethodPost, s.base+"/mcp", bytes.NewReader(b))
	if err != nil {
		return 0, nil, "", err
	}
	if host != "" {
		req.Host = host
	}
	req.Header.Set("Authorization", "Bearer "+s.token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	if n, ok := params["name"].(string); ok {
		req.Header.Set("Mcp-Name", n)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, nil, "", err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(body), nil
}

// TestServeDrainsOnSIGTERM: serve --http as a server. /healthz and /readyz
// answer without the token; on SIGTERM an execute under way (an upstream
// call sleeping) finishes and its client gets the answer, /readyz and new
// requests are refused (503 with Retry-After, or the connection refused),
// and the process exits 0 within --drain-timeout.
func TestServeDrainsOnSIGTERM(t *testing.T) {
	e := newCLIEnv(t)
	calls := filepath.Join(t.TempDir(), "calls.jsonl")
	e.run("", "hub", "add", "--yes", "--namespace", "slow", "--env", "SCRIPTED_CALLS="+calls, "--", testenv.Node(t), filepath.Join(testenv.Root(t), "testdata", "upstreams", "scripted.mjs"))
	port := freePort(t)
	drainTimeout := testenv.Timeout(20 * time.Second)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	s := e.serveHTTP("http://"+addr, client, "--listen", addr, "--drain-timeout", drainTimeout.String())

	if code, body, err := s.get("/healthz"); err != nil || code != 200 || strings.TrimSpace(body) != "ok" {
		t.Fatalf("/healthz = %d %q %v, want 200 ok", code, body, err)
	}

	type answer struct {
		code int
		body string
		err  error
	}
	inFlight := make(chan answer, 1)
	go func() {
		code, _, body, err := s.call("", "tools/call", map[string]any{"name": "execute", "arguments": map[string]any{
			"code": `await slow.sleep({ms: 2000}); return "finished after the drain began"`,
		}})
		inFlight <- answer{code, body, err}
	}()
	// SIGTERM once the execute is under way: its upstream call arrived.
	deadline := time.Now().Add(bound)
	for {
		b, _ := os.ReadFile(calls)
		if bytes.Contains(b, []byte(`"sleep"`)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the execute made no upstream call within %v\nstderr:\n%s", bound, s.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	signalled := time.Now()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for !strings.Contains(s.stderr.String(), "SIGTERM: draining") {
		if time.Since(signalled) > bound {
			t.Fatalf("serve did not say it drains\nstderr:\n%s", s.stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	// After SIGTERM: not ready, and a new request is refused, unserved.
	refused := func(code int, hdr http.Header, err error) bool {
		if err != nil {
			return errors.Is(err, syscall.ECONNREFUSED) || strings.Contains(err.Error(), "connection refused")
		}
		return code == http.StatusServiceUnavailable && hdr.Get("Retry-After") != ""
	}
	if code, body, err := s.get("/readyz"); err == nil && code != http.StatusServiceUnavailable {
		t.Errorf("/readyz after SIGTERM = %d %q, want 503 (or the connection refused)", code, body)
	}
	if code, hdr, body, err := s.call("", "tools/list", map[string]any{}); !refused(code, hdr, err) {
		t.Errorf("a request after SIGTERM: %d %q %v, want it refused", code, body, err)
	}

	a := <-inFlight
	if a.err != nil || a.code != 200 || !strings.Contains(a.body, "finished after the drain began") {
		t.Errorf("the execute under way at SIGTERM: %d %q %v, want its answer", a.code, a.body, a.err)
	}
	select {
	case err := <-s.exited:
		if err != nil {
			t.Errorf("serve after the drain: %v, want exit 0\nstderr:\n%s", err, s.stderr.String())
		}
		if took := time.Since(signalled); took > drainTimeout+testenv.Timeout(5*time.Second) {
			t.Errorf("serve took %v to exit after SIGTERM; --drain-timeout is %v", took, drainTimeout)
		}
	case <-time.After(drainTimeout + bound):
		t.Fatalf("serve still runs %v after SIGTERM\nstderr:\n%s", drainTimeout+bound, s.stderr.String())
	}
	if strings.Contains(s.stderr.String(), s.token) {
		t.Errorf("serve's stderr holds the bearer token")
	}
}

// TestServeTLSOnAnotherAddress: --listen on every interface serves HTTPS
// with --tls-cert and --tls-key, accepts the --public-url's Host and Origin
// besides loopback ones, and still refuses a foreign Host or Origin.
func TestServeTLSOnAnotherAddress(t *testing.T) {
	e := newCLIEnv(t)
	dir := t.TempDir()
	pool := writeTestCert(t, filepath.Join(dir, "hub.crt"), filepath.Join(dir, "hub.key"))
	port := freePort(t)
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true, TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "hub.test"}}}
	public := fmt.Sprintf("hub.test:%d", port)
	s := e.serveHTTP(fmt.Sprintf("https://127.0.0.1:%d", port), client,
		"--listen", fmt.Sprintf("0.0.0.0:%d", port), "--tls-cert", filepath.Join(dir, "hub.crt"), "--tls-key", filepath.Join(dir, "hub.key"),
		"--public-url", "https://"+public)

	for _, tc := range []struct {
		name, host, origin string
		want               int
	}{
		{"loopback Host", "", "", 200},
		{"the public URL's Host", public, "", 200},
		{"the public URL's Origin", public, "https://" + public, 200},
		{"a foreign Host", "evil.example:" + fmt.Sprint(port), "", 403},
		{"the public name on another port", "hub.test:1", "", 403},
		{"a foreign Origin", public, "https://evil.example", 403},
		{"the public Origin over http", public, "http://" + public, 403},
	} {
		t.Run(tc.name, func(t *testing.T) {
			params := map[string]any{}
			params["_meta"] = map[string]any{"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientInfo": map[string]any{"name": "t", "version": "1"}, "io.modelcontextprotocol/clientCapabilities": map[string]any{}}
			b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": params})
			req, _ := http.NewRequest(http.MethodPost, s.base+"/mcp", bytes.NewReader(b))
			if tc.host != "" {
				req.Host = tc.host
			}
			if tc.origin != "" {
				req.Header.Set("Origin", tc.origin)
			}
			req.Header.Set("Authorization", "Bearer "+s.token)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
			req.Header.Set("Mcp-Method", "tools/list")
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Errorf("HTTP %d %q, want %d", resp.StatusCode, body, tc.want)
			}
			if tc.want == 200 && !strings.Contains(string(body), `"execute"`) {
				t.Errorf("tools/list answered %q, without execute", body)
			}
		})
	}
	// HTTP/2, which the TLS handshake offers, is spoken.
	h2 := &http.Client{Transport: &http.Transport{ForceAttemptHTTP2: true, TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "hub.test"}}}
	resp, err := h2.Get(s.base + "/healthz")
	if err != nil {
		t.Fatalf("/healthz over HTTP/2: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.ProtoMajor != 2 {
		t.Errorf("/healthz over TLS answered HTTP %d in %s, want 200 in HTTP/2", resp.StatusCode, resp.Proto)
	}
	// Plain HTTP on the TLS port is not served.
	resp, err = (&http.Client{}).Get(fmt.Sprintf("http://127.0.0.1:%d/healthz", port))
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode == 200 {
			t.Errorf("plain HTTP on the TLS port answered 200")
		}
	}
}

// writeTestCert writes a self-signed certificate for hub.test and
// 127.0.0.1 and its key, and returns a pool that trusts it.
func writeTestCert(t *testing.T, certFile, keyFile string) *x509.CertPool {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "hub.test"},
		DNSNames:              []string{"hub.test"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return pool
}
