package authserver_test

import (
	"context"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/oauth2"

	"github.com/capabilities-sh/capabilities/engine/authserver"
)

// TestScopes: a request naming no scope gets the default ("mcp") only; the
// consent page says in plain words what each asked scope allows; a route
// requiring "hub" refuses an "mcp" token with 403 and takes a "hub" one.
func TestScopes(t *testing.T) {
	e := newEnv(t, func(c *authserver.Config) {
		c.Scopes = []string{authserver.ScopeMCP, authserver.ScopeHub}
		c.DefaultScopes = []string{authserver.ScopeMCP}
		c.Display = func(*http.Request) string { return "Alice <alice@example.com>" }
	})
	hubOnly := httptest.NewServer(e.as.RequireScopes(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hub api")
	}), authserver.ScopeHub))
	t.Cleanup(hubOnly.Close)
	ctx := context.Background()

	tokenFor := func(scopes []string) (string, string) {
		t.Helper()
		id, secret := e.register(t, `{"redirect_uris":["`+redirect+`"],"client_name":"Scoped client"}`)
		cfg := e.config(id, secret)
		cfg.Scopes = scopes
		v := oauth2.GenerateVerifier()
		authURL := cfg.AuthCodeURL("st", oauth2.S256ChallengeOption(v), oauth2.SetAuthURLParam("resource", e.resource()))
		req, _ := http.NewRequest("GET", authURL, nil)
		req.AddCookie(&http.Cookie{Name: "person", Value: "alice"})
		page, err := e.http.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(page.Body)
		page.Body.Close()
		code, errc := outcome(t, e.consent(t, authURL, "alice", "allow", nil))
		if errc != "" {
			t.Fatalf("authorize %v: %s", scopes, errc)
		}
		tok, err := cfg.Exchange(ctx, code, oauth2.VerifierOption(v), oauth2.SetAuthURLParam("resource", e.resource()))
		if err != nil {
			t.Fatalf("exchange: %v", err)
		}
		return tok.AccessToken, html.UnescapeString(string(b))
	}
	status := func(tok string) int {
		req, _ := http.NewRequest("GET", hubOnly.URL, nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}

	none, page := tokenFor(nil)
	g, err := e.as.Verify(ctx, none, e.resource())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"mcp"}, g.Scopes); diff != "" {
		t.Errorf("no scope asked: granted (-want +got):\n%s", diff)
	}
	if strings.Contains(page, authserver.DefaultScopeText["hub"]) || !strings.Contains(page, authserver.DefaultScopeText["mcp"]) {
		t.Errorf("consent page for the default scope should describe mcp only:\n%s", page)
	}
	if got := status(none); got != http.StatusForbidden {
		t.Errorf("an mcp token at a hub route: %d, want 403", got)
	}

	both, page := tokenFor([]string{"mcp", "hub"})
	for _, want := range []string{"Signed in as <strong>Alice <alice@example.com></strong>", "Scoped client", redirect, authserver.DefaultScopeText["hub"], "decide its pending calls"} {
		if !strings.Contains(page, want) {
			t.Errorf("consent page for mcp hub lacks %q", want)
		}
	}
	if strings.Contains(page, "still ask you before they run.</p>") {
		t.Errorf("a consent for hub must not promise that calls still ask (hub decides them)")
	}
	if got := status(both); got != http.StatusOK {
		t.Errorf("a hub token at a hub route: %d, want 200", got)
	}

	// A default scope outside Scopes is a configuration error.
	_, err = authserver.New(authserver.Config{Issuer: "https://hub.example", Scopes: []string{"mcp"}, DefaultScopes: []string{"hub"},
		Store: authserver.NewMemory(), Person: func(*http.Request) (string, bool) { return "", false }})
	if err == nil || !strings.Contains(err.Error(), `default scope "hub"`) {
		t.Errorf("DefaultScopes outside Scopes: %v", err)
	}
}
