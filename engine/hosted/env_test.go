package hosted_test

import (
	"bytes"
	"context"
	"encoding/json"
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
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/capabilities-sh/capabilities/engine/authserver/pgstore"
	"github.com/capabilities-sh/capabilities/engine/egress"
	"github.com/capabilities-sh/capabilities/engine/hosted"
	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/identity"
	idstore "github.com/capabilities-sh/capabilities/engine/identity/pgstore"
	"github.com/capabilities-sh/capabilities/engine/run"
	"github.com/capabilities-sh/capabilities/engine/secret"
	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/capabilities-sh/capabilities/store"
	"github.com/capabilities-sh/capabilities/store/postgres"
)

// redirect is the connector's redirect URI; the test reads the code from
// the redirect and never follows it.
const redirect = "http://127.0.0.1:9/callback"

// env is a hosted hub on an httptest TLS server, with PostgreSQL for the
// OAuth store (and the tenants' stores once store/postgres has tenant
// views), oauth2-mock-server for sign-in.
type env struct {
	srv    *hosted.Server
	ts     *httptest.Server
	idp    *testenv.IDP
	url    string
	tls    *http.Client // trusts the test server's certificate
	pool   *pgxpool.Pool
	auth   *pgstore.Store
	tenant func(sub string) string
}

type envOpts struct {
	allow       []string // --allow-egress
	idle        time.Duration
	maxOpen     int
	handleBytes int
	mount       func(*hosted.Config)
}

// infra is what the tests share: PostgreSQL (each env its own database)
// and the identity provider.
type infra struct {
	pg  *testenv.Postgres
	idp *testenv.IDP
}

func newEnv(t testing.TB, in *infra, o envOpts) *env {
	t.Helper()
	ctx := context.Background()
	pg := in.pg
	dbURL := pg.NewDatabase(t)
	if err := postgres.Migrate(ctx, dbURL); err != nil {
		t.Fatal(err)
	}
	root, err := postgres.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	pool := root.Pool()
	e := &env{idp: in.idp, pool: pool, auth: pgstore.New(pool)}
	var h http.Handler = http.NotFoundHandler()
	e.ts = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) }))
	t.Cleanup(e.ts.Close)
	e.url = e.ts.URL
	e.tls = e.ts.Client()
	e.tenant = func(sub string) string { return identity.TenantID(e.idp.Issuer, sub) }

	secretFile := filepath.Join(t.TempDir(), "idp-secret")
	if err := os.WriteFile(secretFile, []byte("hub-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	rp, err := identity.New(ctx, identity.Config{Issuer: e.idp.Issuer, ClientID: "hub", ClientSecretFile: secretFile,
		PublicURL: e.url, Key: bytes.Repeat([]byte{7}, 32), Store: idstore.New(pool), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	kek, err := secret.NewKEK()
	if err != nil {
		t.Fatal(err)
	}
	guard, err := egress.Parse(o.allow)
	if err != nil {
		t.Fatal(err)
	}
	cfg := hosted.Config{
		PublicURL:  e.url,
		Stores:     func(_ context.Context, id string) (store.Store, error) { return root.Tenant(id), nil },
		KEK:        kek,
		Auth:       e.auth,
		Identity:   rp,
		ConsentKey: bytes.Repeat([]byte{9}, 32),
		Egress:     guard,
		HubOptions: func(string) hub.Options {
			return hub.Options{Run: run.Limits{HandleBytes: o.handleBytes}}
		},
		IdleTimeout: o.idle,
		MaxOpen:     o.maxOpen,
		Logger:      testLogger(t),
	}
	if o.mount != nil {
		o.mount(&cfg)
	}
	e.srv, err = hosted.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.srv.Close)
	h = e.srv.Handler()
	return e
}

func testLogger(t testing.TB) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// connector is an MCP client app registered with the hosted hub.
type connector struct {
	cfg *oauth2.Config
	tok *oauth2.Token
	ts  oauth2.TokenSource // refreshes tok when it expires
}

var hidden = regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)">`)

// signIn registers a connector (RFC 7591), authorizes it as the IdP's
// subject sub (sign-in through oauth2-mock-server, the consent page
// POSTed), and exchanges the code. scopes nil asks for none.
func (e *env) signIn(t testing.TB, sub string, scopes []string) *connector {
	t.Helper()
	ctx := context.WithValue(context.Background(), oauth2.HTTPClient, e.tls)
	reg, err := oauthex.RegisterClient(ctx, e.url+"/register", &oauthex.ClientRegistrationMetadata{
		RedirectURIs: []string{redirect}, ClientName: "Test connector", TokenEndpointAuthMethod: "none",
	}, e.tls)
	if err != nil {
		t.Fatalf("registering: %v", err)
	}
	cfg := &oauth2.Config{ClientID: reg.ClientID, RedirectURL: redirect, Scopes: scopes,
		Endpoint: oauth2.Endpoint{AuthURL: e.url + "/authorize", TokenURL: e.url + "/token", AuthStyle: oauth2.AuthStyleInParams}}
	v := oauth2.GenerateVerifier()
	authURL := cfg.AuthCodeURL("st-"+sub, oauth2.S256ChallengeOption(v), oauth2.SetAuthURLParam("resource", e.url+"/mcp"))

	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar, Transport: e.tls.Transport}
	e.idp.NextSubject(t, sub)
	resp, err := browser.Get(authURL) // → /signin → the IdP → /signin/callback → /authorize: the consent page
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	page := html.UnescapeString(string(b))
	if resp.StatusCode != http.StatusOK || !strings.Contains(page, "Test connector") || !strings.Contains(page, redirect) {
		t.Fatalf("the consent page (%s) does not name the client and its redirect:\n%s", resp.Status, page)
	}
	form := url.Values{"decision": {"allow"}}
	for _, m := range hidden.FindAllStringSubmatch(string(b), -1) {
		form.Set(m[1], html.UnescapeString(m[2]))
	}
	req, _ := http.NewRequest("POST", e.url+"/authorize", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", e.url)
	browser.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err = browser.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, _ := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusSeeOther || loc == nil || loc.Query().Get("code") == "" {
		t.Fatalf("consent: %s, Location %q", resp.Status, resp.Header.Get("Location"))
	}
	tok, err := cfg.Exchange(ctx, loc.Query().Get("code"), oauth2.VerifierOption(v), oauth2.SetAuthURLParam("resource", e.url+"/mcp"))
	if err != nil {
		t.Fatalf("exchanging the code: %v", err)
	}
	return &connector{cfg: cfg, tok: tok, ts: cfg.TokenSource(ctx, tok)}
}

// client is an HTTP client that sends the connector's token (refreshing
// it when it expires), over the test server's TLS.
func (e *env) client(c *connector) *http.Client {
	ctx := context.WithValue(context.Background(), oauth2.HTTPClient, e.tls)
	return oauth2.NewClient(ctx, c.ts)
}

// mcpSession connects go-sdk's MCP client to /mcp with the connector's token.
func (e *env) mcpSession(t testing.TB, c *connector) *mcp.ClientSession {
	t.Helper()
	cl := mcp.NewClient(&mcp.Implementation{Name: "hosted-test", Version: "1"}, nil)
	cs, err := cl.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: e.url + "/mcp", HTTPClient: e.client(c), MaxRetries: -1}, nil)
	if err != nil {
		t.Fatalf("connecting to /mcp: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// envelope is execute's structured result.
type envelope struct {
	RunID   string          `json:"runId"`
	Status  string          `json:"status"`
	Result  json.RawMessage `json:"result"`
	Error   *struct{ Code, Message string }
	Pending []struct{ ID, Address string }
}

func call(t testing.TB, cs *mcp.ClientSession, tool string, args map[string]any) (string, *envelope) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	var text strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	var env *envelope
	if res.StructuredContent != nil {
		b, _ := json.Marshal(res.StructuredContent)
		env = &envelope{}
		if err := json.Unmarshal(b, env); err != nil {
			t.Fatalf("%s: structured content %s: %v", tool, b, err)
		}
	}
	return text.String(), env
}
