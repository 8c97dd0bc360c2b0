package main

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/capabilities-sh/capabilities/engine/secret"
	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/capabilities-sh/capabilities/store/postgres"
)

// TestHostedServe runs `capabilities hosted serve` as a process, configured
// from the environment (CAPABILITIES_HOSTED_*), on PostgreSQL with
// oauth2-mock-server: the probes answer, /mcp asks for OAuth, a connector
// registers, signs in, consents and lists the three tools with its token;
// a "hub" token reaches the push API and an "mcp" one does not; the
// dashboard is served at /; SIGTERM drains and exits 0.
func TestHostedServe(t *testing.T) {
	bin, err := exec.LookPath("capabilities")
	if err != nil {
		t.Fatalf("the capabilities command is not on PATH (testscript.Main puts it there): %v", err)
	}
	pg := testenv.StartPostgres(t)
	idp := testenv.StartIDP(t)
	ctx := context.Background()
	dbURL := pg.NewDatabase(t)
	if err := postgres.Migrate(ctx, dbURL); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	kek, err := secret.NewKEK()
	if err != nil {
		t.Fatal(err)
	}
	if err := secret.WriteKEKFile(filepath.Join(dir, "kek"), kek); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "idp-secret"), []byte("hub-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// TLS on the process itself (--tls-cert, --tls-key), with the test
	// server's certificate for 127.0.0.1.
	certFile, keyFile, client := testCert(t, dir)
	port := testenv.FreePort(t)
	base := "https://127.0.0.1:" + strconv.Itoa(port)
	cmd := exec.Command(bin, "hosted", "serve")
	cmd.Env = append(os.Environ(), "CAPABILITIES_HOME="+filepath.Join(dir, "home"), "NO_KEYRING=1",
		"CAPABILITIES_HOSTED_STORE="+dbURL,
		"CAPABILITIES_HOSTED_PUBLIC_URL="+base,
		"CAPABILITIES_HOSTED_LISTEN=127.0.0.1:"+strconv.Itoa(port),
		"CAPABILITIES_HOSTED_KEK_FILE="+filepath.Join(dir, "kek"),
		"CAPABILITIES_HOSTED_IDP_ISSUER="+idp.Issuer,
		"CAPABILITIES_HOSTED_IDP_CLIENT_ID=hub",
		"CAPABILITIES_HOSTED_IDP_CLIENT_SECRET_FILE="+filepath.Join(dir, "idp-secret"),
		"CAPABILITIES_HOSTED_ALLOW_EGRESS=127.0.0.1/32",
		"CAPABILITIES_HOSTED_TLS_CERT="+certFile, "CAPABILITIES_HOSTED_TLS_KEY="+keyFile)
	var stderr testenv.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("hosted serve's stderr:\n%s", stderr.String())
		}
	})
	deadline := time.Now().Add(testenv.Timeout(30 * time.Second))
	for {
		resp, err := client.Get(base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("hosted serve did not become ready: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(stderr.String(), "listens on https://") || !strings.Contains(stderr.String(), "add "+base+"/mcp as a connector") {
		t.Errorf("the start message does not say where to connect:\n%s", stderr.String())
	}

	// /mcp without a token: the OAuth challenge.
	resp, err := client.Post(base+"/mcp", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(resp.Header.Get("WWW-Authenticate"), `resource_metadata="`+base+`/.well-known/oauth-protected-resource/mcp"`) {
		t.Fatalf("/mcp without a token: %s %q", resp.Status, resp.Header.Get("WWW-Authenticate"))
	}
	asm, err := oauthex.GetAuthServerMeta(ctx, base+"/.well-known/oauth-authorization-server", base, client)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(asm.ScopesSupported, " ") != "mcp hub" {
		t.Errorf("scopes_supported = %v, want mcp hub", asm.ScopesSupported)
	}

	token := func(sub string, scopes []string) string {
		t.Helper()
		reg, err := oauthex.RegisterClient(ctx, asm.RegistrationEndpoint, &oauthex.ClientRegistrationMetadata{
			RedirectURIs: []string{"http://127.0.0.1:9/cb"}, ClientName: "CLI test", TokenEndpointAuthMethod: "none"}, client)
		if err != nil {
			t.Fatal(err)
		}
		cfg := &oauth2.Config{ClientID: reg.ClientID, RedirectURL: "http://127.0.0.1:9/cb", Scopes: scopes,
			Endpoint: oauth2.Endpoint{AuthURL: asm.AuthorizationEndpoint, TokenURL: asm.TokenEndpoint, AuthStyle: oauth2.AuthStyleInParams}}
		v := oauth2.GenerateVerifier()
		jar, _ := cookiejar.New(nil)
		browser := &http.Client{Jar: jar, Transport: client.Transport}
		idp.NextSubject(t, sub)
		resp, err := browser.Get(cfg.AuthCodeURL("s", oauth2.S256ChallengeOption(v), oauth2.SetAuthURLParam("resource", base+"/mcp")))
		if err != nil {
			t.Fatal(err)
		}
		page, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		form := url.Values{"decision": {"allow"}}
		for _, m := range regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)">`).FindAllStringSubmatch(string(page), -1) {
			form.Set(m[1], html.UnescapeString(m[2]))
		}
		if form.Get("csrf") == "" {
			t.Fatalf("no consent page after sign-in (%s):\n%s", resp.Status, page)
		}
		req, _ := http.NewRequest("POST", base+"/authorize", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		browser.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		resp, err = browser.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		loc, _ := url.Parse(resp.Header.Get("Location"))
		tok, err := cfg.Exchange(context.WithValue(ctx, oauth2.HTTPClient, client), loc.Query().Get("code"), oauth2.VerifierOption(v), oauth2.SetAuthURLParam("resource", base+"/mcp"))
		if err != nil {
			t.Fatalf("exchanging the code: %v", err)
		}
		return tok.AccessToken
	}
	mcpTok, hubTok := token("carol", nil), token("carol", []string{"hub"})

	cl := mcp.NewClient(&mcp.Implementation{Name: "cli-test", Version: "1"}, nil)
	cs, err := cl.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp",
		HTTPClient: &http.Client{Transport: bearerRT{client.Transport, mcpTok}}, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tools, err := cs.ListTools(ctx, nil)
	cs.Close()
	if err != nil || len(tools.Tools) != 3 {
		t.Fatalf("tools/list through hosted serve: %v %+v", err, tools)
	}

	get := func(tok, path string) (int, string) {
		req, _ := http.NewRequest("GET", base+path, nil)
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, string(b)
	}
	if code, body := get(hubTok, "/api/status"); code != http.StatusOK || !json.Valid([]byte(body)) {
		t.Errorf("/api/status with a hub token: %d %s", code, body)
	}
	if code, _ := get(mcpTok, "/api/status"); code != http.StatusForbidden {
		t.Errorf("/api/status with an mcp token: %d, want 403", code)
	}
	if code, body := get("", "/"); code == http.StatusNotImplemented || code == http.StatusNotFound {
		t.Errorf("the dashboard is not served at /: %d %.200s", code, body)
	}

	// SIGTERM: drain, exit 0.
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		exited <- err
		if err != nil {
			t.Errorf("hosted serve after SIGTERM: %v", err)
		}
	case <-time.After(testenv.Timeout(30 * time.Second)):
		t.Fatal("hosted serve did not stop after SIGTERM")
	}
}

// bearerRT sends a fixed bearer token.
type bearerRT struct {
	base http.RoundTripper
	tok  string
}

func (b bearerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.tok)
	return b.base.RoundTrip(r)
}

// testCert writes httptest's certificate for 127.0.0.1 and its key (PEM)
// in dir, and returns a client that trusts it.
func testCert(t *testing.T, dir string) (certFile, keyFile string, client *http.Client) {
	t.Helper()
	ts := httptest.NewTLSServer(http.NotFoundHandler())
	defer ts.Close()
	c := ts.TLS.Certificates[0]
	key, err := x509.MarshalPKCS8PrivateKey(c.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Certificate[0]}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: key}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile, ts.Client()
}
