package packaging

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gofrs/flock"
	"github.com/google/go-cmp/cmp"

	"github.com/capabilities-sh/capabilities/engine/mcpserver"
	"github.com/capabilities-sh/capabilities/internal/testenv"
)

// hicolorSizes are the PNG sizes the package installs (build/icons).
var hicolorSizes = []string{"16x16", "22x22", "24x24", "32x32", "48x48", "64x64", "128x128", "256x256", "512x512"}

// TestDebianPackage builds the .deb with scripts/package.sh and checks what
// the issue promises of it: both binaries, the .desktop file and the icons
// at their Debian paths, sane control fields, .desktop files that
// desktop-file-validate accepts, and, as root, that `dpkg -i` installs it,
// `capabilities --version` runs from /usr/bin, and `dpkg -r` removes it.
func TestDebianPackage(t *testing.T) {
	requireTool(t, "dpkg-deb", "dpkg")
	requireTool(t, "desktop-file-validate", "desktop-file-utils")
	root := testenv.Root(t)
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(4*time.Minute))
	defer cancel()

	deb := buildPackage(ctx, t, root)

	t.Run("contents", func(t *testing.T) {
		var got []string
		for _, line := range strings.Split(run(ctx, t, "dpkg-deb", "--contents", deb), "\n") {
			f := strings.Fields(line)
			if len(f) == 0 || strings.HasPrefix(f[0], "d") {
				continue // directories
			}
			got = append(got, strings.TrimPrefix(f[len(f)-1], "."))
		}
		want := []string{
			"/usr/bin/capabilities",
			"/usr/bin/capabilities-desktop",
			"/usr/bin/capabilities-window",
			"/usr/share/applications/capabilities.desktop",
			"/usr/share/icons/hicolor/scalable/apps/capabilities.svg",
			"/usr/share/icons/hicolor/symbolic/apps/capabilities-symbolic.svg",
		}
		for _, s := range hicolorSizes {
			want = append(want, "/usr/share/icons/hicolor/"+s+"/apps/capabilities.png")
		}
		slices.Sort(want)
		slices.Sort(got)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("package files (-want +got):\n%s", diff)
		}
	})

	t.Run("control fields", func(t *testing.T) {
		field := func(name string) string {
			return strings.TrimSpace(run(ctx, t, "dpkg-deb", "--field", deb, name))
		}
		arch := strings.TrimSpace(run(ctx, t, "dpkg", "--print-architecture"))
		tests := []struct {
			field string
			ok    func(string) bool
			want  string
		}{
			{"Package", func(v string) bool { return v == "capabilities" }, "capabilities"},
			{"Version", func(v string) bool { return strings.HasPrefix(v, mcpserver.Version) }, "the binary's version " + mcpserver.Version + ", maybe with +git<commit>"},
			{"Architecture", func(v string) bool { return v == arch }, arch},
			{"Maintainer", func(v string) bool { return strings.Contains(v, "<") && strings.Contains(v, "@") }, "a name and an address"},
			{"Description", func(v string) bool { return strings.Contains(v, "MCP") }, "a description of the hub"},
		}
		for _, tt := range tests {
			if v := field(tt.field); !tt.ok(v) {
				t.Errorf("%s: %q, want %s", tt.field, v, tt.want)
			}
		}
	})

	t.Run("desktop files validate", func(t *testing.T) {
		extracted := t.TempDir()
		run(ctx, t, "dpkg-deb", "-x", deb, extracted)
		files := []string{
			filepath.Join(extracted, "usr/share/applications/capabilities.desktop"),
			filepath.Join(root, "build/linux/capabilities.desktop"),
			filepath.Join(root, "build/linux/capabilities-autostart.desktop"),
		}
		for _, f := range files {
			out, err := exec.CommandContext(ctx, "desktop-file-validate", f).CombinedOutput()
			if err != nil || len(bytes.TrimSpace(out)) > 0 {
				t.Errorf("desktop-file-validate %s: %v\n%s", f, err, out)
			}
		}
		// What the menu entry names is in the package: its program and its icon.
		entry, err := os.ReadFile(files[0])
		if err != nil {
			t.Fatal(err)
		}
		for _, tt := range []struct{ key, path string }{
			{"Exec=capabilities-desktop\n", "usr/bin/capabilities-desktop"},
			{"Icon=capabilities\n", "usr/share/icons/hicolor/48x48/apps/capabilities.png"},
		} {
			if !bytes.Contains(entry, []byte(tt.key)) {
				t.Errorf("the .desktop file has no %q", strings.TrimSpace(tt.key))
			}
			if _, err := os.Stat(filepath.Join(extracted, tt.path)); err != nil {
				t.Errorf("%s names /%s, which the package does not hold: %v", strings.TrimSpace(tt.key), tt.path, err)
			}
		}
	})

	t.Run("dpkg -i", func(t *testing.T) {
		if os.Geteuid() != 0 {
			if os.Getenv("CI") == "true" {
				t.Fatal("installing the package with dpkg -i needs root: CI runs as root")
			}
			t.Skip("installing the package with dpkg -i needs root: run the tests as root to check it")
		}
		installAndRun(ctx, t, deb)
	})
}

// buildPackage runs scripts/package.sh into a temporary directory and returns
// the .deb's path.
func buildPackage(ctx context.Context, t *testing.T, root string) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(root, "scripts", "package.sh"), t.TempDir())
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("scripts/package.sh: %v\n%s", err, stderr.String())
	}
	deb := strings.TrimSpace(string(out))
	if fi, err := os.Stat(deb); err != nil || !strings.HasSuffix(deb, ".deb") {
		t.Fatalf("scripts/package.sh printed %q, not a .deb it wrote: %v\n%s", deb, err, stderr.String())
	} else {
		t.Logf("%s: %d KiB", filepath.Base(deb), fi.Size()/1024)
	}
	return deb
}

// installAndRun installs the package into the real system, runs what it
// installed and removes it again, also when the test fails.
func installAndRun(ctx context.Context, t *testing.T, deb string) {
	// Two copies of the suite on one machine take turns.
	lock := flock.New(filepath.Join(os.TempDir(), "capabilities-packaging-test.lock"))
	if ok, err := lock.TryLockContext(ctx, 200*time.Millisecond); err != nil || !ok {
		t.Fatalf("waiting for the other copy of this test to finish with dpkg: %v", err)
	}
	t.Cleanup(func() { _ = lock.Unlock() })

	status, _ := exec.CommandContext(ctx, "dpkg-query", "-W", "-f", "${Status}", "capabilities").Output()
	_, binErr := os.Stat("/usr/bin/capabilities")
	if strings.Contains(string(status), " installed") || binErr == nil {
		msg := "the package capabilities (or /usr/bin/capabilities) is already installed on this machine: this test would replace and then remove it; remove it with dpkg -r capabilities to run the test"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}

	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(time.Minute))
		defer cancel()
		dpkg(ctx, t, "-r", "capabilities")
		for _, p := range []string{"/usr/bin/capabilities", "/usr/bin/capabilities-desktop", "/usr/bin/capabilities-window", "/usr/share/applications/capabilities.desktop"} {
			if _, err := os.Stat(p); err == nil {
				t.Errorf("dpkg -r capabilities left %s behind", p)
			}
		}
	})
	dpkg(ctx, t, "-i", deb)

	out, err := exec.CommandContext(ctx, "/usr/bin/capabilities", "--version").CombinedOutput()
	if want := "capabilities version " + mcpserver.Version; err != nil || strings.TrimSpace(string(out)) != want {
		t.Errorf("/usr/bin/capabilities --version: %v, printed %q, want %q", err, out, want)
	}

	// The desktop app runs too: with no display it says so and exits 2.
	cmd := exec.CommandContext(ctx, "/usr/bin/capabilities-desktop")
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "DISPLAY=") || strings.HasPrefix(kv, "WAYLAND_DISPLAY=")
	})
	out, err = cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(string(out), "no display") {
		t.Errorf("/usr/bin/capabilities-desktop without a display: %v, printed %q; want exit 2 saying there is no display", err, out)
	}

	// The window's libraries (GTK 3, WebKitGTK 4.1) are found: it can open.
	out, err = exec.CommandContext(ctx, "/usr/bin/capabilities-window", "--check").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "capabilities-window: ok" {
		t.Errorf("/usr/bin/capabilities-window --check: %v, printed %q; want it to load its libraries and say ok", err, out)
	}

	listed := run(ctx, t, "dpkg", "-L", "capabilities")
	if !strings.Contains(listed, "/usr/share/applications/capabilities.desktop") {
		t.Errorf("dpkg -L capabilities does not list the .desktop file:\n%s", listed)
	}
}

// dpkg runs dpkg with args, waiting while another dpkg or apt holds its lock.
func dpkg(ctx context.Context, t *testing.T, args ...string) {
	t.Helper()
	for {
		out, err := exec.CommandContext(ctx, "dpkg", args...).CombinedOutput()
		if err == nil {
			return
		}
		if !bytes.Contains(out, []byte("lock")) || ctx.Err() != nil {
			t.Fatalf("dpkg %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

func run(ctx context.Context, t *testing.T, name string, args ...string) string {
	t.Helper()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

// requireTool fails the test in CI, and skips it elsewhere, when a command
// is missing, saying which Debian package brings it.
func requireTool(t *testing.T, name, pkg string) {
	t.Helper()
	if _, err := exec.LookPath(name); err == nil {
		return
	}
	msg := name + " is missing: install the Debian package " + pkg + " (scripts/setup.sh --tests does)"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}
