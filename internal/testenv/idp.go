package testenv

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// IDP is testdata/upstreams/idp.mjs: oauth2-mock-server (pinned in
// testdata/npm) as an OpenID provider that approves every authorization at
// once, with an admin server through which a test chooses what the next ID
// tokens say.
type IDP struct {
	Issuer string `json:"issuer"` // the provider's issuer URL
	Admin  string `json:"admin"`  // POST Admin+"/next"
}

// StartIDP starts the OpenID provider; it stops when the test ends.
func StartIDP(t testing.TB) *IDP {
	t.Helper()
	NPMPath(t, "oauth2-mock-server/package.json")
	cmd := exec.Command(Node(t), filepath.Join(Root(t), "testdata", "upstreams", "idp.mjs"))
	cmd.Env = append(os.Environ(), "NPM_DIR="+filepath.Join(Root(t), "testdata", "npm"))
	var p IDP
	startJSONProcess(t, "oauth2-mock-server", cmd, &p)
	return &p
}

// Next sets what the provider's next ID tokens say: any of "sub", "email",
// "name", "aud", "nonce" and "expIn" (seconds from now); it resets the
// rest to the provider's defaults.
func (p *IDP) Next(t testing.TB, claims map[string]any) {
	t.Helper()
	b, err := json.Marshal(claims)
	if err != nil {
		t.Fatalf("encoding the next ID token's claims: %v", err)
	}
	resp, err := http.Post(p.Admin+"/next", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatalf("setting the next ID token: %v", err)
	}
	resp.Body.Close()
}

// NextSubject makes the provider's next ID tokens name sub as their
// subject, and say nothing else of their own.
func (p *IDP) NextSubject(t testing.TB, sub string) {
	t.Helper()
	p.Next(t, map[string]any{"sub": sub})
}
