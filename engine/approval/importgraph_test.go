package approval_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/capabilities-sh/capabilities/internal/testenv"
)

const module = "github.com/capabilities-sh/capabilities/"

// channels are the only packages that may import approval: host code that
// handles a person's input.
var channels = map[string]bool{
	module + "internal/cli":     true, // `hub approve`, the terminal prompt
	module + "engine/elicit":    true, // the client's own form, answered with a signed state
	module + "engine/console":   true, // the console: the approval page on loopback, the desktop app's screens
	module + "app":              true, // the desktop app's window and notification
	module + "engine/inbox":     true, // the hosted hub's inbox for the person's desktop app (bearer token, scope "hub")
	module + "engine/dashboard": true, // the hosted hub's dashboard, behind the person's sign-in
	module + "engine/approval":  true,
}

// mustNotReach are packages the model's input flows through: none may
// depend on approval, directly or not.
// (engine/mcpserver reaches it only through engine/elicit, checked above:
// it may not import approval itself.)
var mustNotReach = []string{"engine/sandbox", "engine/run", "engine/hub", "engine/code", "guest", "engine/source", "engine/policy", "engine/index", "engine/typegen"}

// TestInvariantI2OnlyAPersonRecordsADecision holds invariant I2 over the
// import graph: only person-facing channels import the recorder, and the
// model's path (sandbox, run, hub, …) does not reach it at all.
func TestInvariantI2OnlyAPersonRecordsADecision(t *testing.T) {
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}}|{{join .Imports \" \"}}|{{join .Deps \" \"}}", "./...")
	cmd.Dir = testenv.Root(t)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	const target = module + "engine/approval"
	seen := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		parts := strings.SplitN(line, "|", 3)
		if len(parts) != 3 {
			continue
		}
		pkg, imports, deps := parts[0], strings.Fields(parts[1]), strings.Fields(parts[2])
		seen++
		for _, imp := range imports {
			if imp == target && !channels[pkg] {
				t.Errorf("%s imports engine/approval; only person-facing channels may record decisions (allowed: internal/cli, engine/elicit, engine/console, engine/inbox, engine/dashboard, app)", pkg)
			}
		}
		for _, p := range mustNotReach {
			if pkg == module+p {
				for _, d := range deps {
					if d == target {
						t.Errorf("%s depends on engine/approval; the model's path must not reach the recorder", pkg)
					}
				}
			}
		}
	}
	if seen < 5 {
		t.Fatalf("go list saw only %d packages", seen)
	}
}
