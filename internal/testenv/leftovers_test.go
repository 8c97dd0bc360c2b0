package testenv

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
)

// TestMain: testenv's own tests leave nothing running either.
func TestMain(m *testing.M) { os.Exit(RunLeavingNothing(m)) }

// TestLeftoverProcessFailsTheTests: a test that starts a process and ends
// only its parent (a shell that put it in the background and exited, as
// runuser killed alone left its child) passes itself, but the run fails,
// naming the process, which is killed.
func TestLeftoverProcessFailsTheTests(t *testing.T) {
	if marker := os.Getenv("TESTENV_LEAVE"); marker != "" {
		// The child run: the orphan is reparented to this test binary.
		if err := exec.Command("sh", "-c", "sleep "+marker+" &").Run(); err != nil {
			t.Fatal(err)
		}
		return
	}
	if runtime.GOOS != "linux" {
		t.Skip("the check needs Linux's child subreaper")
	}
	marker := fmt.Sprint(100000 + os.Getpid()) // a sleep no other run starts
	var out bytes.Buffer
	cmd := exec.Command(os.Args[0], "-test.run=^TestLeftoverProcessFailsTheTests$", "-test.v")
	cmd.Env = append(os.Environ(), "TESTENV_LEAVE="+marker)
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("a run that left a process: %v, want exit status 1\n%s", err, out.String())
	}
	for _, want := range []string{"--- PASS: TestLeftoverProcessFailsTheTests", "the tests left 1 process(es) running", "sleep " + marker} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the run's output does not say %q:\n%s", want, out.String())
		}
	}
	if pids := running("sleep " + marker); len(pids) > 0 {
		t.Errorf("the process left is still running: %v", pids)
	}
}

// running lists the pids of processes whose command line is cmd.
func running(cmd string) []string {
	var out []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && strings.TrimRight(strings.ReplaceAll(string(b), "\x00", " "), " ") == cmd {
			out = append(out, e.Name())
		}
	}
	return out
}
