package model

import (
	"net/url"
	"testing"
)

// TestOrigin: two spellings of one origin compare equal, and what differs
// in scheme, host or port does not.
func TestOrigin(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"https://API.example.com/v1?q=1", "https://api.example.com:443"},
		{"https://api.example.com:443/", "https://api.example.com:443"},
		{"HTTP://127.0.0.1/mcp", "http://127.0.0.1:80"},
		{"http://127.0.0.1:8080", "http://127.0.0.1:8080"},
		{"http://[::1]:3000/x", "http://[::1]:3000"},
		{"http://[::1]/x", "http://[::1]:80"},
		{"https://user:pw@example.com/", "https://example.com:443"},
	} {
		u, err := url.Parse(tc.in)
		if err != nil {
			t.Fatal(err)
		}
		if got := Origin(u); got != tc.want {
			t.Errorf("Origin(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	a, _ := url.Parse("https://example.com")
	b, _ := url.Parse("https://example.com.evil.test")
	if Origin(a) == Origin(b) {
		t.Errorf("%s and %s share an origin", a, b)
	}
}
