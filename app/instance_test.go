package app

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestInstanceNameFollowsSymlinks: a hub reached through a symlink is the
// same hub, so a second app launched with CAPABILITIES_HOME set to the
// link finds the first one instead of running beside it (doubling every
// notification and taking over the hub's endpoint.json).
func TestInstanceNameFollowsSymlinks(t *testing.T) {
	home := t.TempDir()
	hub := filepath.Join(home, "hub")
	if err := os.Mkdir(hub, 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "home")
	if err := os.Symlink(home, link); err != nil {
		t.Fatal(err)
	}
	if a, b := instanceName(hub), instanceName(filepath.Join(link, "hub")); a != b {
		t.Errorf("the hub through a symlink is %s, at its real path %s; want one name", b, a)
	}
	if a, b := instanceName(hub), instanceName(filepath.Join(t.TempDir(), "hub")); a == b {
		t.Errorf("two hubs share the name %s", a)
	}
}

// TestLockApp: a second app of a hub is refused the app lock, told which
// process has it and what to do; once the first lets go, it gets it.
func TestLockApp(t *testing.T) {
	dir := t.TempDir()
	unlock, err := lockApp(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = lockApp(dir)
	want := fmt.Sprintf("another desktop app (pid %d) already runs for the hub at %s, and could not be asked to show its window (no session bus shared with it): use that app's tray or window, or quit it before starting this one", os.Getpid(), dir)
	if err == nil || err.Error() != want {
		t.Fatalf("a second lock: %v\nwant: %s", err, want)
	}
	unlock()
	again, err := lockApp(dir)
	if err != nil {
		t.Fatalf("the lock once the first let go: %v", err)
	}
	again()
}
