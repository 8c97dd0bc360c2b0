package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// MainWithBinary is a TestMain for packages that drive the real binary:
// it builds cmd/capabilities (CGO_ENABLED=0) once into a temporary
// folder, sets *bin to its path, runs the tests (RunLeavingNothing: a
// process they leave running fails them) and exits with their code.
func MainWithBinary(m *testing.M, bin *string) {
	dir, err := os.MkdirTemp("", "capabilities-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	*bin = filepath.Join(dir, "capabilities")
	build := exec.Command("go", "build", "-o", *bin, "github.com/capabilities-sh/capabilities/cmd/capabilities")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building the capabilities binary (needs the go command on PATH): %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := RunLeavingNothing(m)
	os.RemoveAll(dir)
	os.Exit(code)
}
