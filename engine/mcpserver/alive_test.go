package mcpserver

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
)

// The liveness probe answers the hub's own clients only, behind the checks
// of the MCP endpoint (bearer token, loopback Host and Origin), and says
// which process serves.
func TestAlivePathIsGuardedLikeTheEndpoint(t *testing.T) {
	addr := serveHTTP(t, HTTPLimits{})
	for _, tc := range []struct {
		name, method string
		hdr          map[string]string
		status       int
		want         string
	}{
		{"the hub's token", "GET", map[string]string{"Authorization": "Bearer " + testToken}, 200, fmt.Sprintf(`{"pid":%d}`, os.Getpid())},
		{"HEAD", "HEAD", map[string]string{"Authorization": "Bearer " + testToken}, 200, ""},
		{"no token", "GET", nil, 401, "missing bearer token"},
		{"a wrong token", "GET", map[string]string{"Authorization": "Bearer " + strings.Repeat("0", len(testToken))}, 401, "wrong bearer token"},
		{"a foreign Host", "GET", map[string]string{"Authorization": "Bearer " + testToken, "Host": "evil.example"}, 403, "not a loopback address"},
		{"a foreign Origin", "GET", map[string]string{"Authorization": "Bearer " + testToken, "Origin": "https://evil.example"}, 403, "not a loopback origin"},
		{"POST", "POST", map[string]string{"Authorization": "Bearer " + testToken}, 405, "answers GET"},
	} {
		req, err := http.NewRequest(tc.method, "http://"+addr+AlivePath, nil)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range tc.hdr {
			if k == "Host" {
				req.Host = v
				continue
			}
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status || !strings.Contains(string(b), tc.want) {
			t.Errorf("%s: HTTP %d %q, want %d with %q", tc.name, resp.StatusCode, b, tc.status, tc.want)
		}
	}
}
