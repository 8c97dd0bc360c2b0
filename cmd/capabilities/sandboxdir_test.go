package main

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestKilledHubsSandboxDirectorySwept: a `hub serve --stdio` killed with
// SIGKILL cannot remove its sandbox's empty directory from the temporary
// directory; the next command that ends normally removes it, and leaves
// the directory of a hub still serving alone.
func TestKilledHubsSandboxDirectorySwept(t *testing.T) {
	e := newCLIEnv(t)
	tmp := t.TempDir()
	serve := func() (cmd *exec.Cmd, stdin io.WriteCloser, dir string) {
		t.Helper()
		before := roots(t, tmp)
		cmd = e.command("hub", "serve", "--stdio")
		cmd.Env = append(cmd.Env, "TMPDIR="+tmp, "CAPABILITIES_NO_SHIM=1")
		in, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		deadline := time.Now().Add(bound)
		for {
			for _, d := range roots(t, tmp) {
				if !slices.Contains(before, d) {
					return cmd, in, d
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("hub serve made no sandbox directory in its TMPDIR within %v", bound)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	backdate := func(dir string) {
		t.Helper()
		old := time.Now().Add(-time.Hour) // past the minute a new directory is spared
		if err := os.Chtimes(dir, old, old); err != nil {
			t.Fatal(err)
		}
	}

	killedCmd, _, killed := serve()
	if err := killedCmd.Process.Kill(); err != nil { // SIGKILL: no wind-down
		t.Fatal(err)
	}
	_ = killedCmd.Wait()
	if _, err := os.Stat(killed); err != nil {
		t.Fatalf("a killed hub's directory: %v", err)
	}
	backdate(killed)
	liveCmd, liveIn, live := serve()
	backdate(live)

	cmd := e.command("hub", "exec", "return 1")
	cmd.Env = append(cmd.Env, "TMPDIR="+tmp)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("hub exec: %v\n%s", err, out)
	}
	if _, err := os.Stat(killed); !os.IsNotExist(err) {
		t.Errorf("the killed hub's sandbox directory is still there after another command ended (%v)", err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("the serving hub's sandbox directory was removed: %v", err)
	}
	_ = liveIn.Close() // the agent went away: serve ends
	if err := waitBounded(liveCmd); err != nil {
		t.Fatalf("hub serve after its stdin closed: %v", err)
	}
	if left := roots(t, tmp); len(left) > 0 {
		t.Errorf("left in TMPDIR: %v", left)
	}
}

func roots(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, filepath.Join(dir, e.Name()))
	}
	return out
}
