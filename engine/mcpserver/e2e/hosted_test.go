package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/capabilities-sh/capabilities/engine/authserver"
	"github.com/capabilities-sh/capabilities/engine/hostedlogin"
	"github.com/capabilities-sh/capabilities/engine/identity"
	"github.com/capabilities-sh/capabilities/engine/inbox"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/push"
	"github.com/capabilities-sh/capabilities/engine/secret"
	"github.com/capabilities-sh/capabilities/engine/source"
	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/capabilities-sh/capabilities/store/postgres"
)

// hostedProcs is how many `hosted serve` processes run behind nginx.
const hostedProcs = 2

// TestHostedJourney is issue 41's journey with the real binary and real
// processes: PostgreSQL, oauth2-mock-server as the identity provider, two
// `capabilities hosted serve` processes on one database behind nginx
// running deploy/hosted/nginx.conf with TLS (a test CA; only its ports
// and certificate files changed: its session affinity for /mcp and its
// Host with the port as shipped), --allow-egress 127.0.0.1
// for the test's remote sources (server-everything over streamable HTTP,
// and writer: an MCP server over streamable HTTP keeping its own log).
//
//   - push: a local hub (its own HOME, the test CA trusted through
//     SSL_CERT_FILE) with three remote sources and one secret runs
//     `hub login <url>` (it opens the authorization URL through
//     CAPABILITIES_BROWSER: Chromium signs in, the consent page says what
//     scope hub allows, Allow is clicked), `hub push --secrets` (the
//     secret sent after its consent), `hub status` (exit 0, no drift) and
//     a second push (nothing to push).
//   - review: the person accepts the pushed tools' review in the
//     dashboard in Chromium (review decisions are not pushed).
//   - connector: the TypeScript SDK 1.x client with its OAuth provider
//     (NODE_EXTRA_CA_CERTS) registers, is authorized (sign-in and Allow
//     clicked in Chromium; the consent page names it, its redirect and
//     scope mcp only; PKCE S256, resource), gets its token, refreshes it
//     (rotated) when the hub refuses a spoiled one, and runs search,
//     describe and execute on the pushed sources; two writes ask; its
//     token does not open /api/status.
//   - dashboard: one run is decided in the dashboard in Chromium; the
//     hosted hub finishes it by itself.
//   - desktop: the other is decided as the desktop app does, with hub
//     login's refreshing client: /api/inbox lists it, the event stream
//     (through nginx) shows the inbox then "settled", /api/inbox/decide
//     records it via desktop.
//
// Each run completes (as the hosted hub's /api/status says) and the
// writer's own log shows each write made once, only after its decision.
func TestHostedJourney(t *testing.T) {
	node := testenv.Node(t)
	playwright := testenv.NPMPath(t, "playwright-core/index.mjs")
	chromium := testenv.Chromium(t)
	pg := testenv.StartPostgres(t)
	idp := testenv.StartIDP(t)
	everything := testenv.EverythingHTTP(t)
	writer := startWriter(t)
	ctx := context.Background()
	work := t.TempDir()

	// TLS: a test CA and the hub's certificate for 127.0.0.1. Go (the CLI
	// and this test) trusts the CA through SSL_CERT_FILE, Node through
	// NODE_EXTRA_CA_CERTS; Chromium, which reads neither, trusts the
	// certificate's key (CERT_SPKI, --ignore-certificate-errors-spki-list)
	// in this test's scripts, and any certificate in engine/dashboard's
	// approve.mjs (IGNORE_HTTPS_ERRORS=1).
	tlsCert := testenv.ProcessCA(t).Issue(t, "127.0.0.1")
	certs, caFile, spki := tlsCert.Dir, tlsCert.CA, tlsCert.SPKI
	t.Setenv("SSL_CERT_FILE", caFile)

	dbURL := pg.NewDatabase(t)
	if err := postgres.Migrate(ctx, dbURL); err != nil {
		t.Fatal(err)
	}
	kek, err := secret.NewKEK()
	if err != nil {
		t.Fatal(err)
	}
	if err := secret.WriteKEKFile(filepath.Join(work, "kek"), kek); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "idp-secret"), []byte("hub-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	// nginx first (its port is the public URL), the processes behind it.
	procs := make([]*hubProc, hostedProcs)
	for i := range procs {
		procs[i] = &hubProc{node: fmt.Sprintf("hub%d", i+1), home: filepath.Join(work, fmt.Sprintf("srv%d", i+1)), port: testenv.FreePort(t)}
	}
	ngx := startHostedNginx(t, certs, procs)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("nginx's access log:\n%s\nnginx's error log:\n%s", ngx.AccessLog(), ngx.Logs())
		}
	})
	base := "https://127.0.0.1:" + strconv.Itoa(ngx.Port)
	for _, p := range procs {
		p.cmd = exec.Command(binPath, "hosted", "serve", "--store", dbURL, "--public-url", base, "--listen", p.addr(),
			"--node", p.node, "--kek-file", filepath.Join(work, "kek"),
			"--idp-issuer", idp.Issuer, "--idp-client-id", "hub", "--idp-client-secret-file", filepath.Join(work, "idp-secret"),
			"--allow-egress", "127.0.0.1/32")
		p.cmd.Env = append(os.Environ(), "CAPABILITIES_HOME="+p.home, "NO_KEYRING=1",
			"CAPABILITIES_CONNECT_TIMEOUT="+testenv.Timeout(source.DefaultConnectTimeout).String())
		p.stderr = &testenv.Buffer{}
		p.cmd.Stderr = p.stderr
		if err := p.cmd.Start(); err != nil {
			t.Fatalf("starting hosted serve: %v", err)
		}
		t.Cleanup(func() {
			stopProc(t, p)
			if t.Failed() {
				t.Logf("hosted serve --node %s's stderr:\n%s", p.node, p.stderr.String())
			}
		})
	}
	for _, p := range procs {
		waitReady(t, p)
	}
	tenant := identity.TenantID(idp.Issuer, "alice")

	browserEnv := []string{"BROWSER_EXECUTABLE=" + chromium, "PLAYWRIGHT=" + playwright, "CERT_SPKI=" + spki,
		"BROWSER_TIMEOUT_MS=" + strconv.FormatInt(testenv.Timeout(20*time.Second).Milliseconds(), 10)}

	// The person's machine: a local hub.
	laptop := filepath.Join(work, "laptop")
	if err := os.MkdirAll(laptop, 0o700); err != nil {
		t.Fatal(err)
	}
	cli := &localCLI{t: t, dir: laptop, env: append(os.Environ(),
		"HOME="+laptop, "CAPABILITIES_HOME="+filepath.Join(laptop, ".capabilities"), "NO_KEYRING=1",
		"CAPABILITIES_NO_BROWSER=1", "CAPABILITIES_STORE=",
		"CAPABILITIES_CONNECT_TIMEOUT="+testenv.Timeout(source.DefaultConnectTimeout).String())}

	t.Run("push", func(t *testing.T) {
		cli.t = t
		const key = "sk-hosted-journey-8d2f61c0a93e"
		cli.ok("", "hub", "init")
		cli.ok("", "hub", "add", "--yes", "--namespace", "everything", everything)
		cli.ok("", "hub", "add", "--yes", "--namespace", "writer", writer.url)
		cli.ok(key+"\n", "hub", "add", "--yes", "--namespace", "keyed", "--secret-header", "X-Api-Key", "--secret-stdin", everything)

		// hub login opens its authorization URL with the browser command
		// (CAPABILITIES_BROWSER): Chromium signs in, allows, and lands on
		// the CLI's loopback listener.
		idp.NextSubject(t, "alice")
		consentOut := filepath.Join(work, "login-consent.json")
		out := cli.loginWith(append(browserEnv, "CAPABILITIES_NO_BROWSER=",
			"CAPABILITIES_BROWSER="+node+" "+filepath.Join(clientsDir(t), "hosted_consent.mjs"), "CONSENT_OUT="+consentOut), base)
		var consent struct {
			Consent, Landed, Error string
			Errors                 []string
		}
		// The CLI is done once the redirect reached it; the browser
		// command writes its answer as it closes.
		waitFor(t, "hub login's browser to answer", func() bool {
			b, err := os.ReadFile(consentOut)
			return err == nil && json.Unmarshal(b, &consent) == nil
		})
		if consent.Error != "" {
			t.Fatalf("hub login's browser: %s", consent.Error)
		}
		if !strings.Contains(out, "Signed in to "+base+" as "+tenant) {
			t.Fatalf("hub login:\n%s", out)
		}
		// The consent page says in plain words what scope hub allows.
		if !strings.Contains(consent.Consent, authserver.DefaultScopeText[authserver.ScopeHub]) || len(consent.Errors) > 0 {
			t.Errorf("hub login's consent page (errors %q):\n%s", consent.Errors, consent.Consent)
		}

		out = cli.ok("y\n", "hub", "push", "--secrets", "--yes")
		for _, want := range []string{
			"Send the secret KEYED_TOKEN (keyed/default) to " + base + "?",
			"+ source everything: " + everything,
			"+ source writer: " + writer.url,
			"+ source keyed: " + everything + "; secrets KEYED_TOKEN (default)",
			"+ secret KEYED_TOKEN (keyed/default)",
			"Pushed 4 changes of 4 changes to " + base,
		} {
			if !strings.Contains(out, want) {
				t.Errorf("hub push --secrets: no %q in:\n%s", want, out)
			}
		}
		if strings.Contains(out, key) {
			t.Fatalf("hub push printed the secret:\n%s", out)
		}
		out = cli.ok("", "hub", "status")
		for _, want := range []string{"account " + tenant, "everything", "keyed", "writer", "No drift"} {
			if !strings.Contains(out, want) {
				t.Errorf("hub status: no %q in:\n%s", want, out)
			}
		}
		if out := cli.ok("", "hub", "push"); !strings.Contains(out, "Nothing to push") {
			t.Errorf("a second hub push:\n%s", out)
		}
	})
	if t.Failed() {
		return
	}

	// The login's refreshing client, as the desktop app uses it.
	laptopHub := filepath.Join(laptop, ".capabilities", "hub")
	login, err := hostedlogin.Load(ctx, secret.Open(secret.Options{File: filepath.Join(laptopHub, "secrets.json"), Keychain: offKeychain{}, Logger: slog.New(slog.DiscardHandler)}), laptopHub, base)
	if err != nil {
		t.Fatalf("reading hub login's sign-in: %v", err)
	}
	desktop := login.Client(ctx)
	runStatus := func(t *testing.T, run string) string {
		t.Helper()
		var st push.Status
		apiJSON(t, desktop, "GET", base+"/api/status", nil, &st)
		for _, r := range st.Runs {
			if r.ID == run {
				return r.Status
			}
		}
		t.Fatalf("run %s is not in /api/status: %+v", run, st.Runs)
		return ""
	}

	// Review decisions are not pushed: the person reviews the pushed
	// sources' tools in the dashboard (until then every call asks).
	t.Run("review", func(t *testing.T) {
		var before push.Status
		apiJSON(t, desktop, "GET", base+"/api/status", nil, &before)
		if before.Unreviewed == 0 {
			t.Fatalf("after the push no tool awaits review: %+v", before)
		}
		idp.NextSubject(t, "alice")
		cctx, cancel := context.WithTimeout(ctx, testenv.Timeout(2*time.Minute))
		defer cancel()
		c := exec.CommandContext(cctx, node, filepath.Join(clientsDir(t), "hosted_review.mjs"), base+"/")
		c.Env = append(os.Environ(), browserEnv...)
		b, err := c.Output()
		if err != nil {
			t.Fatalf("hosted_review.mjs: %v\n%s\n%s", err, b, stderrOf(err))
		}
		var got struct {
			Status   int
			Accepted string
			Errors   []string
			Failed   []string
		}
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("hosted_review.mjs printed %q: %v", b, err)
		}
		// A known fault, not this test's subject: the Review screen also
		// asks GET /api/import (the agents' skills folders to import
		// from), which a hub on PostgreSQL answers 500 ("this hub keeps no
		// skills"); Chromium logs it. Any other failure fails the test.
		if slices.Equal(got.Failed, []string{"500 /api/import"}) {
			t.Logf("known: the hosted Review screen's GET /api/import answered 500 (%q)", got.Errors)
			got.Errors = slices.DeleteFunc(got.Errors, func(e string) bool {
				return e == "console: Failed to load resource: the server responded with a status of 500 ()"
			})
			got.Failed = nil
		}
		if got.Status != 200 || !strings.Contains(got.Accepted, fmt.Sprintf("Accepted %d tool(s)", before.Unreviewed)) || len(got.Errors) > 0 || len(got.Failed) > 0 {
			t.Fatalf("the review in the dashboard: %+v (want %d tools accepted)", got, before.Unreviewed)
		}
		var after push.Status
		apiJSON(t, desktop, "GET", base+"/api/status", nil, &after)
		if after.Unreviewed != 0 {
			t.Fatalf("after the review %d tools await review", after.Unreviewed)
		}
	})
	if t.Failed() {
		return
	}

	var conn struct {
		Consent, Scope, Search, Describe, AuthorizeURL string
		Refreshed, Rotated                             bool
		APIStatus                                      int
		Tools                                          []string
		Read                                           *hostedEnvelope
		Writes                                         []struct {
			Text string
			Env  *hostedEnvelope
		}
	}
	t.Run("connector", func(t *testing.T) {
		idp.NextSubject(t, "alice")
		cctx, cancel := context.WithTimeout(ctx, testenv.Timeout(2*time.Minute))
		defer cancel()
		c := exec.CommandContext(cctx, node, filepath.Join(clientsDir(t), "hosted_connector.mjs"))
		c.Env = append(os.Environ(), append(browserEnv, "HUB_URL="+base, "WRITES=2", "NODE_EXTRA_CA_CERTS="+caFile)...)
		b, err := c.Output()
		if err != nil {
			t.Fatalf("hosted_connector.mjs: %v\n%s\n%s", err, b, stderrOf(err))
		}
		if err := json.Unmarshal(b, &conn); err != nil {
			t.Fatalf("hosted_connector.mjs printed %q: %v", b, err)
		}
		if !strings.Contains(conn.Consent, "Journey connector") || !strings.Contains(conn.Consent, "http://127.0.0.1:") {
			t.Errorf("the consent page does not name the client and its redirect:\n%s", conn.Consent)
		}
		if !strings.Contains(conn.Consent, authserver.DefaultScopeText[authserver.ScopeMCP]) || strings.Contains(conn.Consent, authserver.DefaultScopeText[authserver.ScopeHub]) {
			t.Errorf("the connector's consent page should offer the tools only (scope mcp):\n%s", conn.Consent)
		}
		for _, want := range []string{"code_challenge_method=S256", "resource=" + urlEscape(base+"/mcp")} {
			if !strings.Contains(conn.AuthorizeURL, want) {
				t.Errorf("the SDK's authorization URL has no %s: %s", want, conn.AuthorizeURL)
			}
		}
		if strings.Contains(conn.Scope, "hub") {
			t.Errorf("the connector's token has scope %q: a client naming no scope gets mcp only", conn.Scope)
		}
		if conn.APIStatus != http.StatusForbidden {
			t.Errorf("the connector's mcp token at /api/status: %d, want 403", conn.APIStatus)
		}
		if !conn.Refreshed || !conn.Rotated {
			t.Errorf("refresh: new access token %v, refresh token rotated %v", conn.Refreshed, conn.Rotated)
		}
		if strings.Join(conn.Tools, " ") != "describe execute search" {
			t.Errorf("tools: %v", conn.Tools)
		}
		if !strings.Contains(conn.Search, "writer.record(") {
			t.Errorf("search: no writer.record:\n%s", conn.Search)
		}
		if !strings.Contains(conn.Describe, "item") {
			t.Errorf("describe writer.record:\n%s", conn.Describe)
		}
		if conn.Read == nil || conn.Read.Status != string(model.RunCompleted) || !strings.Contains(string(conn.Read.Result), "hi from the connector") {
			t.Errorf("execute (a read): %+v", conn.Read)
		}
		if len(conn.Writes) != 2 {
			t.Fatalf("writes: %+v", conn.Writes)
		}
		for _, w := range conn.Writes {
			if w.Env == nil || w.Env.Status != string(model.RunAwaitingApproval) || len(w.Env.Pending) != 1 || w.Env.Pending[0].Address != "writer.record" {
				t.Fatalf("execute (a write) = %+v, want awaiting_approval on writer.record\n%s", w.Env, w.Text)
			}
			if !strings.Contains(w.Text, "dashboard") {
				t.Errorf("the pending write does not say the person decides in the dashboard:\n%s", w.Text)
			}
		}
		if n := writer.calls.Load(); n != 0 {
			t.Fatalf("the writer acted %d times before any decision", n)
		}
	})
	if t.Failed() {
		return
	}

	t.Run("dashboard", func(t *testing.T) {
		run := conn.Writes[0].Env.RunID
		idp.NextSubject(t, "alice")
		cctx, cancel := context.WithTimeout(ctx, testenv.Timeout(2*time.Minute))
		defer cancel()
		c := exec.CommandContext(cctx, node, filepath.Join(testenv.Root(t), "engine", "dashboard", "testdata", "approve.mjs"), base+"/", run)
		c.Env = append(os.Environ(), append(browserEnv, "IGNORE_HTTPS_ERRORS=1")...)
		b, err := c.Output()
		if err != nil {
			t.Fatalf("approve.mjs: %v\n%s\n%s", err, b, stderrOf(err))
		}
		var got struct {
			Status int
			Body   struct{ Run, Call, Choice, Channel string }
			Errors []string
		}
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("approve.mjs printed %q: %v", b, err)
		}
		if got.Status != 200 || got.Body.Run != run || got.Body.Channel != "dashboard" || got.Body.Choice != string(model.ChoiceOnce) || len(got.Errors) > 0 {
			t.Fatalf("the dashboard's decision: %+v", got)
		}
		// Nobody waits on a dashboard decision: the hosted hub finishes the
		// run by itself.
		waitFor(t, "the run decided in the dashboard to complete", func() bool {
			return runStatus(t, run) == string(model.RunCompleted)
		})
		if n := writer.calls.Load(); n != 1 {
			t.Fatalf("the writer acted %d times; want once", n)
		}
	})

	t.Run("desktop", func(t *testing.T) {
		w := conn.Writes[1].Env
		var in json.RawMessage
		apiJSON(t, desktop, "GET", base+"/api/inbox", nil, &in)
		if !strings.Contains(string(in), w.RunID) || strings.Contains(string(in), conn.Writes[0].Env.RunID) {
			t.Fatalf("the inbox should list the pending run %s only:\n%s", w.RunID, in)
		}
		// The app follows the inbox's event stream (through nginx's
		// unbuffered location): the inbox first, a "settled" once decided.
		events := inboxEvents(t, desktop, base)
		if ev := <-events; ev.name != "inbox" || !strings.Contains(ev.data, w.RunID) {
			t.Fatalf("the event stream's first event: %+v; want the inbox with run %s", ev, w.RunID)
		}
		var d inbox.Decided
		apiJSON(t, desktop, "POST", base+"/api/inbox/decide", inbox.Decide{Run: w.RunID, Call: w.Pending[0].ID, Decision: string(model.ChoiceOnce)}, &d)
		if d.Channel != "desktop" || d.Decision != model.ChoiceOnce || d.Waiting != 0 {
			t.Fatalf("the desktop decision: %+v", d)
		}
		settled := false
		for ev := range events {
			if ev.name == "settled" {
				var st inbox.Settled
				if err := json.Unmarshal([]byte(ev.data), &st); err != nil || st != (inbox.Settled{Run: w.RunID, Call: w.Pending[0].ID}) {
					t.Fatalf("the settled event: %+v %v", ev, err)
				}
				settled = true
				break
			}
		}
		if !settled {
			t.Fatal("the inbox's event stream ended with no settled event for the decided call")
		}
		waitFor(t, "the run decided from the desktop to complete", func() bool {
			return runStatus(t, w.RunID) == string(model.RunCompleted)
		})
		if n := writer.calls.Load(); n != 2 {
			t.Fatalf("the writer acted %d times; want 2 (each decided write once)", n)
		}
		if items := writer.items(); strings.Join(items, ",") != "journey 0,journey 1" {
			t.Fatalf("the writer's log: %q", items)
		}
	})

	// nginx spread the journey over every process.
	for _, p := range procs {
		if !strings.Contains(ngx.AccessLog(), `"`+p.addr()+`"`) {
			t.Errorf("nginx sent no request to hosted serve --node %s", p.node)
		}
	}
}

type sseEvent struct{ name, data string }

// inboxEvents follows GET /api/inbox/events until the test ends; the
// channel is closed when the stream ends or the test's timeout passes.
func inboxEvents(t *testing.T, client *http.Client, base string) <-chan sseEvent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(time.Minute))
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, "GET", base+"/api/inbox/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("GET /api/inbox/events: %v", err)
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		resp.Body.Close()
		t.Fatalf("GET /api/inbox/events: %s %s", resp.Status, resp.Header.Get("Content-Type"))
	}
	ch := make(chan sseEvent, 16)
	go func() {
		defer close(ch)
		defer resp.Body.Close()
		s := bufio.NewScanner(resp.Body)
		s.Buffer(nil, 1<<20)
		var ev sseEvent
		for s.Scan() {
			switch line := s.Text(); {
			case strings.HasPrefix(line, "event: "):
				ev.name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				ev.data += strings.TrimPrefix(line, "data: ")
			case line == "" && ev.name != "":
				select {
				case ch <- ev:
				case <-ctx.Done():
					return
				}
				ev = sseEvent{}
			}
		}
	}()
	return ch
}

// hostedEnvelope is execute's structured result.
type hostedEnvelope struct {
	RunID   string          `json:"runId"`
	Status  string          `json:"status"`
	Result  json.RawMessage `json:"result"`
	Pending []struct{ ID, Address string }
}

// startHostedNginx runs deploy/hosted/nginx.conf as committed but for its
// ports (the clear-text redirect server needs port 80: left out) and
// certificate files: its two processes, hub1 at 127.0.0.1:8790 and hub2
// at :8791, are procs (whose --node names are hub1 and hub2).
func startHostedNginx(t *testing.T, certs string, procs []*hubProc) *testenv.Nginx {
	t.Helper()
	conf, err := os.ReadFile(filepath.Join(testenv.Root(t), "deploy", "hosted", "nginx.conf"))
	if err != nil {
		t.Fatal(err)
	}
	if len(procs) != 2 || procs[0].node != "hub1" || procs[1].node != "hub2" {
		t.Fatalf("deploy/hosted/nginx.conf serves hub1 and hub2; the test starts %d processes", len(procs))
	}
	return testenv.StartNginx(t, func(port int) string {
		s := string(conf)
		s = regexp.MustCompile(`(?s)server \{\s*listen 80;.*?\n\}\n`).ReplaceAllString(s, "")
		for _, r := range []struct{ old, new string }{
			{"    listen 443 ssl http2;\n", "    listen 127.0.0.1:" + strconv.Itoa(port) + " ssl http2;\n"},
			{"    listen [::]:443 ssl http2;\n", ""},
			{"/etc/ssl/hub.example.com.crt", filepath.Join(certs, "hub.crt")},
			{"/etc/ssl/hub.example.com.key", filepath.Join(certs, "hub.key")},
			{"127.0.0.1:8790;", procs[0].addr() + ";"},
			{"127.0.0.1:8791;", procs[1].addr() + ";"},
			{"127.0.0.1:8790 backup;", procs[0].addr() + " backup;"},
			{"127.0.0.1:8791 backup;", procs[1].addr() + " backup;"},
		} {
			if !strings.Contains(s, r.old) {
				t.Fatalf("deploy/hosted/nginx.conf has no %q any more: update the test", r.old)
			}
			s = strings.ReplaceAll(s, r.old, r.new)
		}
		return s
	})
}

// writerServer is an MCP server over streamable HTTP with one write tool,
// record, keeping its own log of the calls it acted on.
type writerServer struct {
	url   string
	calls atomic.Int64
	log   chan string
	seen  []string
}

func startWriter(t *testing.T) *writerServer {
	t.Helper()
	w := &writerServer{log: make(chan string, 16)}
	srv := mcp.NewServer(&mcp.Implementation{Name: "writer", Version: "1.0.0"}, nil)
	type in struct {
		Item string `json:"item" jsonschema:"the item to record"`
	}
	destructive := true
	mcp.AddTool(srv, &mcp.Tool{Name: "record", Description: "Record an item in the ledger (a write).",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: false, DestructiveHint: &destructive}},
		func(_ context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
			w.calls.Add(1)
			w.log <- a.Item
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "recorded " + a.Item}}}, nil, nil
		})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	w.url = ts.URL + "/mcp"
	return w
}

// items is the writer's log so far.
func (w *writerServer) items() []string {
	for {
		select {
		case s := <-w.log:
			w.seen = append(w.seen, s)
		default:
			return w.seen
		}
	}
}

// localCLI runs the binary as the person's machine.
type localCLI struct {
	t   *testing.T
	dir string
	env []string
}

func (c *localCLI) run(stdin string, args ...string) (string, error) {
	cmd := exec.Command(binPath, args...)
	cmd.Dir, cmd.Env = c.dir, c.env
	cmd.Stdin = strings.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

func (c *localCLI) ok(stdin string, args ...string) string {
	c.t.Helper()
	out, err := c.run(stdin, args...)
	if err != nil {
		c.t.Fatalf("capabilities %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// loginWith runs `hub login url` with extra environment (its browser
// command) and returns its output.
func (c *localCLI) loginWith(env []string, u string) string {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(2*time.Minute))
	defer cancel()
	cmd := exec.CommandContext(ctx, binPath, "hub", "login", u)
	cmd.Dir, cmd.Env = c.dir, append(append([]string{}, c.env...), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		c.t.Fatalf("hub login: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// offKeychain is a keychain that is never there (NO_KEYRING=1): hub
// login's tokens are in the hub folder's secrets.json, as the CLI and the
// desktop app open it.
type offKeychain struct{}

var errOffKeychain = errors.New("the keychain is turned off")

func (offKeychain) Get(string, string) (string, error) { return "", errOffKeychain }
func (offKeychain) Set(string, string, string) error   { return errOffKeychain }
func (offKeychain) Delete(string, string) error        { return errOffKeychain }

// apiJSON sends a JSON request with client and decodes a 200's JSON answer.
func apiJSON(t *testing.T, client *http.Client, method, url string, body, out any) {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		r = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(30*time.Second))
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, r)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s %s: %s\n%s", method, url, resp.Status, b)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("%s %s: %v\n%s", method, url, err, b)
	}
}

// waitFor polls cond until it holds (the timeout is generous and not what
// is tested).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testenv.Timeout(30 * time.Second))
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: timed out", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func stderrOf(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return string(ee.Stderr)
	}
	return ""
}

func urlEscape(s string) string {
	r := strings.NewReplacer(":", "%3A", "/", "%2F")
	return r.Replace(s)
}
