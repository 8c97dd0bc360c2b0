package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/capabilities-sh/capabilities/internal/testenv"
)

// TestReadYourWritesAcrossProcesses: what `hub add`, `hub policy` and `hub
// remove` write in a terminal is there for the very next execute of a
// `serve --stdio` already running, with no sleep between them (issue 38,
// item 4): every execute starts from the store's current sources, manifests
// and policy, checked by one stat of the store's generation marker, not by
// a watcher that hears of the change some time later.
func TestReadYourWritesAcrossProcesses(t *testing.T) {
	h := newHub(t)
	h.addScripted("reader", false)
	s := h.serveStdio()
	s.initialize()
	execute := func(code string) string {
		t.Helper()
		res := s.request("tools/call", map[string]any{"name": "execute", "arguments": map[string]any{"code": code}})
		if res["error"] != nil {
			t.Fatalf("execute %s: %v", code, res["error"])
		}
		out := fmt.Sprint(res["result"])
		t.Logf("execute %s: %s", code, out)
		return out
	}
	// The session has read the catalog (the runtimes hold its namespaces).
	if got := execute(`return await reader.echo({message: "warm"})`); !strings.Contains(got, "Echo: warm") {
		t.Fatalf("the first execute: %s", got)
	}

	add := func(tools string) {
		t.Helper()
		args := []string{"hub", "add", "--yes", "--namespace", "fresh", "--env", "SCRIPTED_TOOLS=" + tools, "--"}
		h.cli(append(args, testenv.Scripted(t)...)...)
	}

	// Added: the next execute calls it.
	add("3")
	if got := execute(`return await fresh.echo({message: "added"})`); !strings.Contains(got, "Echo: added") {
		t.Fatalf("an execute right after `hub add` does not see the new source: %s", got)
	}

	// Its policy changed: the next execute is refused.
	h.cli("hub", "policy", "set", "fresh.echo", "deny")
	if got := execute(`return await fresh.echo({message: "denied"})`); strings.Contains(got, "Echo: denied") || !strings.Contains(got, "policy_denied") {
		t.Fatalf("an execute right after `hub policy set fresh.echo deny` still calls it: %s", got)
	}

	// Changed (removed and added again with more tools): the next execute
	// sees the new tool.
	h.cli("hub", "remove", "fresh")
	add("5")
	if got := execute(`return typeof fresh.tool4`); !strings.Contains(got, "function") {
		t.Fatalf("an execute right after the source changed does not see its new tool: %s", got)
	}
	if got := execute(`return await fresh.echo({message: "again"})`); !strings.Contains(got, "Echo: again") {
		t.Fatalf("an execute right after the source was added again does not call it (the old rule went with it): %s", got)
	}

	// Removed: the next execute is told the namespace is not there.
	h.cli("hub", "remove", "fresh")
	got := execute(`return await fresh.echo({message: "removed"})`)
	if strings.Contains(got, "Echo: removed") || !strings.Contains(got, "fresh is not defined") {
		t.Fatalf("an execute right after `hub remove` still sees the source: %s", got)
	}
	// The session goes on serving the others.
	if got := execute(`return await reader.echo({message: "still"})`); !strings.Contains(got, "Echo: still") {
		t.Fatalf("after the removal: %s", got)
	}
}
