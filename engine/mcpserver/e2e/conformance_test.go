package e2e

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capabilities-sh/capabilities/engine/elicit"
	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/mcpserver"
	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/capabilities-sh/capabilities/store"
)

// conformanceListener serves the hub's real HTTP handler (bearer token,
// Host/Origin checks, body limit) on loopback, wrapped to add the bearer
// token to every request: the suite sends no custom headers. Everything
// else a request carries — Host, Origin, body — reaches the handler as sent.
func conformanceListener(t *testing.T, h *hubEnv) string {
	t.Helper()
	st, err := store.Open(filepath.Join(h.home, "hub"))
	if err != nil {
		t.Fatal(err)
	}
	eng := hub.New(st, hub.Options{})
	t.Cleanup(eng.Close)
	signer, err := elicit.LoadSigner(st.Dir())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = eng.Watch(ctx) }()
	const token = "conformance-test-token-0123456789abcdef"
	inner := mcpserver.New(eng, mcpserver.Options{Signer: signer}).HTTPHandler(token)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Set("Authorization", "Bearer "+token)
		inner.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

// Server scenarios of @modelcontextprotocol/conformance 0.1.16 that apply
// to a hub surface. The others test fixture tools, prompts and resources a
// hub does not have (see docs/bench-mcp.md for the list and why).
var conformanceScenarios = []string{
	"server-initialize",
	"ping",
	"tools-list",
	"logging-set-level",
	"dns-rebinding-protection",
	"server-sse-multiple-streams",
	"server-sse-polling",
}

// TestConformance runs the protocol's conformance suite, pinned in
// testdata/npm and started through testdata/tools/conformance (a Node 20
// loader shim for fs.globSync), against the hub's HTTP handler.
func TestConformance(t *testing.T) {
	t.Parallel()
	h := newHub(t)
	h.j2()
	url := conformanceListener(t, h)
	script := testenv.Tool(t, "conformance/run-conformance.sh")
	testenv.NPMPath(t, "@modelcontextprotocol/conformance/dist/index.js")
	for _, sc := range conformanceScenarios {
		out := t.TempDir()
		cmd := exec.Command("sh", script, filepath.Join(testenv.Root(t), "testdata", "npm"), "server", "--url", url, "--scenario", sc, "-o", out)
		b, err := cmd.CombinedOutput()
		text := string(b)
		if err != nil || strings.Contains(text, "FAIL") || !strings.Contains(text, "Passed:") {
			t.Errorf("conformance scenario %s: %v\n%s", sc, err, text)
			continue
		}
		t.Logf("conformance %s: %s", sc, lastLine(text))
	}
}

func lastLine(s string) string {
	ls := strings.Split(strings.TrimSpace(s), "\n")
	return ls[len(ls)-1]
}
