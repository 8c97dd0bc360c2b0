package app

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/godbus/dbus/v5"
	"github.com/gofrs/flock"
)

// One app runs per hub and person: the first owns a name on the session
// bus; a second launch asks it to show its window and exits.
const (
	instanceIface = "sh.capabilities.Desktop"
	instancePath  = dbus.ObjectPath("/sh/capabilities/Desktop")
)

// errRunning: another app serves this hub; it was asked to show itself.
var errRunning = errors.New("already running for this hub: showed its window")

// instanceName is the bus name of the app of the hub at dir. The hub is
// named by its real path: reached through a symlink (a home kept in a
// dotfiles folder, CAPABILITIES_HOME set to the link or to its target) it
// is the same hub, with one app.
func instanceName(dir string) string {
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	sum := sha256.Sum256([]byte(dir))
	return instanceIface + ".h" + hex.EncodeToString(sum[:6])
}

// instance is what the app exports on the bus for a second launch.
type instance struct{ show func() }

// Show is called by a second launch.
func (i instance) Show() *dbus.Error {
	i.show()
	return nil
}

// claimInstance takes the app's name on the bus, with show as what a
// second launch calls; errRunning when another app has it (and was asked
// to show itself).
func claimInstance(conn *dbus.Conn, dir string, show func()) error {
	name := instanceName(dir)
	if err := conn.Export(instance{show}, instancePath, instanceIface); err != nil {
		return fmt.Errorf("exporting the app on the session bus: %w", err)
	}
	reply, err := conn.RequestName(name, dbus.NameFlagDoNotQueue)
	if err != nil {
		return fmt.Errorf("claiming %s on the session bus: %w", name, err)
	}
	if reply == dbus.RequestNameReplyPrimaryOwner || reply == dbus.RequestNameReplyAlreadyOwner {
		return nil
	}
	if err := conn.Object(name, instancePath).Call(instanceIface+".Show", 0).Err; err != nil {
		return fmt.Errorf("another app serves this hub (%s) and did not answer: %w", name, err)
	}
	return errRunning
}

// appLock is the file in the hub's folder the hub's running app holds a
// lock on (freed when its process ends, however it ends), its pid written
// in it. It finds a first app where the session bus cannot: a second app
// without a session bus (or on another one) would otherwise run beside it,
// doubling every notification and refused the endpoint announcement.
const appLock = "desktop.lock"

// lockApp takes the hub's app lock; when another app holds it, an error
// that names it (by pid, when it wrote one) and what to do.
func lockApp(dir string) (unlock func(), err error) {
	p := filepath.Join(dir, appLock)
	lk := flock.New(p, flock.SetPermissions(0o600))
	ok, err := lk.TryLock()
	if err != nil {
		return nil, fmt.Errorf("taking the hub's app lock %s: %w", p, err)
	}
	if !ok {
		other := "another desktop app"
		if b, err := os.ReadFile(p); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 0 {
				other = fmt.Sprintf("another desktop app (pid %d)", pid)
			}
		}
		return nil, fmt.Errorf("%s already runs for the hub at %s, and could not be asked to show its window (no session bus shared with it): use that app's tray or window, or quit it before starting this one", other, dir)
	}
	// Where a lock keeps others from writing (Windows), the pid is left
	// out: the message then says "another desktop app".
	_ = os.WriteFile(p, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600)
	return func() { _ = lk.Unlock() }, nil
}
