package app_test

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/capabilities-sh/capabilities/internal/testenv"
)

// noBus is the app's environment without the session's bus: unset, so
// the app finds none (or, where /run/user/<uid>/bus exists, another bus
// than the first app's).
func (d *desktop) noBus() []string {
	env := make([]string, 0, len(d.env)+1)
	for _, kv := range d.env {
		if !strings.HasPrefix(kv, "DBUS_SESSION_BUS_ADDRESS=") {
			env = append(env, kv)
		}
	}
	return append(env, "DBUS_SESSION_BUS_ADDRESS=")
}

// second runs another app of the hub with env until it exits (bounded)
// and returns its exit code and stderr.
func (d *desktop) second(env []string) (int, string) {
	d.t.Helper()
	cmd := exec.Command(filepath.Join(d.bins, "capabilities-desktop"))
	cmd.Env = env
	stderr := &testenv.Buffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		d.t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), stderr.String()
		}
		if err != nil {
			d.t.Fatal(err)
		}
		return 0, stderr.String()
	case <-time.After(testenv.Timeout(10 * time.Second)):
		_ = cmd.Process.Kill()
		<-done
		d.t.Fatalf("a second app of the hub still runs after 10 s beside the first; its stderr:\n%s", stderr)
		return -1, ""
	}
}

// secondScenario: one app per hub where the session bus cannot say so.
//
//   - an app runs with the session's bus; a second one without it (it
//     cannot ask the first to show its window) exits 1 saying that another
//     app, the first's pid, runs for the hub, and what to do; the first
//     still serves (its announcement stays);
//   - the first quit, an app without any bus runs, and a second without a
//     bus exits 1 naming it.
func (d *desktop) secondScenario() {
	t := d.t
	d.start()
	d.trayItem()
	d.endpoint()
	dir := filepath.Join(d.home, "hub")
	want := func(pid int) string {
		return fmt.Sprintf("capabilities-desktop: another desktop app (pid %d) already runs for the hub at %s, and could not be asked to show its window (no session bus shared with it): use that app's tray or window, or quit it before starting this one\n", pid, dir)
	}
	code, stderr := d.second(d.noBus())
	if code != 1 || !strings.HasSuffix(stderr, want(d.app.Process.Pid)) {
		t.Errorf("a second app without the first's bus: exit %d, stderr:\n%s\nwant exit 1 ending with:\n%s", code, stderr, want(d.app.Process.Pid))
	}
	d.endpoint() // still the first's
	_ = d.app.Process.Signal(syscall.SIGTERM)
	if code := d.wait(); code != 0 {
		t.Fatalf("SIGTERM: exit %d; stderr:\n%s", code, d.stderr)
	}

	first := d.app
	d.env = d.noBus()
	d.start()
	if d.app == first {
		t.Fatal("no new app")
	}
	d.endpoint()
	code, stderr = d.second(d.env)
	if code != 1 || !strings.HasSuffix(stderr, want(d.app.Process.Pid)) {
		t.Errorf("two apps without a bus: the second exits %d, stderr:\n%s\nwant exit 1 ending with:\n%s", code, stderr, want(d.app.Process.Pid))
	}
	_ = d.app.Process.Signal(syscall.SIGTERM)
	if code := d.wait(); code != 0 {
		t.Fatalf("SIGTERM: exit %d; stderr:\n%s", code, d.stderr)
	}
}
