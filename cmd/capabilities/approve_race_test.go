package main

import (
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/capabilities-sh/capabilities/store"
)

// TestApproveWhileAnotherProcessGoesOn: the person's decision lands as
// another process (the agent's serve, the desktop app) goes on with the
// run and holds it: `hub approve` records the decision, says the run goes
// on elsewhere and how to see its end, and exits 0 (it exited 1 advising
// to cancel the run it had just decided).
func TestApproveWhileAnotherProcessGoesOn(t *testing.T) {
	e := newCLIEnv(t)
	e.run("", "hub", "add", "--yes", "--namespace", "w", "--env", "SCRIPTED_TOOLS=4", "--", testenv.Node(t), filepath.Join(testenv.Root(t), "testdata", "upstreams", "scripted.mjs"))
	out := e.run("", "hub", "exec", `return await w.record({item: "x"})`)
	m := regexp.MustCompile(`run (r[0-9a-f]+): awaiting_approval`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("the write did not ask:\n%s", out)
	}
	st, err := store.Open(filepath.Join(e.home, "hub"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	release, err := st.Hold(context.Background(), store.Runs, m[1]) // another process's attempt
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	out = e.run("", "hub", "approve", m[1], "--choice", "once")
	if !strings.Contains(out, "Decided c1: once.") || !strings.Contains(out, "goes on in another process") || !strings.Contains(out, "hub runs show "+m[1]) {
		t.Errorf("hub approve while another process holds the run printed:\n%s", out)
	}
}
