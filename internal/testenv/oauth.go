package testenv

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
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
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the OAuth server: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() && stderr.String() != "" {
			t.Logf("the OAuth server's stderr:\n%s", stderr.String())
		}
	})
	line := make(chan string, 1)
	go func() {
		s := bufio.NewScanner(out)
		if s.Scan() {
			line <- s.Text()
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	var srv OAuthServer
	select {
	case l := <-line:
		if err := json.Unmarshal([]byte(l), &srv); err != nil {
			t.Fatalf("reading the OAuth server's address %q: %v", l, err)
		}
	case <-time.After(Timeout(20 * time.Second)):
		t.Fatalf("the OAuth server did not start: %s", stderr.String())
	}
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
