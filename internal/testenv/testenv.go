// Package testenv finds the real peers the tests run against (node, the npm
// packages pinned in testdata/npm) and fails a test with a message saying
// what to install when one is missing. Tests never skip silently.
package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
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
