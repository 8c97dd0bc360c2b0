package app

import (
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
