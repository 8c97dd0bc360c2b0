package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/internal/testenv"
)

// bound is how long a command may take before a test calls it stuck: a
// failure bound, never what is asserted.
const bound = 30 * time.Second

// cliEnv is a hub in a temporary CAPABILITIES_HOME, driven through the
// real command (the test binary that testscript.Main put on PATH as
// `capabilities`, which runs cli.Main as the built binary does).
type cliEnv struct {
	t    *testing.T
	bin  string
	home string
}

func newCLIEnv(t *testing.T) *cliEnv {
	t.Helper()
	bin, err := exec.LookPath("capabilities")
	if err != nil {
		t.Fatalf("the capabilities command is not on PATH (testscript.Main puts it there): %v", err)
	}
	e := &cliEnv{t: t, bin: bin, home: filepath.Join(t.TempDir(), "home")}
	e.run("", "hub", "init")
	return e
}

func (e *cliEnv) command(args ...string) *exec.Cmd {
	cmd := exec.Command(e.bin, args...)
	cmd.Env = append(os.Environ(), "CAPABILITIES_HOME="+e.home, "NO_KEYRING=1",
		"PATH="+filepath.Dir(testenv.Node(e.t))+string(os.PathListSeparator)+os.Getenv("PATH"),
		// Winding down (the run cancelled, its upstreams reaped) may take
		// longer than a person's 2 s on a loaded machine.
		"CAPABILITIES_WIND_DOWN="+testenv.Timeout(5*time.Second).String())
	return cmd
}

// run runs a command that must succeed within the bound, with stdin.
func (e *cliEnv) run(stdin string, args ...string) string {
	e.t.Helper()
	cmd := e.command(args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	if err := waitBounded(cmd); err != nil {
		e.t.Fatalf("capabilities %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, out.String(), errb.String())
	}
	return out.String()
}

// waitBounded waits for cmd; past the bound it kills it and says so.
func waitBounded(cmd *exec.Cmd) error {
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(bound):
		_ = cmd.Process.Kill()
		<-done
		return errors.New("still running after 30 s; killed")
	}
}

// TestCallEndsWhileSourceAnnouncesListChanges: server-everything with a
// stored credential announces tools/list_changed after every start. `hub
// call` of a tool that takes a second (so the announcement comes while it
// runs) prints the result and exits; it used to refresh, restart the
// upstream, get the next announcement and refresh again until killed.
func TestCallEndsWhileSourceAnnouncesListChanges(t *testing.T) {
	e := newCLIEnv(t)
	e.run("", append([]string{"hub", "add", "--yes", "--namespace", "everything", "--secret-env", "API_KEY", "--"}, testenv.Everything(t)...)...)
	e.run("tok-for-everything-123\n", "hub", "auth", "everything")
	out := e.run("", "hub", "call", "everything.triggerLongRunningOperation", `{"duration": 1, "steps": 1}`)
	if !strings.Contains(out, "Long running operation completed") {
		t.Errorf("hub call printed %q", out)
	}
}

// TestSignalEndsCommand: a command busy with long work (code looping
// forever, an upstream call that takes a minute) ends soon after SIGTERM,
// SIGINT or SIGHUP, with 143, 130 or 129, says why, and leaves nothing in
// the temporary directory (its sandbox's empty directory is removed).
func TestSignalEndsCommand(t *testing.T) {
	e := newCLIEnv(t)
	calls := filepath.Join(t.TempDir(), "calls.jsonl")
	e.run("", "hub", "add", "--yes", "--namespace", "slow", "--env", "SCRIPTED_CALLS="+calls, "--", testenv.Node(t), filepath.Join(testenv.Root(t), "testdata", "upstreams", "scripted.mjs"))
	tests := []struct {
		name     string
		args     []string
		sig      syscall.Signal
		wantCode int
		wantOut  string
	}{
		{"exec looping forever, SIGTERM", []string{"hub", "exec", `await slow.echo({message: "started"}); for (;;) {}`}, syscall.SIGTERM, 143, "cancelled"},
		{"exec in a long upstream call, SIGTERM", []string{"hub", "exec", `await slow.echo({message: "started"}); await slow.sleep({ms: 600000}); return 1`}, syscall.SIGTERM, 143, "cancelled"},
		{"call in a long upstream call, SIGINT", []string{"hub", "call", "slow.sleep", `{"ms": 600000}`}, syscall.SIGINT, 130, ""},
		{"exec in a long upstream call, SIGHUP", []string{"hub", "exec", `await slow.echo({message: "started"}); await slow.sleep({ms: 600000}); return 1`}, syscall.SIGHUP, 129, "cancelled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := os.WriteFile(calls, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			cmd := e.command(tt.args...)
			tmp := t.TempDir() // where the command's sandbox keeps its empty directory
			cmd.Env = append(cmd.Env, "TMPDIR="+tmp)
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// Signal once the command is busy: its first upstream call arrived.
			deadline := time.Now().Add(bound)
			for {
				b, _ := os.ReadFile(calls)
				if len(b) > 0 {
					break
				}
				if time.Now().After(deadline) {
					_ = cmd.Process.Kill()
					t.Fatalf("the command made no upstream call within 30 s\nstderr:\n%s", errb.String())
				}
				time.Sleep(20 * time.Millisecond)
			}
			if err := cmd.Process.Signal(tt.sig); err != nil {
				t.Fatal(err)
			}
			err := waitBounded(cmd)
			var ee *exec.ExitError
			if !errors.As(err, &ee) {
				t.Fatalf("after %v: %v\nstdout:\n%s\nstderr:\n%s", tt.sig, err, out.String(), errb.String())
			}
			if got := ee.ExitCode(); got != tt.wantCode {
				t.Errorf("exit code %d after %v, want %d (%v)\nstderr:\n%s", got, tt.sig, tt.wantCode, ee, errb.String())
			}
			if !strings.Contains(errb.String(), "stopped by "+map[syscall.Signal]string{syscall.SIGINT: "SIGINT", syscall.SIGTERM: "SIGTERM", syscall.SIGHUP: "SIGHUP"}[tt.sig]) {
				t.Errorf("stderr does not say the signal stopped it:\n%s", errb.String())
			}
			if !strings.Contains(out.String(), tt.wantOut) {
				t.Errorf("stdout does not contain %q:\n%s", tt.wantOut, out.String())
			}
			if left, _ := os.ReadDir(tmp); len(left) > 0 {
				t.Errorf("the command left %s in its TMPDIR after %v", left[0].Name(), tt.sig)
			}
		})
	}
}
