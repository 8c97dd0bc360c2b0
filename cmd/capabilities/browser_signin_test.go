package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capabilities-sh/capabilities/internal/testenv"
)

// TestSignInInABrowser signs in to an OAuth MCP server from the console's
// Sources screen in a real headless Chromium: the server (oauth2-mock-server
// in front of server-everything, testdata/upstreams/oauth-resource.mjs) is
// added with `hub add` before anyone signed in, so the screen lists
// acme/default as needing a sign-in; the person gives the client ID (the
// mock registers no clients) and clicks "Sign in"; the page opens the
// authorization page in a new tab, the mock approves and redirects to the
// hub's loopback listener, and the screen says it is signed in, with the
// source's tools listed and no sign-in left to do. A later `hub call`
// through the new tokens succeeds. No console or page error.
func TestSignInInABrowser(t *testing.T) {
	chromium, pw := requireBrowser(t)
	node := testenv.Node(t)
	srv := testenv.StartOAuthServer(t)
	work := t.TempDir()
	h := newBrowserHub(t, work)
	h.run("hub", "init")
	if out := h.run("hub", "add", "--yes", "--namespace", "acme", srv.MCP); !strings.Contains(out, "capabilities hub auth acme") {
		t.Fatalf("hub add of the OAuth server does not say it needs a sign-in:\n%s", out)
	}

	link := h.console()
	p := startDriver(t, node, chromium, pw)
	p.do(map[string]any{"op": "open", "url": link}, nil)
	p.do(map[string]any{"op": "click", "selector": "#nav-sources"}, nil)
	need := `[data-testid="signin"][data-namespace="acme"][data-connection="default"]`
	if got := p.text(need+`[data-state="needed"]`, "not signed in yet"); !strings.Contains(got, "acme/default") {
		t.Fatalf("the Sources screen shows %q; want acme/default needing a sign-in", got)
	}
	p.do(map[string]any{"op": "click", "selector": need + " details.signin-client summary"}, nil)
	p.do(map[string]any{"op": "fill", "selector": need + ` [data-testid="signin-client-id"]`, "value": "console-browser"}, nil)
	p.do(map[string]any{"op": "click", "selector": need + ` [data-testid="signin-button"]`}, nil)

	done := p.text(need+` [data-testid="signin-done"]`, "Signed in to acme/default")
	if !strings.Contains(done, "tool(s)") {
		t.Errorf("the screen says %q; want how many tools the source lists now", done)
	}
	// The source's tools (more than 8: the list is folded, so attached).
	p.do(map[string]any{"op": "attached", "selector": `[data-testid="source"][data-namespace="acme"] [data-testid="source-tool"][data-address="acme.echo"]`}, nil)
	if n := p.count(`[data-testid="signin"][data-state="needed"]`); n != 0 {
		t.Errorf("%d connections still need a sign-in", n)
	}
	if n := srv.Authorizations(t); n != 1 {
		t.Errorf("%d authorizations at the server, want 1", n)
	}
	if dir := os.Getenv("CAPABILITIES_ARTIFACTS"); dir != "" {
		shots := filepath.Join(dir, "console")
		if err := os.MkdirAll(shots, 0o755); err != nil {
			t.Fatal(err)
		}
		p.screenshots(shots, "signed-in", need)
	}

	h.run("hub", "review", "--accept", "acme")
	if out := h.run("hub", "call", "acme.echo", `{"message":"signed in from the console"}`); !strings.Contains(out, "Echo: signed in from the console") {
		t.Fatalf("a call after signing in from the console:\n%s", out)
	}
	if errs := p.errors(); len(errs) != 0 {
		t.Errorf("the page logged errors:\n%s", strings.Join(errs, "\n"))
	}
}
