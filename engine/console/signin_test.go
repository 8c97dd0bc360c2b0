package console_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/console"
	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/secret"
	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/capabilities-sh/capabilities/store"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// oauthHub is a hub with one source behind a real OAuth authorization
// server (testdata/upstreams/oauth-resource.mjs), added before anyone
// signed in: it needs a sign-in.
func oauthHub(t *testing.T) (*hub.Hub, *testenv.OAuthServer, *testenv.Buffer) {
	t.Helper()
	srv := testenv.StartOAuthServer(t)
	st, _, err := store.Init(filepath.Join(t.TempDir(), "hub"))
	if err != nil {
		t.Fatal(err)
	}
	logs := &testenv.Buffer{}
	h := hub.New(st, hub.Options{Secrets: secret.NewMemory(nil), Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	t.Cleanup(h.Close)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("hub log:\n%s", logs.String())
		}
	})
	ctx := context.Background()
	p, err := h.Propose(ctx, hub.AddRequest{URL: srv.MCP, Namespace: "acme"})
	if err != nil {
		t.Fatalf("adding a server that wants a sign-in: %v", err)
	}
	if !p.SignIn {
		t.Fatalf("the server was added without asking for a sign-in: %+v", p.Source)
	}
	if err := h.Accept(ctx, p); err != nil {
		t.Fatal(err)
	}
	return h, srv, logs
}

// approve follows an authorization URL as the person's browser does: the
// mock authorization server approves at once and redirects to the hub's
// loopback listener.
func approve(t *testing.T, authURL string) error {
	t.Helper()
	c := &http.Client{Timeout: testenv.Timeout(30 * time.Second)}
	res, err := c.Get(authURL)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return &url.Error{Op: "GET", URL: authURL, Err: io.ErrUnexpectedEOF}
	}
	return nil
}

// signIns reads GET /api/signins.
func signIns(b *browser) console.SignIns {
	b.t.Helper()
	var s console.SignIns
	b.get("/api/signins", &s)
	return s
}

// waitSignIn polls GET /api/signins until acme/default is in state (the
// bound only ends a failing test).
func waitSignIn(t *testing.T, b *browser, state string) console.SignIn {
	t.Helper()
	deadline := time.Now().Add(testenv.Timeout(30 * time.Second))
	var last console.SignIns
	for time.Now().Before(deadline) {
		last = signIns(b)
		for _, s := range last.SignIns {
			if s.Namespace == "acme" && s.Connection == "default" && s.State == state {
				return s
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("acme/default never reached %s: %+v", state, last)
	return console.SignIn{}
}

// TestSignInFromTheConsole: a source that needs a sign-in is listed with
// its reason; POST /api/signin starts the hub's OAuth flow in the
// background and answers with the authorization page's URL (PKCE, the
// loopback redirect); once the browser comes back the need is gone, the
// source's tools are listed, and a call succeeds. A second sign-in for the
// same connection replaces the first (its loopback listener closes). When
// the server revokes the tokens the need is back ("sign in again"), and a
// console that opens the browser itself (the desktop window) says so and
// hands the URL to its opener.
func TestSignInFromTheConsole(t *testing.T) {
	t.Parallel()
	h, srv, _ := oauthHub(t)
	ctx := context.Background()
	var mu sync.Mutex
	var handed []string
	_, link := serve(t, console.New(h, console.Options{}), console.GuardOptions{})
	b := newBrowser(t, strings.TrimSuffix(strings.SplitN(link, "?", 2)[0], "/"))
	b.login(link)

	// Listed, with its reason.
	got := signIns(b)
	want := console.SignIns{SignIns: []console.SignIn{{Namespace: "acme", Connection: "default", Reason: "not signed in yet", State: console.SignInNeeded}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("GET /api/signins before signing in (-want +got):\n%s", diff)
	}

	// Started: the answer carries the authorization URL.
	start := func() console.SignIn {
		t.Helper()
		code, data := b.do(http.MethodPost, "/api/signin", map[string]string{"namespace": "acme", "clientId": "console-test"})
		var a console.SignIn
		if err := json.Unmarshal(data, &a); code != http.StatusAccepted || err != nil {
			t.Fatalf("POST /api/signin: %d %s", code, data)
		}
		return a
	}
	first := start()
	u, err := url.Parse(first.AuthURL)
	if first.State != console.SignInWaiting || err != nil || !strings.HasPrefix(first.AuthURL, srv.Issuer) || first.Opened {
		t.Fatalf("POST /api/signin answered %+v; want waiting, with the authorization server's URL for the page to open", first)
	}
	q := u.Query()
	if q.Get("code_challenge_method") != "S256" || q.Get("client_id") != "console-test" || !strings.HasPrefix(q.Get("redirect_uri"), "http://127.0.0.1:") || q.Get("resource") != srv.MCP {
		t.Errorf("the authorization URL %s lacks PKCE, the client, the loopback redirect or the resource", first.AuthURL)
	}
	if s := waitSignIn(t, b, console.SignInWaiting); s.AuthURL != first.AuthURL || s.Reason != "not signed in yet" {
		t.Errorf("GET /api/signins while waiting: %+v", s)
	}

	// One at a time: a second start replaces the first, whose listener
	// closes; the second one signs in.
	second := start()
	if second.AuthURL == "" || second.AuthURL == first.AuthURL {
		t.Fatalf("the second sign-in: %+v", second)
	}
	if err := approve(t, first.AuthURL); err == nil {
		t.Errorf("the replaced sign-in still took the browser's answer")
	}
	if err := approve(t, second.AuthURL); err != nil {
		t.Fatalf("the browser coming back: %v", err)
	}
	done := waitSignIn(t, b, console.SignInSignedIn)
	if done.Tools == nil || *done.Tools == 0 || done.Error != "" || done.AuthURL != "" {
		t.Errorf("signed in: %+v; want the tools listed", done)
	}
	if needs, err := h.SignInNeeded(ctx); err != nil || len(needs) != 0 {
		t.Errorf("SignInNeeded once signed in = %+v, %v", needs, err)
	}
	r, err := h.PendingReview(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	if err := h.AcceptReview(ctx, r, nil, "test"); err != nil {
		t.Fatal(err)
	}
	if res, err := h.Call(ctx, "acme.echo", json.RawMessage(`{"message":"signed in"}`), ""); err != nil || res.IsError {
		t.Fatalf("a call once signed in from the console: %v %+v", err, res)
	}

	// Revoked: the need is back, with why. A console that opens the
	// browser itself (the desktop app's window) hands it the URL.
	srv.Revoke(t)
	if _, err := h.Call(ctx, "acme.echo", json.RawMessage(`{"message":"revoked"}`), ""); err == nil || !strings.Contains(err.Error(), "sign in again") {
		t.Fatalf("a call after the revocation: %v; want it to say to sign in again", err)
	}
	desk := console.New(h, console.Options{OpenURL: func(u string) error {
		mu.Lock()
		handed = append(handed, u)
		mu.Unlock()
		return approve(t, u)
	}})
	_, link2 := serve(t, desk, console.GuardOptions{})
	b2 := newBrowser(t, strings.TrimSuffix(strings.SplitN(link2, "?", 2)[0], "/"))
	b2.login(link2)
	need := waitSignIn(t, b2, console.SignInNeeded)
	if !strings.Contains(need.Reason, "refresh token") {
		t.Errorf("the need after the revocation says %q; want why (the refresh token was refused)", need.Reason)
	}
	code, data := b2.do(http.MethodPost, "/api/signin", map[string]string{"namespace": "acme", "connection": "default", "clientId": "console-test"})
	var again console.SignIn
	if err := json.Unmarshal(data, &again); code != http.StatusAccepted || err != nil || !again.Opened {
		t.Fatalf("POST /api/signin on the desktop's console: %d %s; want opened by the hub", code, data)
	}
	waitSignIn(t, b2, console.SignInSignedIn)
	mu.Lock()
	if len(handed) != 1 || handed[0] != again.AuthURL {
		t.Errorf("the opener got %q, want the one authorization URL %q", handed, again.AuthURL)
	}
	mu.Unlock()
	if res, err := h.Call(ctx, "acme.echo", json.RawMessage(`{"message":"again"}`), ""); err != nil || res.IsError {
		t.Fatalf("a call once signed in again: %v %+v", err, res)
	}
	if n := srv.Authorizations(t); n != 3 {
		t.Errorf("%d authorizations at the server, want 3 (the replaced one, the first sign-in, the second)", n)
	}
}

// postFrom is b.do's POST /api/signin with another Origin when origin is
// set.
func postFrom(b *browser, origin string, body any) (int, []byte) {
	b.t.Helper()
	if origin == "" {
		return b.do(http.MethodPost, "/api/signin", body)
	}
	j, _ := json.Marshal(body)
	req, err := http.NewRequest(http.MethodPost, b.origin+"/api/signin", strings.NewReader(string(j)))
	if err != nil {
		b.t.Fatal(err)
	}
	req.Header.Set("Origin", origin)
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(console.CSRFHeader, b.csrf)
	res, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	return res.StatusCode, data
}

// TestSignInRefusals: starting a sign-in is a person's change, refused
// like any other without the session's CSRF token, from another origin,
// from a page about one run, and for what cannot be signed in to; nothing
// starts (no need changes, no authorization at the server).
func TestSignInRefusals(t *testing.T) {
	t.Parallel()
	h, srv, _ := oauthHub(t)
	full := console.New(h, console.Options{})
	oneRun := console.New(h, console.Options{Run: "r-0123456789abcdef"})
	start := map[string]string{"namespace": "acme"}
	for _, tc := range []struct {
		name    string
		handler http.Handler
		body    any
		prepare func(b *browser)
		origin  string // the Origin header sent (default: the page's)
		code    int
		errCode string
	}{
		{name: "no CSRF token", handler: full, body: start, prepare: func(b *browser) { b.csrf = "" }, code: http.StatusForbidden, errCode: "csrf"},
		{name: "a forged CSRF token", handler: full, body: start, prepare: func(b *browser) { b.csrf = strings.Repeat("A", 43) }, code: http.StatusForbidden, errCode: "csrf"},
		{name: "another origin", handler: full, body: start, origin: "http://evil.example", code: http.StatusForbidden, errCode: "bad_origin"},
		{name: "a page about one run", handler: oneRun, body: start, code: http.StatusForbidden, errCode: "read_only"},
		{name: "no such source", handler: full, body: map[string]string{"namespace": "nope"}, code: http.StatusNotFound, errCode: "not_found"},
		{name: "an unknown field", handler: full, body: map[string]string{"namespace": "acme", "secret": "x"}, code: http.StatusBadRequest, errCode: "bad_request"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, link := serve(t, tc.handler, console.GuardOptions{})
			b := newBrowser(t, strings.TrimSuffix(strings.SplitN(link, "?", 2)[0], "/"))
			b.login(link)
			if tc.prepare != nil {
				tc.prepare(b)
			}
			code, data := postFrom(b, tc.origin, tc.body)
			var e struct {
				Error struct{ Code string } `json:"error"`
			}
			_ = json.Unmarshal(data, &e)
			if code != tc.code || e.Error.Code != tc.errCode {
				t.Fatalf("POST /api/signin: %d %s; want %d %s", code, data, tc.code, tc.errCode)
			}
			got := signIns(b)
			want := console.SignIns{SignIns: []console.SignIn{{Namespace: "acme", Connection: "default", Reason: "not signed in yet", State: console.SignInNeeded}}, ReadOnly: tc.handler == oneRun}
			if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("GET /api/signins after the refusal (-want +got):\n%s", diff)
			}
		})
	}
	if n := srv.Authorizations(t); n != 0 {
		t.Errorf("%d authorizations at the server after refusals only, want 0", n)
	}
}

// TestSignInScreenKeepsDataAsText renders the Sources screen's sign-ins
// (frontend/signin.js) in Node over a DOM whose HTML sinks throw, with the
// XSS corpus as namespaces, connections, reasons and errors: every payload
// comes out as text, in full; the only elements are the screen's own; a
// page about one run shows no button.
func TestSignInScreenKeepsDataAsText(t *testing.T) {
	t.Parallel()
	var list []console.SignIn
	states := []string{console.SignInNeeded, console.SignInWaiting, console.SignInFailed, console.SignInSignedIn}
	for i, x := range xss {
		list = append(list, console.SignIn{Namespace: "ns" + x, Connection: "c" + x, Reason: x, State: states[i%len(states)], Error: x, AuthURL: "https://auth.example/authorize?state=" + url.QueryEscape(x)})
	}
	for _, readOnly := range []bool{false, true} {
		input := filepath.Join(t.TempDir(), "signins.json")
		b, err := json.Marshal(console.SignIns{SignIns: list, ReadOnly: readOnly})
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(input, b, 0o600); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(60*time.Second))
		out, err := exec.CommandContext(ctx, testenv.Node(t), filepath.Join("testdata", "render_signin.mjs"), filepath.Join(testenv.Root(t), "frontend"), input).Output()
		cancel()
		if err != nil {
			var stderr []byte
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = ee.Stderr
			}
			t.Fatalf("rendering: %v\n%s", err, stderr)
		}
		var got struct {
			Text        string
			Tags, Attrs []string
			Testids     []struct{ Testid, Text string }
		}
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		for i, x := range xss {
			if !strings.Contains(got.Text, "ns"+x+"/c"+x) || !strings.Contains(got.Text, x) {
				t.Errorf("payload %d (%q) is not shown as text", i, x)
			}
		}
		wantTags := []string{"CODE", "DETAILS", "DIV", "H3", "INPUT", "LABEL", "P", "SECTION", "SPAN", "SUMMARY", "BUTTON"}
		if readOnly {
			wantTags = []string{"CODE", "DIV", "H3", "P", "SECTION", "SPAN"}
		}
		if diff := cmp.Diff(wantTags, got.Tags, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
			t.Errorf("readOnly %v: the elements built (-want +got):\n%s", readOnly, diff)
		}
		failed := 0
		for _, e := range got.Testids {
			if e.Testid == "signin-error" {
				failed++
			}
		}
		if want := len(xss) / len(states); failed < want {
			t.Errorf("%d failed sign-ins show their error, want at least %d", failed, want)
		}
	}
}
