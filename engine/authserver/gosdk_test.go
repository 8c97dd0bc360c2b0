package authserver_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// TestGoSDKClient: go-sdk's own MCP client with its OAuth handler (the
// client side of the MCP authorization spec: 401 → resource metadata →
// server metadata → DCR → PKCE authorize with resource → token) reaches a
// tool on an MCP server behind Middleware, and the tool sees the tenant.
func TestGoSDKClient(t *testing.T) {
	e := newEnv(t)
	srv := mcp.NewServer(&mcp.Implementation{Name: "hub", Version: "0"}, nil)
	type out struct {
		Tenant string `json:"tenant"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "whoami"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, out, error) {
		ti := req.Extra.TokenInfo
		if ti == nil {
			return nil, out{}, errors.New("no token info")
		}
		return nil, out{Tenant: ti.UserID}, nil
	})
	var h http.Handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	e.mcp.Store(&h)

	oh, err := auth.NewAuthorizationCodeHandler(&auth.AuthorizationCodeHandlerConfig{
		DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
			RedirectURIs: []string{redirect}, ClientName: "go-sdk test", TokenEndpointAuthMethod: "none",
			GrantTypes: []string{"authorization_code", "refresh_token"},
		}},
		RedirectURL: redirect,
		AuthorizationCodeFetcher: func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			resp := e.consent(t, args.URL, "carol", "allow", nil)
			resp.Body.Close()
			loc, err := url.Parse(resp.Header.Get("Location"))
			if err != nil {
				return nil, err
			}
			q := loc.Query()
			if q.Get("error") != "" {
				return nil, errors.New(q.Get("error") + ": " + q.Get("error_description"))
			}
			return &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "0"}, nil)
	sess, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: e.resource(), OAuthHandler: oh}, nil)
	if err != nil {
		t.Fatalf("connecting with OAuth: %v", err)
	}
	defer sess.Close()
	res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: "whoami"})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := res.StructuredContent.(map[string]any)
	if got["tenant"] != "carol" {
		t.Errorf("whoami = %v", res.StructuredContent)
	}
}
