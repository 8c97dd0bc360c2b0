package oauth_test

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/capabilities-sh/capabilities/internal/testenv"
)

// authSuite is what `conformance client --suite auth` of
// @modelcontextprotocol/conformance 0.1.16 runs: every scenario of it
// applies to a client that signs in with a loopback redirect.
var authSuite = []string{
	"auth/metadata-default",
	"auth/metadata-var1",
	"auth/metadata-var2",
	"auth/metadata-var3",
	"auth/basic-cimd",
	"auth/scope-from-www-authenticate",
	"auth/scope-from-scopes-supported",
	"auth/scope-omitted-when-undefined",
	"auth/scope-step-up",
	"auth/scope-retry-limit",
	"auth/token-endpoint-auth-basic",
	"auth/token-endpoint-auth-post",
	"auth/token-endpoint-auth-none",
	"auth/pre-registration",
}

// authOutsideSuite are the suite's other client auth scenarios that apply
// (2025-03-26 back-compat and draft ones), run one by one. Not run, since
// they test grants a person's sign-in does not use (docs/bench-mcp.md):
// auth/client-credentials-jwt, auth/client-credentials-basic (the
// client_credentials grant of a machine client) and
// auth/cross-app-access-complete-flow (enterprise token exchange, ID-JAG).
var authOutsideSuite = []string{
	"auth/2025-03-26-oauth-metadata-backcompat",
	"auth/2025-03-26-oauth-endpoint-fallback",
	"auth/resource-mismatch",
	"auth/offline-access-scope",
	"auth/offline-access-not-supported",
}

// buildClient builds internal/cmd/oauth-conformance-client: the hub's
// engine/source session with an engine/oauth credential.
func buildClient(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "oauth-conformance-client")
	cmd := exec.Command("go", "build", "-o", bin, "./internal/cmd/oauth-conformance-client")
	cmd.Dir = testenv.Root(t)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the conformance client: %v\n%s", err, out)
	}
	return bin
}

var summaryLine = regexp.MustCompile(`(?m)^[✓✗] (auth/\S+): (\d+) passed, (\d+) failed`)

// TestConformanceAuthSuite runs the MCP conformance suite's client auth
// scenarios (pinned in testdata/npm) against a client built from the hub's
// own sign-in and session code, and asserts that every scenario that
// applies passes with no failed check and no warning.
func TestConformanceAuthSuite(t *testing.T) {
	t.Parallel()
	script := testenv.Tool(t, "conformance/run-conformance.sh")
	testenv.NPMPath(t, "@modelcontextprotocol/conformance/dist/index.js")
	mods := filepath.Join(testenv.Root(t), "testdata", "npm")
	bin := buildClient(t)

	out, err := exec.Command("sh", script, mods, "client", "--command", bin, "--suite", "auth", "-o", t.TempDir()).CombinedOutput()
	text := string(out)
	if err != nil {
		t.Fatalf("conformance client --suite auth: %v\n%s", err, text)
	}
	var passed []string
	for _, m := range summaryLine.FindAllStringSubmatch(text, -1) {
		if m[3] != "0" {
			t.Errorf("%s: %s checks failed", m[1], m[3])
			continue
		}
		passed = append(passed, m[1])
	}
	for _, sc := range authSuite {
		if !slices.Contains(passed, sc) {
			t.Errorf("scenario %s did not pass", sc)
		}
	}
	if !strings.Contains(text, " 0 failed, 0 warnings") {
		t.Errorf("the suite's total has failures or warnings")
	}
	if t.Failed() {
		t.Logf("suite output:\n%s", text)
	}

	for _, sc := range authOutsideSuite {
		t.Run(strings.TrimPrefix(sc, "auth/"), func(t *testing.T) {
			t.Parallel()
			out, err := exec.Command("sh", script, mods, "client", "--command", bin, "--scenario", sc, "-o", t.TempDir()).CombinedOutput()
			text := string(out)
			if err != nil || !strings.Contains(text, "OVERALL: PASSED") || !strings.Contains(text, " 0 failed, 0 warnings") {
				t.Fatalf("conformance scenario %s: %v\n%s", sc, err, text)
			}
			t.Logf("%s: %s", sc, lastLine(text))
		})
	}
}

func lastLine(s string) string {
	ls := strings.Split(strings.TrimSpace(s), "\n")
	return ls[len(ls)-1]
}
