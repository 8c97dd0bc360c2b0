package authserver_test

import (
	"net"
	"net/url"
	"strings"
	"testing"

	"github.com/capabilities-sh/capabilities/engine/authserver"
)

func FuzzParseRegistration(f *testing.F) {
	for _, s := range []string{
		`{"redirect_uris":["https://app.example/cb"],"client_name":"x"}`,
		`{"redirect_uris":["http://127.0.0.1:3000/cb","http://[::1]/cb","http://localhost/x"],"token_endpoint_auth_method":"none"}`,
		`{"redirect_uris":["http://app.example/cb"]}`,
		`{"redirect_uris":["https://app.example/cb#f"]}`,
		`{"redirect_uris":[]}`,
		`{"redirect_uris":["HTTPS://A/"],"grant_types":["refresh_token"]}`,
		`[]`, `null`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		m, err := authserver.ParseRegistration(body)
		if err != nil {
			return
		}
		// Whatever is accepted: 1–10 redirect URIs, each https or loopback http, no fragment.
		if len(m.RedirectURIs) == 0 || len(m.RedirectURIs) > 10 {
			t.Fatalf("accepted %d redirect URIs", len(m.RedirectURIs))
		}
		for _, r := range m.RedirectURIs {
			u, err := url.Parse(r)
			if err != nil || strings.Contains(r, "#") || u.User != nil || u.Hostname() == "" {
				t.Fatalf("accepted redirect %q", r)
			}
			ip := net.ParseIP(u.Hostname())
			loop := u.Hostname() == "localhost" || (ip != nil && ip.IsLoopback())
			if !(u.Scheme == "https" || (u.Scheme == "http" && loop)) {
				t.Fatalf("accepted redirect %q", r)
			}
		}
		if m.TokenEndpointAuthMethod == "" || len(m.GrantTypes) == 0 || len(m.ResponseTypes) == 0 {
			t.Fatalf("defaults not filled: %+v", m)
		}
	})
}
