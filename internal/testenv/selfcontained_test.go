package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestNothingReadsOutsideTheRepository fails when a tracked script or Go file
// refers to the workplace's shared folder beside the repository: a clone must
// build, run and pass its tests with nothing beside it (.ci/run checks the
// same thing for real, from a clone in a temporary directory).
func TestNothingReadsOutsideTheRepository(t *testing.T) {
	root := Root(t)
	out, err := exec.Command("git", "-C", root, "ls-files", "*.go", "*.sh", "*.mjs", "*.js", "*.txtar", ".ci/*").Output()
	if err != nil {
		t.Fatalf("listing tracked files: %v (is git installed and is this a clone?)", err)
	}
	outside := regexp.MustCompile(`\.\./shared\b|"\.\.", "shared"`)
	self := filepath.Join("internal", "testenv", "selfcontained_test.go")
	files := strings.Fields(string(out))
	if len(files) < 50 {
		t.Fatalf("git listed only %d files", len(files))
	}
	for _, f := range files {
		if f == self {
			continue
		}
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if outside.MatchString(line) {
				t.Errorf("%s:%d refers to a folder outside the repository: %s", f, i+1, strings.TrimSpace(line))
			}
		}
	}
}
