package secret

// Tests against a real Secret Service (gnome-keyring-daemon on a private
// D-Bus session bus). Each test runs in two roles: from the normal test run
// it re-executes the test binary, for this one test, inside a throwaway
// session (testdata/tools/desktop/with-desktop-session.sh) or with a hung
// session bus; inside, with innerEnv set, it does the real work.

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/internal/testenv"
)

const innerEnv = "CAPABILITIES_SECRET_TEST_INNER"

const installHint = "install the Debian packages: apt-get install -y --no-install-recommends xvfb xauth dbus dbus-x11 gnome-keyring libsecret-tools xdotool (scripts/setup.sh installs them)"

// desktopScript returns the session script, failing with an install hint
// when a tool it needs is missing.
func desktopScript(t *testing.T) string {
	t.Helper()
	for _, tool := range []string{"Xvfb", "dbus-run-session", "dbus-send", "dbus-update-activation-environment", "gnome-keyring-daemon", "secret-tool", "xdotool"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s not found: %s", tool, installHint)
		}
	}
	return testenv.Tool(t, "desktop/with-desktop-session.sh")
}

// reexec runs this test binary for test name with innerEnv=role, through
// wrapper (nil: directly), and fails t with the child's output unless the
// child ran the test and it passed.
func reexec(t *testing.T, name, role string, wrapper []string, env ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(90*time.Second))
	defer cancel()
	args := append(wrapper, os.Args[0], "-test.run=^"+name+"$", "-test.v", "-test.count=1", "-test.timeout=80s")
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Env = append(os.Environ(), append(env, innerEnv+"="+role, "TEST_HOME="+t.TempDir(), "NO_TRAY_HOST=1", "NO_NOTIFYD=1")...)
	out, err := cmd.CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("--- PASS: "+name)) {
		t.Fatalf("%s (%s) failed: %v\n%s", name, role, err, out)
	}
	t.Logf("%s (%s):\n%s", name, role, out)
}

func TestKeychainSecretService(t *testing.T) {
	if os.Getenv(innerEnv) != "keychain" {
		reexec(t, t.Name(), "keychain", []string{desktopScript(t)})
		return
	}
	ctx := context.Background()
	file := filepath.Join(t.TempDir(), "hub", "secrets.json")
	log, buf := newLog()
	k := Open(Options{File: file, Logger: log})
	if st := k.Status(); st.Backend != BackendKeychain {
		t.Fatalf("Status = %+v, want the keychain (DBUS_SESSION_BUS_ADDRESS=%s)", st, os.Getenv("DBUS_SESSION_BUS_ADDRESS"))
	}
	const value = "ghp_RealKeychainValue-0123456789"
	if err := k.Set(ctx, "github/work", value); err != nil {
		t.Fatal(err)
	}
	if v, err := k.Get(ctx, "github/work"); err != nil || v != value {
		t.Fatalf("Get = %q, %v", v, err)
	}
	// The value is really in the Secret Service, under the service and account.
	out, err := exec.Command("secret-tool", "lookup", "service", Service, "username", "github/work").Output()
	if err != nil || string(out) != value {
		t.Fatalf("secret-tool lookup = %q, %v; want the value", out, err)
	}
	if data, err := os.ReadFile(file); err == nil && bytes.Contains(data, []byte(value)) {
		t.Fatalf("the value is in the fallback file:\n%s", data)
	}
	if _, err := os.Stat(filepath.Dir(file)); !os.IsNotExist(err) {
		t.Errorf("the keychain store touched the fallback directory: %v", err)
	}
	if err := k.Delete(ctx, "github/work"); err != nil {
		t.Fatal(err)
	}
	if _, err := k.Get(ctx, "github/work"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get after Delete: %v, want ErrNotFound", err)
	}
	if err := k.Delete(ctx, "github/work"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second Delete: %v, want ErrNotFound", err)
	}
	if out, _ := exec.Command("secret-tool", "lookup", "service", Service, "username", "github/work").Output(); len(out) != 0 {
		t.Fatalf("the Secret Service still holds %q after Delete", out)
	}
	if logs := buf.String(); strings.Contains(logs, fileWarning) {
		t.Errorf("a file warning with a working keychain:\n%s", logs)
	}
}

func TestKeychainAbsentFallsBackToFile(t *testing.T) {
	if os.Getenv(innerEnv) != "nokeyring" {
		reexec(t, t.Name(), "nokeyring", []string{desktopScript(t)}, "NO_KEYRING=1")
		return
	}
	ctx := context.Background()
	file := filepath.Join(t.TempDir(), "hub", "secrets.json")
	log, buf := newLog()
	k := Open(Options{File: file, Logger: log})
	start := time.Now()
	const value = "ghp_FileFallbackValue-0123456789"
	if err := k.Set(ctx, "github/work", value); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d >= DefaultTimeout {
		t.Errorf("Set took %v: an absent Secret Service should fail at once, not after the %v timeout", d, DefaultTimeout)
	}
	if v, err := k.Get(ctx, "github/work"); err != nil || v != value {
		t.Fatalf("Get = %q, %v", v, err)
	}
	st := k.Status()
	if st.Backend != BackendFile || st.File != file || !strings.Contains(st.Reason, "ServiceUnknown") {
		t.Errorf("Status = %+v, want the file with the ServiceUnknown reason", st)
	}
	fi, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("%s has mode %v, want 0600", file, fi.Mode().Perm())
	}
	if data, _ := os.ReadFile(file); !bytes.Contains(data, []byte(value)) {
		t.Errorf("the value is not in the file:\n%s", data)
	}
	logs := buf.String()
	if n := strings.Count(logs, fileWarning); n != 1 {
		t.Errorf("%d file warnings for 2 calls, want 1 (once per process):\n%s", n, logs)
	}
	for _, want := range []string{"file=" + file, "no Secret Service", "ServiceUnknown"} {
		if !strings.Contains(logs, want) {
			t.Errorf("the warning does not say %q:\n%s", want, logs)
		}
	}
	if err := k.Delete(ctx, "github/work"); err != nil {
		t.Fatal(err)
	}
	if _, err := k.Get(ctx, "github/work"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get after Delete: %v, want ErrNotFound", err)
	}
}

func TestKeychainHangingFallsBack(t *testing.T) {
	if os.Getenv(innerEnv) != "hang" {
		// Directly, without a desktop session: the child points its session
		// bus at a socket that accepts and never answers. It runs in its own
		// process because godbus keeps the hung connection for the process.
		reexec(t, t.Name(), "hang", nil)
		return
	}
	sock := filepath.Join(t.TempDir(), "bus")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		var held []net.Conn // accepted, never answered
		for {
			c, err := l.Accept()
			if err != nil {
				for _, c := range held {
					c.Close()
				}
				return
			}
			held = append(held, c)
		}
	}()
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "unix:path="+sock)

	ctx := context.Background()
	file := filepath.Join(t.TempDir(), "secrets.json")
	log, buf := newLog()
	k := Open(Options{File: file, Logger: log}) // the default timeout: 3s
	start := time.Now()
	if err := k.Set(ctx, "github/work", "ghp_HungBusValue-0123"); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < DefaultTimeout || d > DefaultTimeout+testenv.Timeout(2*time.Second) {
		t.Errorf("Set took %v, want the %v timeout and then the file", d, DefaultTimeout)
	}
	start = time.Now()
	if v, err := k.Get(ctx, "github/work"); err != nil || v != "ghp_HungBusValue-0123" {
		t.Fatalf("Get = %q, %v", v, err)
	}
	if d := time.Since(start); d >= DefaultTimeout {
		t.Errorf("Get after the fallback took %v, the keychain's timeout: the hung keychain was asked again", d)
	}
	st := k.Status()
	if st.Backend != BackendFile || !strings.Contains(st.Reason, "did not answer within 3s") {
		t.Errorf("Status = %+v", st)
	}
	if logs := buf.String(); !strings.Contains(logs, "did not answer within 3s") || !strings.Contains(logs, "file="+file) {
		t.Errorf("the warning does not name the timeout and the file:\n%s", logs)
	}
}
