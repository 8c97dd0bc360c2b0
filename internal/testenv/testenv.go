// Package testenv finds the real peers the tests run against (node, the npm
// packages pinned in testdata/npm) and fails a test with a message saying
// what to install when one is missing. Tests never skip silently.
package testenv

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"
)

const setupHint = "run scripts/setup.sh from the repository root (it installs Node.js packages with `npm ci` in testdata/npm and the Debian packages the tests need)"

var (
	rootOnce sync.Once
	root     string
)

// Root is the repository root: the directory holding go.mod.
func Root(t testing.TB) string {
	t.Helper()
	rootOnce.Do(func() {
		_, file, _, _ := runtime.Caller(0)
		root = filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
	})
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("finding the repository root: %v", err)
	}
	return root
}

// Node returns the path of the node binary.
func Node(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is not installed: this test runs real MCP servers on Node.js 20; install Node.js 20 and %s", setupHint)
	}
	return p
}

// NodeModules returns testdata/npm/node_modules.
func NodeModules(t testing.TB) string {
	t.Helper()
	return NPMPath(t, "")
}

// NPMPath returns a path inside testdata/npm/node_modules, failing the test
// when it is not there.
func NPMPath(t testing.TB, rel string) string {
	t.Helper()
	p := filepath.Join(Root(t), "testdata", "npm", "node_modules", rel)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s is missing: %s", p, setupHint)
	}
	return p
}

// Everything returns the argv that starts server-everything over stdio.
func Everything(t testing.TB) []string {
	t.Helper()
	return []string{Node(t), NPMPath(t, "@modelcontextprotocol/server-everything/dist/index.js"), "stdio"}
}

// Memory returns the argv that starts server-memory over stdio.
func Memory(t testing.TB) []string {
	t.Helper()
	return []string{Node(t), NPMPath(t, "@modelcontextprotocol/server-memory/dist/index.js")}
}

// Filesystem returns the argv that starts server-filesystem over stdio on dir.
func Filesystem(t testing.TB, dir string) []string {
	t.Helper()
	return []string{Node(t), NPMPath(t, "@modelcontextprotocol/server-filesystem/dist/index.js"), dir}
}

// Corpus returns the directory of real tool manifests, testdata/manifests
// (19 public MCP servers; testdata/manifests/SOURCES.md says where each came from).
func Corpus(t testing.TB) string {
	t.Helper()
	p := filepath.Join(Root(t), "testdata", "manifests")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("the manifest corpus is missing at %s: it is part of the repository; restore it with git checkout", p)
	}
	return p
}

// Tool returns a script of the project's own test tools, testdata/tools/rel
// (the conformance runner, the throwaway desktop session).
func Tool(t testing.TB, rel string) string {
	t.Helper()
	p := filepath.Join(Root(t), "testdata", "tools", rel)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("the test tool %s is missing: it is part of the repository; restore it with git checkout", p)
	}
	return p
}

// HarnessesHint says how to install the real agent CLIs.
const HarnessesHint = "the real agent CLIs (claude, codex, gemini) are missing from testdata/harnesses/node_modules/.bin: run scripts/setup.sh --tests"

// Harnesses returns testdata/harnesses/node_modules/.bin, where the real
// agent CLIs pinned by testdata/harnesses/package-lock.json are (claude,
// codex, gemini), or an error saying how to install them. They are a test-only
// install (scripts/setup.sh --tests), so a test that needs them skips outside
// CI (RequireHarnesses); in CI (CI=true) it fails.
func Harnesses() (string, error) {
	_, file, _, _ := runtime.Caller(0)
	bin := filepath.Join(filepath.Dir(file), "..", "..", "testdata", "harnesses", "node_modules", ".bin")
	for _, name := range []string{"claude", "codex", "gemini"} {
		if _, err := os.Stat(filepath.Join(bin, name)); err != nil {
			return "", errors.New(HarnessesHint)
		}
	}
	return filepath.Clean(bin), nil
}

// LargeNPMPath returns the path of rel inside testdata/harnesses/node_modules,
// the test-only npm install (scripts/setup.sh --tests) that holds the large
// packages the demo does not need (the agent CLIs, GitHub's OpenAPI
// description). When it is missing the test fails in CI (CI=true) and skips
// elsewhere, saying to run scripts/setup.sh --tests.
func LargeNPMPath(t testing.TB, rel string) string {
	t.Helper()
	p := filepath.Join(Root(t), "testdata", "harnesses", "node_modules", rel)
	if _, err := os.Stat(p); err != nil {
		msg := fmt.Sprintf("%s is missing: run scripts/setup.sh --tests (it installs testdata/harnesses)", p)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return p
}

// RequireHarnesses returns the directory of the real agent CLIs (see
// Harnesses). When they are missing it fails the test in CI (CI=true) and
// skips it elsewhere, with a message saying to run scripts/setup.sh --tests.
func RequireHarnesses(t testing.TB) string {
	t.Helper()
	bin, err := Harnesses()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	return bin
}

// HarnessEnv is the environment the real agent CLIs need to run here
// without reaching the network, a login or a prompt: Claude Code sends no
// telemetry, error reports or update checks (without these it looks up
// its telemetry hosts); Gemini CLI trusts the working directory (else it
// lists every server as disabled and starts none). MCP_TIMEOUT gives Claude
// Code's health check as long as the hub gives an upstream to start.
func HarnessEnv(connectTimeout time.Duration) []string {
	return []string{
		"DISABLE_TELEMETRY=1",
		"DISABLE_ERROR_REPORTING=1",
		"DISABLE_AUTOUPDATER=1",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"MCP_TIMEOUT=" + strconv.FormatInt(connectTimeout.Milliseconds(), 10),
		"GEMINI_CLI_TRUST_WORKSPACE=true",
	}
}

// RunUser returns runuser, which runs a process as another user (nobody),
// for tests of what another user of the machine can do. It needs Linux and
// root: elsewhere such a test is skipped, and with CI=true (CI runs as
// root) it fails saying what is missing.
func RunUser(t testing.TB) string {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("the owner of a connection is read on Linux only")
	}
	if os.Getuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("this test runs a process as another user, which needs root: run the tests as root")
		}
		t.Skip("running a process as another user needs root")
	}
	p, err := exec.LookPath("runuser")
	if err != nil {
		t.Fatalf("runuser (util-linux) is needed to run a process as another user: %v", err)
	}
	return p
}
