package e2e

import (
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/capabilities-sh/capabilities/internal/testenv"
)

// TestSandboxCacheNamedByModule: the binary a person runs keeps its
// instrumented QuickJS in a file named for the qjs module's version and
// checksum as the build recorded them (and interrupt.go's source), so no
// process reads qjs's embedded 1 MB module to hash it when the file is
// there: those pages would stay in its memory all day.
func TestSandboxCacheNamedByModule(t *testing.T) {
	info, err := buildinfo.ReadFile(binPath)
	if err != nil {
		t.Fatal(err)
	}
	var id string
	for _, m := range info.Deps {
		if m.Path == "github.com/fastschema/qjs" && m.Replace == nil && m.Sum != "" {
			id = m.Path + "@" + m.Version + " " + m.Sum
		}
	}
	if id == "" {
		t.Fatal("the binary's build info has no checksum for github.com/fastschema/qjs")
	}
	src, err := os.ReadFile(filepath.Join(testenv.Root(t), "engine", "sandbox", "interrupt.go"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(append([]byte(id), src...))
	want := "quickjs-" + hex.EncodeToString(sum[:12]) + ".wasm"

	h := newHub(t)
	cache := t.TempDir()
	cmd := exec.Command(binPath, "hub", "exec", "return 1 + 1")
	cmd.Env = append(h.env(), "CAPABILITIES_CACHE_DIR="+cache)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("hub exec: %v\n%s", err, out)
	}
	got, err := filepath.Glob(filepath.Join(cache, "sandbox-wasm-v1", "quickjs-*.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || filepath.Base(got[0]) != want {
		t.Errorf("the cache holds %v, want one file %s", got, want)
	}
}
