// Package hosted_test checks the hosted hub's deployment files: the
// systemd unit (systemd-analyze), the Containerfile's build (its go build,
// from only the directories it copies) and the nginx server block (served
// by a real nginx with a test CA's certificate).
package hosted_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"debug/elf"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
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
// its ports, certificate files and upstream address: over TLS (a test CA),
// the hub sees the client's Host and https as the scheme; answers carry
// HSTS; an event stream under /mcp passes as it is written; the probes are
// not served outside.
func TestNginxServerBlock(t *testing.T) {
	conf, err := os.ReadFile("nginx.conf")
	if err != nil {
		t.Fatal(err)
	}
	type seen struct{ host, proto, path string }
	got := make(chan seen, 16)
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- seen{r.Host, r.Header.Get("X-Forwarded-Proto"), r.URL.Path}
		if r.URL.Path == "/mcp" {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "data: first\n\n")
			w.(http.Flusher).Flush()
			<-r.Context().Done()
			return
		}
		io.WriteString(w, "hub")
	}))
	defer backend.Close()

	certs, pool := testCA(t, "hub.example.com")
	site := func(port int) string {
		s := string(conf)
		// The clear-text server (a redirect) needs port 80: left out.
		s = regexp.MustCompile(`(?s)server \{\s*listen 80;.*?\n\}\n`).ReplaceAllString(s, "")
		s = strings.Replace(s, "    listen 443 ssl http2;\n", "    listen 127.0.0.1:"+strconv.Itoa(port)+" ssl http2;\n", 1)
		s = strings.Replace(s, "    listen [::]:443 ssl http2;\n", "", 1)
		s = strings.Replace(s, "/etc/ssl/hub.example.com.crt", filepath.Join(certs, "hub.crt"), 1)
		s = strings.Replace(s, "/etc/ssl/hub.example.com.key", filepath.Join(certs, "hub.key"), 1)
		s = strings.Replace(s, "server 127.0.0.1:8790;", "server "+strings.TrimPrefix(backend.URL, "http://")+";", 1)
		return s
	}
	n := testenv.StartNginx(t, site)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(n.Port))
	client := &http.Client{Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool},
		// hub.example.com is this nginx.
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		},
	}}
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(30*time.Second))
	defer cancel()
	get := func(path string) *http.Response {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://hub.example.com"+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("GET %s through nginx: %v\n%s", path, err, n.Logs())
		}
		return resp
	}

	resp := get("/")
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "hub" || resp.Header.Get("Strict-Transport-Security") == "" {
		t.Fatalf("GET /: %s %q %v", resp.Status, body, resp.Header)
	}
	if s := <-got; s != (seen{"hub.example.com", "https", "/"}) {
		t.Fatalf("the hub saw %+v; want the client's Host, https", s)
	}

	// The event stream's first event arrives while the stream is open.
	resp = get("/mcp")
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	resp.Body.Close()
	if err != nil || line != "data: first\n" {
		t.Fatalf("the event stream under /mcp: %q %v (buffered by nginx?)", line, err)
	}
	if s := <-got; s != (seen{"hub.example.com", "", "/mcp"}) {
		t.Fatalf("the hub saw %+v", s)
	}

	resp = get("/readyz")
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

// testCA makes a CA and a certificate for host signed by it, written to a
// directory nginx's unprivileged user can read; it returns the directory
// and a pool trusting the CA.
func testCA(t *testing.T, host string) (string, *x509.CertPool) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ca := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "capabilities test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	leaf := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: host}, DNSNames: []string{host},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	// Not t.TempDir: its parents are root's, mode 700, closed to nginx's
	// unprivileged user when the test runs as root.
	dir, err := os.MkdirTemp("", "capabilities-tls-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "hub.crt"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "hub.key"), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o644); err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(caCert)
	return dir, pool
}
