package console_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/console"
	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/secret"
	"github.com/capabilities-sh/capabilities/engine/source"
	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/capabilities-sh/capabilities/store"
)

// fixture is a hub in a temporary home with one real upstream, the
// scripted MCP server as namespace "up" (echo and sleep read, record
// writes), reviewed, with a credential.
type fixture struct {
	h     *hub.Hub
	st    *store.File
	calls string // the upstream appends a line per call it acts on
	state string // SCRIPTED_STATE: change the upstream's tools between refreshes
	logs  *testenv.Buffer
}

const theSecret = "sk-console-test-9f8e7d6c5b4a"

func newFixture(t *testing.T) *fixture {
	t.Helper()
	dir := t.TempDir()
	st, _, err := store.Init(filepath.Join(dir, "hub"))
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{st: st, calls: filepath.Join(dir, "calls.jsonl"), state: filepath.Join(dir, "state.json"), logs: &testenv.Buffer{}}
	log := slog.New(slog.NewTextHandler(f.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	f.h = hub.New(st, hub.Options{
		Logger:  log,
		Secrets: secret.NewMemory(nil),
		Source:  source.Options{ConnectTimeout: testenv.Timeout(30 * time.Second), CallTimeout: testenv.Timeout(60 * time.Second)},
	})
	t.Cleanup(f.h.Close)
	ctx := context.Background()
	p, err := f.h.Propose(ctx, hub.AddRequest{
		Command:   testenv.Scripted(t),
		Namespace: "up",
		SecretEnv: "SCRIPTED_TOKEN",
		Env:       map[string]string{"SCRIPTED_TOOLS": "4", "SCRIPTED_CALLS": f.calls, "SCRIPTED_STATE": f.state},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.h.Accept(ctx, p); err != nil {
		t.Fatal(err)
	}
	r, err := f.h.PendingReview(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.h.AcceptReview(ctx, r, nil, "test"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.h.Auth(ctx, hub.AuthRequest{Namespace: "up", Value: theSecret}); err != nil {
		t.Fatal(err)
	}
	return f
}

// pending runs code that must pause on a write and returns the run's id.
func (f *fixture) pending(t *testing.T, code string) string {
	t.Helper()
	env, err := f.h.Execute(context.Background(), code)
	if err != nil {
		t.Fatal(err)
	}
	if env.Status != string(model.RunAwaitingApproval) || len(env.Pending) == 0 {
		t.Fatalf("the run did not wait for a decision: %s %+v", env.Status, env.Error)
	}
	return env.RunID
}

// upstreamCalls counts the calls the upstream acted on.
func (f *fixture) upstreamCalls(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile(f.calls)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

// run reads a run record (through the engine, which waits for the records
// of runs that just ended).
func (f *fixture) run(t *testing.T, id string) *model.Run {
	t.Helper()
	runs, err := f.h.Runs()
	if err != nil {
		t.Fatal(err)
	}
	r, err := runs.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// browser is a person's browser on the page: it keeps cookies and sends
// what a browser sends from the page (Origin, Sec-Fetch-Site).
type browser struct {
	t      *testing.T
	c      *http.Client
	origin string
	csrf   string
}

func newBrowser(t *testing.T, origin string) *browser {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &browser{t: t, c: &http.Client{Jar: jar, Timeout: testenv.Timeout(30 * time.Second)}, origin: origin}
}

// open follows the one-time link, as the person's click does.
func (b *browser) open(link string) *http.Response {
	b.t.Helper()
	req, err := http.NewRequest(http.MethodGet, link, nil)
	if err != nil {
		b.t.Fatal(err)
	}
	req.Header.Set("Sec-Fetch-Site", "none")
	res, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	res.Body.Close()
	return res
}

// do sends a request from the page, with a JSON body when body is not nil.
func (b *browser) do(method, path string, body any) (int, []byte) {
	b.t.Helper()
	var rd io.Reader
	if body != nil {
		j, err := json.Marshal(body)
		if err != nil {
			b.t.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, b.origin+path, rd)
	if err != nil {
		b.t.Fatal(err)
	}
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	if method != http.MethodGet {
		req.Header.Set("Origin", b.origin)
		req.Header.Set("Content-Type", "application/json")
		if b.csrf != "" {
			req.Header.Set(console.CSRFHeader, b.csrf)
		}
	}
	res, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		b.t.Fatal(err)
	}
	return res.StatusCode, data
}

// get decodes a GET's JSON answer, which must be 200.
func (b *browser) get(path string, v any) {
	b.t.Helper()
	code, data := b.do(http.MethodGet, path, nil)
	if code != http.StatusOK {
		b.t.Fatalf("GET %s: %d %s", path, code, data)
	}
	if err := json.Unmarshal(data, v); err != nil {
		b.t.Fatalf("GET %s: %v in %s", path, err, data)
	}
}

// login opens the link and reads the session's CSRF token.
func (b *browser) login(link string) {
	b.t.Helper()
	res := b.open(link)
	if res.StatusCode != http.StatusOK {
		b.t.Fatalf("opening the link: %s", res.Status)
	}
	if res.Request.URL.RawQuery != "" {
		b.t.Fatalf("the page kept the token in its address: %s", res.Request.URL.Redacted())
	}
	var s console.Session
	b.get("/api/session", &s)
	if s.CSRF == "" {
		b.t.Fatal("the session has no CSRF token")
	}
	b.csrf = s.CSRF
}

// serve starts the console behind its guard on a loopback port.
func serve(t *testing.T, h http.Handler, gopts console.GuardOptions) (*console.Guard, string) {
	t.Helper()
	ln, err := console.Listen("")
	if err != nil {
		t.Fatal(err)
	}
	g, err := console.NewGuard(h, ln.Addr().String(), gopts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- console.Serve(ctx, ln, g) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	link, err := g.Link()
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(link)
	if err != nil || u.Host != ln.Addr().String() {
		t.Fatalf("the link %q is not at the listener %s", link, ln.Addr())
	}
	return g, link
}
