// Package hostedtest starts engine/hosted's Server in-process for tests, as
// `hosted serve` does: on real PostgreSQL (migrated, each tenant a view of
// one database; the OAuth store and the sign-in's sessions in it too),
// people signing in through oauth2-mock-server (testenv.StartIDP), with a
// fresh KEK and an egress guard. engine/hosted's tests, engine/dashboard's,
// the CLI's hosted journey and the desktop app's use it.
package hostedtest

import (
	"bytes"
	"context"
	"fmt"
	"html"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/capabilities-sh/capabilities/engine/authserver/pgstore"
	"github.com/capabilities-sh/capabilities/engine/egress"
	"github.com/capabilities-sh/capabilities/engine/hosted"
	"github.com/capabilities-sh/capabilities/engine/identity"
	idstore "github.com/capabilities-sh/capabilities/engine/identity/pgstore"
	"github.com/capabilities-sh/capabilities/engine/secret"
	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/capabilities-sh/capabilities/store"
	"github.com/capabilities-sh/capabilities/store/postgres"
)

// Options say how Start makes the hosted hub.
type Options struct {
	// Postgres and IDP, when set, are shared with other Envs (each Env
	// still gets its own database); nil starts one for this Env.
	Postgres *testenv.Postgres
	IDP      *testenv.IDP
	// Plain serves over loopback http instead of TLS (the hosted hub
	// allows http on loopback only).
	Plain bool
	// Allow is the egress allow list (--allow-egress), e.g.
	// []string{"127.0.0.1/32"} so a tenant's remote source may be a local
	// server; nil allows no private address.
	Allow []string
	// Config, when set, changes the configuration before hosted.New (to
	// mount push, the inbox or the dashboard, set limits, ...): e has
	// everything but Server set.
	Config func(cfg *hosted.Config, e *Env)
}

// Env is a running hosted hub; Start's cleanups stop it.
type Env struct {
	URL    string           // the public URL, https unless Options.Plain
	TS     *httptest.Server // the test server the hub is behind
	Server *hosted.Server
	IDP    *testenv.IDP
	RP     *identity.RP    // the sign-in relying party
	DB     *postgres.Store // the root store (Tenant gives each tenant's view)
	Auth   *pgstore.Store  // the OAuth store
}

// Start starts the hosted hub; it fails t on any error.
func Start(t testing.TB, o Options) *Env {
	t.Helper()
	ctx := context.Background()
	pg := o.Postgres
	if pg == nil {
		pg = testenv.StartPostgres(t)
	}
	e := &Env{IDP: o.IDP}
	if e.IDP == nil {
		e.IDP = testenv.StartIDP(t)
	}
	dbURL := pg.NewDatabase(t)
	if err := postgres.Migrate(ctx, dbURL); err != nil {
		t.Fatal(err)
	}
	root, err := postgres.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	e.DB = root
	e.Auth = pgstore.New(root.Pool())

	var h http.Handler = http.NotFoundHandler()
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) })
	if o.Plain {
		e.TS = httptest.NewServer(handler)
	} else {
		e.TS = httptest.NewTLSServer(handler)
	}
	t.Cleanup(e.TS.Close)
	e.URL = e.TS.URL

	secretFile := filepath.Join(t.TempDir(), "idp-secret")
	if err := os.WriteFile(secretFile, []byte("hub-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	log := Logger()
	e.RP, err = identity.New(ctx, identity.Config{Issuer: e.IDP.Issuer, ClientID: "hub", ClientSecretFile: secretFile,
		PublicURL: e.URL, Key: bytes.Repeat([]byte{7}, 32), Store: idstore.New(root.Pool()), Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	kek, err := secret.NewKEK()
	if err != nil {
		t.Fatal(err)
	}
	guard, err := egress.Parse(o.Allow)
	if err != nil {
		t.Fatal(err)
	}
	cfg := hosted.Config{
		PublicURL:  e.URL,
		Stores:     func(_ context.Context, id string) (store.Store, error) { return root.Tenant(id), nil },
		KEK:        kek,
		Auth:       e.Auth,
		Identity:   e.RP,
		ConsentKey: bytes.Repeat([]byte{9}, 32),
		Egress:     guard,
		Logger:     log,
	}
	if o.Config != nil {
		o.Config(&cfg, e)
	}
	e.Server, err = hosted.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Server.Close)
	h = e.Server.Handler()
	return e
}

// Tenant is the tenant the IdP's subject sub signs in as.
func (e *Env) Tenant(sub string) string { return identity.TenantID(e.IDP.Issuer, sub) }

// Logger is the hub's logger: debug to stderr with -v, else discarded.
func Logger() *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

var hiddenInput = regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)">`)

// Consent is the person's browser at an authorization URL of the hub: it
// signs in through the IdP on the way (as the subject set with
// IDP.NextSubject), checks the consent page (200, the decision form, and
// each of want in its text), allows, and returns the redirect's Location
// without following it.
func (e *Env) Consent(authURL string, want ...string) (location string, err error) {
	jar, err := cookiejar.New(nil)
	if err != nil {
		return "", err
	}
	b := &http.Client{Jar: jar, Transport: e.TS.Client().Transport}
	resp, err := b.Get(authURL) // → /signin → the IdP → /signin/callback → /authorize
	if err != nil {
		return "", fmt.Errorf("opening the authorization page: %w", err)
	}
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return "", fmt.Errorf("reading the consent page: %w", err)
	}
	page := html.UnescapeString(string(raw))
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(raw), `name="decision"`) {
		return "", fmt.Errorf("the consent page (%s) has no decision form:\n%s", resp.Status, raw)
	}
	for _, w := range want {
		if !strings.Contains(page, w) {
			return "", fmt.Errorf("the consent page does not say %q:\n%s", w, page)
		}
	}
	form := url.Values{"decision": {"allow"}}
	for _, m := range hiddenInput.FindAllStringSubmatch(string(raw), -1) {
		form.Set(m[1], html.UnescapeString(m[2]))
	}
	req, err := http.NewRequest(http.MethodPost, e.URL+"/authorize", strings.NewReader(form.Encode()))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", e.URL)
	b.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err = b.Do(req)
	if err != nil {
		return "", fmt.Errorf("posting the consent: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		return "", fmt.Errorf("posting the consent: %s", resp.Status)
	}
	return resp.Header.Get("Location"), nil
}
