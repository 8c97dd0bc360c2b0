package secret

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoSessionBusStartsNoDaemon: with no D-Bus session bus to find, the
// hub keeps secrets in the file (saying why) and never runs dbus-launch —
// godbus would, and the dbus-daemon it starts outlives the process, one
// more for each hub command on a headless machine.
func TestNoSessionBusStartsNoDaemon(t *testing.T) {
	if !needsSessionBus() {
		t.Skip("the keychain here is not the Secret Service")
	}
	// Wherever the test runs, no bus socket to find (godbus itself would
	// still look in the real /run/user/<uid>: the check must not reach it).
	empty := t.TempDir()
	defer func(f func() string) { runtimeDir = f }(runtimeDir)
	runtimeDir = func() string { return empty }
	bin := t.TempDir()
	marker := filepath.Join(t.TempDir(), "launched")
	fake := "#!/bin/sh\necho launched > " + marker + "\necho DBUS_SESSION_BUS_ADDRESS=unix:path=/nonexistent\n"
	if err := os.WriteFile(filepath.Join(bin, "dbus-launch"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "")

	ctx := context.Background()
	file := filepath.Join(t.TempDir(), "secrets.json")
	log, buf := newLog()
	k := Open(Options{File: file, Logger: log})
	if err := k.Set(ctx, "github/work", "value-0123456789"); err != nil {
		t.Fatal(err)
	}
	if v, err := k.Get(ctx, "github/work"); err != nil || v != "value-0123456789" {
		t.Fatalf("Get = %q, %v", v, err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("dbus-launch was run: a dbus-daemon would outlive the hub")
	}
	if st := k.Status(); st.Backend != BackendFile || strings.Count(st.Reason, "no D-Bus session bus") != 1 {
		t.Errorf("Status = %+v, want the file, saying once that there is no session bus", st)
	}
	if !strings.Contains(buf.String(), "no D-Bus session bus") {
		t.Errorf("the warning does not say why:\n%s", buf.String())
	}
}

func TestSessionBusKnown(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	if sessionBusKnown(getenv, dir) {
		t.Error("known with nothing set")
	}
	env["DBUS_SESSION_BUS_ADDRESS"] = "autolaunch:"
	if sessionBusKnown(getenv, dir) {
		t.Error("autolaunch: counts as known (godbus would run dbus-launch)")
	}
	env["DBUS_SESSION_BUS_ADDRESS"] = "unix:path=/run/bus"
	if !sessionBusKnown(getenv, dir) {
		t.Error("an address set is not known")
	}
	delete(env, "DBUS_SESSION_BUS_ADDRESS")
	if err := os.WriteFile(filepath.Join(dir, "bus"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if !sessionBusKnown(getenv, dir) {
		t.Error("runtimeDir/bus is not known")
	}
}
