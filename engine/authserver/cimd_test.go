package authserver_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/oauth2"

	"github.com/capabilities-sh/capabilities/engine/authserver"
)

// cimdEnv serves client ID metadata documents over TLS and an
// authorization server that fetches them.
func cimdEnv(t *testing.T) (*env, *httptest.Server, *atomic.Pointer[string]) {
	var doc atomic.Pointer[string]
	docs := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(*doc.Load()))
	}))
	t.Cleanup(docs.Close)
	e := newEnv(t, func(c *authserver.Config) { c.MetadataClient = docs.Client() })
	return e, docs, &doc
}

// TestClientIDMetadataDocument: go-sdk's MCP client signs in with a client
// ID metadata document instead of registering.
func TestClientIDMetadataDocument(t *testing.T) {
	e, docs, doc := cimdEnv(t)
	clientID := docs.URL + "/client.json"
	d := `{"client_id":"` + clientID + `","client_name":"CIMD client","redirect_uris":["` + redirect + `"],"token_endpoint_auth_method":"none"}`
	doc.Store(&d)

	srv := mcp.NewServer(&mcp.Implementation{Name: "hub", Version: "0"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "whoami"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, map[string]string, error) {
		return nil, map[string]string{"tenant": req.Extra.TokenInfo.UserID}, nil
	})
	var h http.Handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	e.mcp.Store(&h)
	var consentClient string
	oh, err := auth.NewAuthorizationCodeHandler(&auth.AuthorizationCodeHandlerConfig{
		ClientIDMetadataDocumentConfig: &auth.ClientIDMetadataDocumentConfig{URL: clientID},
		RedirectURL:                    redirect,
		AuthorizationCodeFetcher: func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			u, _ := url.Parse(args.URL)
			consentClient = u.Query().Get("client_id")
			resp := e.consent(t, args.URL, "erin", "allow", nil)
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
	sess, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "0"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: e.resource(), OAuthHandler: oh}, nil)
	if err != nil {
		t.Fatalf("connecting with a client ID metadata document: %v", err)
	}
	defer sess.Close()
	res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: "whoami"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]any{"tenant": "erin"}, res.StructuredContent); diff != "" {
		t.Errorf("whoami (-want +got):\n%s", diff)
	}
	if consentClient != clientID {
		t.Errorf("client_id sent = %q", consentClient)
	}
}

func TestClientIDMetadataDocumentRefusals(t *testing.T) {
	e, docs, doc := cimdEnv(t)
	clientID := docs.URL + "/client.json"
	tests := []struct{ name, doc, clientID string }{
		{"client_id differs", `{"client_id":"https://other.example/c.json","redirect_uris":["` + redirect + `"]}`, clientID},
		{"redirect not https", `{"client_id":"` + clientID + `","redirect_uris":["http://app.example/cb"]}`, clientID},
		{"wants a secret", `{"client_id":"` + clientID + `","redirect_uris":["` + redirect + `"],"token_endpoint_auth_method":"client_secret_basic"}`, clientID},
		{"not json", `<html>`, clientID},
		{"no path", `{"client_id":"` + docs.URL + `","redirect_uris":["` + redirect + `"]}`, docs.URL},
		{"redirect not in the document", `{"client_id":"` + clientID + `","redirect_uris":["https://app.example/cb"]}`, clientID},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc.Store(&tt.doc)
			cfg := &oauth2.Config{ClientID: tt.clientID, RedirectURL: redirect,
				Endpoint: oauth2.Endpoint{AuthURL: e.srv.URL + "/authorize", TokenURL: e.srv.URL + "/token"}}
			authURL := cfg.AuthCodeURL("s", oauth2.S256ChallengeOption(oauth2.GenerateVerifier()))
			code, got := outcome(t, e.consent(t, authURL, "alice", "allow", nil))
			want := "page 400 Bad Request: authorization request refused: unknown client_id; register the client first"
			if tt.name == "redirect not in the document" {
				want = `page 400 Bad Request: authorization request refused: redirect_uri "` + redirect + `" is not registered for this client`
			}
			if diff := cmp.Diff(want, got); diff != "" || code != "" {
				t.Errorf("outcome (-want +got):\n%s\ncode %q", diff, code)
			}
		})
	}
	// Without a MetadataClient, a URL client_id is unknown and not advertised.
	e2 := newEnv(t)
	d := `{"client_id":"` + clientID + `","redirect_uris":["` + redirect + `"]}`
	doc.Store(&d)
	cfg := &oauth2.Config{ClientID: clientID, RedirectURL: redirect, Endpoint: oauth2.Endpoint{AuthURL: e2.srv.URL + "/authorize"}}
	if _, got := outcome(t, e2.consent(t, cfg.AuthCodeURL("s", oauth2.S256ChallengeOption(oauth2.GenerateVerifier())), "alice", "allow", nil)); got != "page 400 Bad Request: authorization request refused: unknown client_id; register the client first" {
		t.Errorf("CIMD off: %s", got)
	}
}
