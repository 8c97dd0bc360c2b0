package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/hosted"
	"github.com/capabilities-sh/capabilities/engine/hosted/hostedtest"
	"github.com/capabilities-sh/capabilities/engine/identity"
	"github.com/capabilities-sh/capabilities/engine/push"
	"github.com/capabilities-sh/capabilities/engine/source"
	"github.com/capabilities-sh/capabilities/internal/testenv"
)

// TestHostedPushJourney is J5 from the local hub: a hosted hub (engine/hosted
// with push.Handler mounted, on PostgreSQL, behind TLS, people signing in
// through oauth2-mock-server) and a local hub with three remote sources on
// server-everything over streamable HTTP, one of them with a secret.
// `hub login` signs in (the browser step scripted: the sign-in through the
// identity provider, the consent form posted, the redirect followed to the
// CLI's loopback listener); `hub push --secrets` sends the sources, a rule,
// a profile and the secret after a yes; `hub status` shows no drift (exit
// 0); a second push is a no-op. The secret is sealed in the tenant's store.
func TestHostedPushJourney(t *testing.T) {
	everything := testenv.EverythingHTTP(t)
	ctx := context.Background()

	// The hosted hub.
	he := hostedtest.Start(t, hostedtest.Options{Allow: []string{"127.0.0.1/32"},
		Config: func(cfg *hosted.Config, _ *hostedtest.Env) {
			cfg.Push = func(hubs hosted.HubFunc) http.Handler { return push.Handler(hubs) }
		}})
	idp, ts, srv, root := he.IDP, he.TS, he.Server, he.DB
	certFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}

	// The local hub.
	work := t.TempDir()
	cli := &hostedCLI{t: t, work: work, env: []string{
		"PATH=" + filepath.Dir(testenv.Node(t)) + string(os.PathListSeparator) + os.Getenv("PATH"),
		"HOME=" + work,
		"CAPABILITIES_HOME=" + filepath.Join(work, "home"),
		"CAPABILITIES_CONNECT_TIMEOUT=" + testenv.Timeout(source.DefaultConnectTimeout).String(),
		"CAPABILITIES_NO_BROWSER=1",
		"NO_KEYRING=1",
		"SSL_CERT_FILE=" + certFile, // the CLI trusts the test server's certificate
	}}
	const key = "sk-journey-5c1e0f4b7a9d2e83"
	cli.ok("", "hub", "init")
	cli.ok("", "hub", "add", "--yes", "--namespace", "everything", everything)
	cli.ok("", "hub", "add", "--yes", "--namespace", "team", "--header", "X-Team: blue", everything)
	cli.ok(key+"\n", "hub", "add", "--yes", "--namespace", "keyed", "--secret-header", "X-Api-Key", "--secret-stdin", everything)
	cli.ok("", "hub", "policy", "set", "team", "deny")

	// Not signed in yet.
	if out, err := cli.run("", "hub", "push"); err == nil || !strings.Contains(out, "hub login") {
		t.Fatalf("hub push before hub login: %v\n%s", err, out)
	}

	// hub login: the person signs in as alice in the (scripted) browser.
	idp.NextSubject(t, "alice")
	tenant := identity.TenantID(idp.Issuer, "alice")
	out := cli.login(ts.URL, func(authURL string) { consentInBrowser(t, he, authURL) })
	if !strings.Contains(out, "Signed in to "+ts.URL+" as "+tenant) {
		t.Fatalf("hub login:\n%s", out)
	}
	list, err := os.ReadFile(filepath.Join(work, "home", "hub", "hosted.json"))
	if err != nil || !strings.Contains(string(list), tenant) {
		t.Fatalf("hosted.json: %s %v", list, err)
	}

	// hub push --secrets: the one secret is offered by name, and sent
	// after a yes.
	out = cli.ok("y\n", "hub", "push", "--secrets", "--yes")
	for _, want := range []string{
		"Send the secret KEYED_TOKEN (keyed/default) to " + ts.URL + "?",
		"+ source everything: " + everything,
		"+ source keyed: " + everything + "; secrets KEYED_TOKEN (default)",
		"+ source team",
		"+ secret KEYED_TOKEN (keyed/default)",
		"+ rule team: deny",
		"Pushed 5 changes of 5 changes to " + ts.URL,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("hub push --secrets: no %q in:\n%s", want, out)
		}
	}
	if strings.Contains(out, key) {
		t.Fatalf("hub push printed the secret:\n%s", out)
	}

	// hub status: the hosted state, no drift (exit 0).
	out = cli.ok("", "hub", "status")
	for _, want := range []string{"account " + tenant, "everything", "keyed", "team", "No drift"} {
		if !strings.Contains(out, want) {
			t.Errorf("hub status: no %q in:\n%s", want, out)
		}
	}
	// --secrets asks a consent per secret: --no-input refuses it.
	if out, err := cli.run("", "hub", "push", "--secrets", "--no-input"); err == nil || !strings.Contains(out, "--no-input asks nothing") {
		t.Fatalf("hub push --secrets --no-input: %v\n%s", err, out)
	}
	// A second push: nothing to push.
	if out := cli.ok("", "hub", "push"); !strings.Contains(out, "Nothing to push") {
		t.Fatalf("a second hub push:\n%s", out)
	}

	// On the hosted hub: three sources with their tools, the secret sealed
	// in the tenant's store.
	hctx, cancel := context.WithCancel(ctx)
	defer cancel()
	h, err := srv.Hub(hctx, tenant)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := h.Sources(hctx)
	if err != nil || len(recs) != 3 {
		t.Fatalf("hosted sources: %d %v", len(recs), err)
	}
	conns, err := h.Connections(hctx, "keyed")
	if err != nil || len(conns.Items) != 1 {
		t.Fatalf("hosted connections of keyed: %+v %v", conns, err)
	}
	if v, err := h.Secrets().Get(hctx, conns.Items[0].SecretRef); err != nil || v != key {
		t.Fatalf("the hosted secret: %v (equal: %v)", err, v == key)
	}
	var n int
	if err := root.Pool().QueryRow(hctx, "SELECT (SELECT count(*) FROM records WHERE position(convert_to($1, 'UTF8') in data) > 0) + (SELECT count(*) FROM log_lines WHERE position(convert_to($1, 'UTF8') in line) > 0)", key).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("the secret is in clear in %d rows of the hosted hub's database", n)
	}

	// A local change is drift: hub status says it, exit 1.
	cli.ok("", "hub", "remove", "team")
	out, err = cli.run("", "hub", "status")
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(out, "- source team") {
		t.Fatalf("hub status with drift: %v\n%s", err, out)
	}
	var jsonOut bytes.Buffer
	err = cli.exec("", &jsonOut, io.Discard, "hub", "status", "--json")
	var st struct {
		Drift []push.Change `json:"drift"`
	}
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || json.Unmarshal(jsonOut.Bytes(), &st) != nil || len(st.Drift) != 2 {
		t.Fatalf("hub status --json with drift: %v\n%s", err, jsonOut.String())
	}
	// --dry-run shows the plan and applies nothing; --no-input without
	// --yes applies nothing either.
	if out := cli.ok("", "hub", "push", "--dry-run"); !strings.Contains(out, "- rule team") || !strings.Contains(out, "- source team") {
		t.Fatalf("hub push --dry-run:\n%s", out)
	}
	if out, err := cli.run("", "hub", "push", "--no-input"); err == nil || !strings.Contains(out, "pass --yes") {
		t.Fatalf("hub push --no-input: %v\n%s", err, out)
	}
	if recs, err := h.Sources(hctx); err != nil || len(recs) != 3 {
		t.Fatalf("hosted sources after a dry run: %d %v", len(recs), err)
	}
	if out := cli.ok("n\n", "hub", "push"); !strings.Contains(out, "Nothing applied") {
		t.Fatalf("hub push, answered no:\n%s", out)
	}
	if out := cli.ok("y\n", "hub", "push"); !strings.Contains(out, "Pushed 2 changes of 2 changes") {
		t.Fatalf("hub push, answered yes:\n%s", out)
	}
	cli.ok("", "hub", "status")
}

type hostedCLI struct {
	t    *testing.T
	work string
	env  []string
}

// run runs capabilities and returns its stdout and stderr, interleaved.
func (c *hostedCLI) run(stdin string, args ...string) (string, error) {
	var out bytes.Buffer
	err := c.exec(stdin, &out, &out, args...)
	return out.String(), err
}

func (c *hostedCLI) exec(stdin string, stdout, stderr io.Writer, args ...string) error {
	cmd := exec.Command("capabilities", args...)
	cmd.Dir, cmd.Env = c.work, c.env
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	return cmd.Run()
}

func (c *hostedCLI) ok(stdin string, args ...string) string {
	c.t.Helper()
	out, err := c.run(stdin, args...)
	if err != nil {
		c.t.Fatalf("capabilities %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// login runs `hub login --no-browser url`, hands the authorization URL it
// prints to browse, and returns its output.
func (c *hostedCLI) login(u string, browse func(authURL string)) string {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(2*time.Minute))
	defer cancel()
	cmd := exec.CommandContext(ctx, "capabilities", "hub", "login", "--no-browser", u)
	cmd.Dir, cmd.Env = c.work, c.env
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	stderr, err := cmd.StderrPipe()
	if err != nil {
		c.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	var errOut strings.Builder
	s := bufio.NewScanner(stderr)
	found := false
	for s.Scan() {
		line := s.Text()
		errOut.WriteString(line + "\n")
		if l := strings.TrimSpace(line); !found && strings.HasPrefix(l, u+"/authorize?") {
			found = true
			go browse(l)
		}
	}
	err = cmd.Wait()
	if err != nil || !found {
		c.t.Fatalf("hub login: %v (authorization URL seen: %v)\nstdout:\n%s\nstderr:\n%s", err, found, stdout.String(), errOut.String())
	}
	return stdout.String()
}

// consentInBrowser is the person's browser: it opens the authorization
// page (signing in through the identity provider on the way), checks the
// consent page names the scope hub, allows, and follows the redirect to
// the CLI's loopback listener.
func consentInBrowser(t *testing.T, he *hostedtest.Env, authURL string) {
	loc, err := he.Consent(authURL, "hub")
	if err != nil {
		t.Error(err)
		return
	}
	cb, err := http.Get(loc)
	if err != nil {
		t.Errorf("following the redirect to the CLI: %v", err)
		return
	}
	cb.Body.Close()
}
