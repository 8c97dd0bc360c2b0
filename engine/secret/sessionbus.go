package secret

import (
	"errors"
	"os"
	"os/user"
	"path/filepath"
	"runtime"
)

// errNoSessionBus is why the keychain is not asked on a Linux machine with
// no D-Bus session bus to find.
var errNoSessionBus = errors.New("no D-Bus session bus: DBUS_SESSION_BUS_ADDRESS is not set and /run/user/<uid>/bus does not exist")

// needsSessionBus reports whether the OS keychain is the Secret Service
// over the D-Bus session bus (Linux and the BSDs; macOS and Windows have
// their own).
func needsSessionBus() bool {
	return runtime.GOOS != "darwin" && runtime.GOOS != "windows"
}

// sessionBusKnown reports whether a session bus can be found the way
// godbus finds one without starting it: DBUS_SESSION_BUS_ADDRESS, else
// runtimeDir/bus (the socket) or runtimeDir/dbus-session (its address).
// Without one, go-keyring's godbus runs dbus-launch, which starts a
// dbus-daemon that outlives the process — one more for every hub command on
// a headless machine — so the keychain is not asked at all.
func sessionBusKnown(getenv func(string) string, runtimeDir string) bool {
	if a := getenv("DBUS_SESSION_BUS_ADDRESS"); a != "" && a != "autolaunch:" {
		return true
	}
	if runtimeDir == "" {
		return false
	}
	for _, name := range []string{"bus", "dbus-session"} {
		if _, err := os.Stat(filepath.Join(runtimeDir, name)); err == nil {
			return true
		}
	}
	return false
}

// runtimeDir is where godbus looks for the session bus; tests replace it.
var runtimeDir = userRuntimeDir

// userRuntimeDir is /run/user/<uid>, where godbus looks ("" when the user
// is unknown).
func userRuntimeDir() string {
	u, err := user.Current()
	if err != nil {
		return ""
	}
	return filepath.Join("/run/user", u.Uid)
}

// checkSessionBus is nil when the OS keychain may be asked.
func checkSessionBus() error {
	if needsSessionBus() && !SessionBusKnown() {
		return errNoSessionBus
	}
	return nil
}

// SessionBusKnown reports whether this process has a D-Bus session bus to
// connect to without starting one (godbus's dbus-launch leaves a daemon
// behind): DBUS_SESSION_BUS_ADDRESS, or /run/user/<uid>/bus.
func SessionBusKnown() bool {
	return sessionBusKnown(os.Getenv, runtimeDir())
}
