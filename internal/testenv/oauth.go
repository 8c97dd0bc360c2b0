package testenv

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// OAuthServer is testdata/upstreams/oauth-resource.mjs: a real OAuth
// authorization server (oauth2-mock-server, pinned in testdata/npm; it
// approves every authorization at once and registers no clients, so a
// sign-in names a client ID) and a resource server that checks its tokens
// in front of server-everything over streamable HTTP.
type OAuthServer struct {
	MCP    string `json:"mcp"`    // the protected MCP endpoint
	Issuer string `json:"issuer"` // the authorization server
	Admin  string `json:"admin"`  // POST Admin+"/revoke", "/expire"; GET "/stats"
}

// StartOAuthServer starts server-everything over HTTP and the OAuth
// resource server in front of it; both stop when the test ends.
func StartOAuthServer(t testing.TB) *OAuthServer {
	t.Helper()
	everything := EverythingHTTP(t)
	NPMPath(t, "oauth2-mock-server/package.json")
	cmd := exec.Command(Node(t), filepath.Join(Root(t), "testdata", "upstreams", "oauth-resource.mjs"))
	cmd.Env = append(os.Environ(), "EVERYTHING_URL="+everything, "NPM_DIR="+filepath.Join(Root(t), "testdata", "npm"))
	var srv OAuthServer
	startJSONProcess(t, "the OAuth server", cmd, &srv)
	return &srv
}

// Revoke makes the server refuse every access and refresh token issued so
// far: the next call needs a new sign-in.
func (s *OAuthServer) Revoke(t testing.TB) {
	t.Helper()
	resp, err := http.Post(s.Admin+"/revoke", "application/json", nil)
	if err != nil {
		t.Fatalf("revoking the OAuth tokens: %v", err)
	}
	resp.Body.Close()
}

// Authorizations is how many authorizations the server approved.
func (s *OAuthServer) Authorizations(t testing.TB) int {
	t.Helper()
	resp, err := http.Get(s.Admin + "/stats")
	if err != nil {
		t.Fatalf("reading the OAuth server's stats: %v", err)
	}
	defer resp.Body.Close()
	var st struct {
		Authorizations int `json:"authorizations"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatalf("reading the OAuth server's stats: %v", err)
	}
	return st.Authorizations
}
