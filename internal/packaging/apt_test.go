//go:build linux

package packaging

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/internal/testenv"
)

// TestAptWaitsForTheDpkgLock: scripts/apt-get.sh, through which setup.sh
// installs Debian packages, waits while another install holds dpkg's lock
// (on a fresh machine, often the system's own unattended upgrade), saying
// what it waits for, and then goes on; plain apt-get fails at once
// (issue 37, item 13). The install asked for is a no-op (a package that is
// there), which still takes the lock.
func TestAptWaitsForTheDpkgLock(t *testing.T) {
	if _, err := exec.LookPath("apt-get"); err != nil || os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("this test needs apt-get (Debian) and root, which CI has")
		}
		t.Skip("needs apt-get and root")
	}
	lock, err := os.OpenFile("/var/lib/dpkg/lock-frontend", os.O_RDWR|os.O_CREATE, 0o640)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	// Wait for any real install to finish, then hold the lock as one would.
	if err := syscall.FcntlFlock(lock.Fd(), syscall.F_SETLKW, &syscall.Flock_t{Type: syscall.F_WRLCK}); err != nil {
		t.Fatalf("taking dpkg's lock: %v", err)
	}
	held := true
	release := func() {
		if held {
			held = false
			_ = syscall.FcntlFlock(lock.Fd(), syscall.F_SETLK, &syscall.Flock_t{Type: syscall.F_UNLCK})
		}
	}
	defer release()

	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(2*time.Minute))
	defer cancel()
	install := []string{"install", "-y", "--no-install-recommends", "dpkg"}
	if out, err := exec.CommandContext(ctx, "apt-get", install...).CombinedOutput(); err == nil || !strings.Contains(string(out), "lock") {
		t.Fatalf("plain apt-get did not fail on the held lock (%v):\n%s", err, out)
	}

	var out testenv.Buffer
	cmd := exec.CommandContext(ctx, filepath.Join(testenv.Root(t), "scripts", "apt-get.sh"), install...)
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for !strings.Contains(out.String(), "Waiting for cache lock") {
		select {
		case err := <-exited:
			t.Fatalf("apt-get.sh ended while the lock was held (%v), without waiting:\n%s", err, out.String())
		case <-ctx.Done():
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			t.Fatalf("apt-get.sh never said it waits for the lock:\n%s", out.String())
		case <-tick.C:
		}
	}
	if !strings.Contains(out.String(), "held by process") {
		t.Errorf("the wait does not say who holds the lock:\n%s", out.String())
	}
	release()
	if err := <-exited; err != nil {
		t.Fatalf("apt-get.sh after the lock was released: %v\n%s", err, out.String())
	}
}
