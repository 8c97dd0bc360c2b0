package hosted_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/capabilities-sh/capabilities/engine/authserver/pgstore"
	"github.com/capabilities-sh/capabilities/engine/hosted"
	"github.com/capabilities-sh/capabilities/engine/hosted/hostedtest"
	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/run"
	"github.com/capabilities-sh/capabilities/internal/testenv"
)

// redirect is the connector's redirect URI; the test reads the code from
// the redirect and never follows it.
const redirect = "http://127.0.0.1:9/callback"

// env is a hosted hub on an httptest TLS server, with PostgreSQL for the
// OAuth store (and the tenants' stores once store/postgres has tenant
// views), oauth2-mock-server for sign-in.
type env struct {
	he     *hostedtest.Env
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
	he := hostedtest.Start(t, hostedtest.Options{Postgres: in.pg, IDP: in.idp, Allow: o.allow,
		Config: func(cfg *hosted.Config, _ *hostedtest.Env) {
			cfg.HubOptions = func(string) hub.Options {
				return hub.Options{Run: run.Limits{HandleBytes: o.handleBytes}}
			}
			cfg.IdleTimeout = o.idle
			cfg.MaxOpen = o.maxOpen
			if o.mount != nil {
				o.mount(cfg)
			}
		}})
	return &env{he: he, srv: he.Server, ts: he.TS, idp: he.IDP, url: he.URL, tls: he.TS.Client(),
		pool: he.DB.Pool(), auth: he.Auth, tenant: he.Tenant}
}

// connector is an MCP client app registered with the hosted hub.
type connector struct {
	cfg *oauth2.Config
	tok *oauth2.Token
	ts  oauth2.TokenSource // refreshes tok when it expires
}

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

	e.idp.NextSubject(t, sub)
	location, err := e.he.Consent(authURL, "Test connector", redirect)
	if err != nil {
		t.Fatal(err)
	}
	loc, _ := url.Parse(location)
	if loc == nil || loc.Query().Get("code") == "" {
		t.Fatalf("consent: Location %q has no code", location)
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
