package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/approval"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/capabilities-sh/capabilities/store"
)

// TestExecWaitsForTheDecision: hub exec in a terminal prints the run that
// asks, says on a status line that it waits for a person, and once the
// person decides elsewhere (the desktop app's window: a decision recorded
// with the desktop channel, which resumes nothing itself) goes on with the
// run: the write is made once and exec prints how the run ended (issue 37,
// item 1).
func TestExecWaitsForTheDecision(t *testing.T) {
	e := newCLIEnv(t)
	calls := filepath.Join(t.TempDir(), "calls.jsonl")
	e.run("", append([]string{"hub", "add", "--yes", "--namespace", "writer", "--env", "SCRIPTED_TOOLS=4", "--env", "SCRIPTED_CALLS=" + calls, "--"}, testenv.Scripted(t)...)...)

	cmd := e.command("hub", "exec", `return await writer.record({item: "decided elsewhere"})`)
	tty, term := openPTY(t)
	var stdout, shown testenv.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, term
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	term.Close()
	go func() { _, _ = io.Copy(&shown, tty) }()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()

	deadline := time.Now().Add(testenv.Timeout(60 * time.Second))
	runID := ""
	for runID == "" || !strings.Contains(shown.String(), "waiting for a person to decide 1 call(s) of run "+runID) {
		if m := regexp.MustCompile(`run (r[0-9a-f]+): awaiting_approval`).FindStringSubmatch(stdout.String()); m != nil {
			runID = m[1]
		}
		select {
		case err := <-done:
			t.Fatalf("hub exec ended without waiting (%v):\nstdout:\n%s\nterminal:\n%q", err, stdout.String(), shown.String())
		default:
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatalf("hub exec did not say it waits:\nstdout:\n%s\nterminal:\n%q", stdout.String(), shown.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	st, err := store.Open(filepath.Join(e.home, "hub"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := approval.Record(context.Background(), st, approval.Request{RunID: runID, Choice: model.ChoiceOnce, Channel: approval.ChannelDesktop}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("hub exec: %v\nstdout:\n%s", err, stdout.String())
		}
	case <-time.After(testenv.Timeout(60 * time.Second)):
		_ = cmd.Process.Kill()
		t.Fatalf("hub exec still waits after the decision:\nstdout:\n%s\nterminal:\n%q", stdout.String(), shown.String())
	}
	if out := stdout.String(); !strings.Contains(out, "run "+runID+": completed") {
		t.Errorf("hub exec did not print how the run ended:\n%s", out)
	}
	b, _ := os.ReadFile(calls)
	if n := strings.Count(string(b), `"name":"record"`); n != 1 {
		t.Errorf("the write was made %d times, want once:\n%s", n, b)
	}
}
