package app_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/capabilities-sh/capabilities/engine/model"
)

// wailsTags are the build tags of the desktop app with its own window
// (Wails v2 over WebKitGTK 4.1), as scripts/setup.sh builds it.
const wailsTags = "desktop,production,webkit2_41"

// buildWails builds the desktop app's window (capabilities-window: Wails,
// cgo) into dir/window, beside links to the app and the CLI there (the app
// runs the window found beside it; the pure-Go scenarios run the app in dir,
// with none beside it), or says why it cannot: it needs cgo, gcc,
// pkg-config and the GTK 3 and WebKitGTK 4.1 headers (libgtk-3-dev,
// libwebkit2gtk-4.1-dev).
func buildWails(dir, root string) error {
	if out, err := exec.Command("pkg-config", "--exists", "--print-errors", "gtk+-3.0", "webkit2gtk-4.1").CombinedOutput(); err != nil {
		return fmt.Errorf("the desktop app's window needs pkg-config, libgtk-3-dev and libwebkit2gtk-4.1-dev (scripts/setup.sh installs them): %v %s", err, out)
	}
	win := filepath.Join(dir, "window")
	if err := os.MkdirAll(win, 0o755); err != nil {
		return err
	}
	cmd := exec.Command("go", "build", "-tags", wailsTags, "-o", filepath.Join(win, "capabilities-window"), "github.com/capabilities-sh/capabilities/cmd/capabilities-window")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building capabilities-window with -tags %s: %w\n%s", wailsTags, err, out)
	}
	for _, b := range []string{"capabilities-desktop", "capabilities"} {
		if err := os.Link(filepath.Join(dir, b), filepath.Join(win, b)); err != nil {
			return err
		}
	}
	// wm-close: a window manager's close button, for a session without one.
	src := filepath.Join(root, "testdata", "tools", "desktop", "wm-close.c")
	if out, err := exec.Command("cc", "-o", filepath.Join(dir, "wm-close"), src, "-lX11").CombinedOutput(); err != nil {
		return fmt.Errorf("building wm-close (gcc, libx11-dev): %w\n%s", err, out)
	}
	return nil
}

// visible is the title of the app's window when it is mapped, "" when no
// window of the app is (the session runs nothing else with such a title;
// the window is the app's window process's).
func (d *desktop) visible() string {
	out, err := exec.Command("xdotool", "search", "--onlyvisible", "--name", "^capabilities", "getwindowname", "%@").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// screenshot saves the screen as name.png in $APP_SCREENSHOTS (default: the
// test's HOME) and logs where.
func (d *desktop) screenshot(name string) {
	dir := os.Getenv("APP_SCREENSHOTS")
	if dir == "" {
		dir = d.work
	}
	path := filepath.Join(dir, name+".png")
	cmd := exec.Command("sh", "-c", `xwd -root -silent | convert xwd:- "$1"`, "sh", path)
	if out, err := cmd.CombinedOutput(); err != nil {
		d.t.Errorf("taking a screenshot: %v\n%s", err, out)
		return
	}
	d.t.Logf("screenshot: %s", path)
}

// windowsScenario: the app built with its own window (Wails).
//
//   - launch → the tray item; "Runs…", "Sources…" and "Review…" in the tray
//     menu each show the window at that screen (its title says which);
//     a screenshot of each;
//   - a write paused by another process → its notification; the default
//     action (a click on it) shows the approval window; pressing `d` in it
//     records deny (channel desktop), and the window goes away;
//   - a call decided with `hub approve` while its window is open → the
//     notification is closed and the window goes away;
//   - "Connect agents…" writes the capabilities entry into Claude Code's
//     config (its other keys kept) and says so in a notification;
//   - a second launch shows the first's window and exits 0;
//   - closing the window keeps the app in the tray; "Quit" → exit 0.
func (d *desktop) windowsScenario() {
	t := d.t
	d.app = nil
	bin := filepath.Join(d.bins, "window", "capabilities-desktop")
	d.startBin(bin)
	item := d.trayItem()
	// The app starts in the tray. (Wails v2 on Linux maps the window and
	// hides it on the main loop's first turn: a flash, then nothing.)
	d.waitFor("the window to be hidden at launch (the app starts in the tray)", func() bool { return d.visible() == "" })
	for _, s := range []struct{ label, title, shot string }{
		{"Runs…", "capabilities — Runs", "window-runs"},
		{"Sources…", "capabilities — Sources", "window-sources"},
		{"Review new or changed tools", "capabilities — Review", "window-review"},
		{"Settings…", "capabilities — Settings", "window-settings"},
	} {
		t0 := time.Now()
		if err := d.menu(item).event(d.bus, s.label); err != nil {
			t.Fatal(err)
		}
		d.waitFor("the window to show "+s.title, func() bool { return d.visible() == s.title })
		t.Logf("measured: %s clicked → window %q mapped %.1f ms", s.label, s.title, ms(time.Since(t0)))
		time.Sleep(500 * time.Millisecond) // let the page paint before the screenshot
		d.screenshot(s.shot)
	}
	// Closing the window (as a window manager's close button does) keeps
	// the app and the tray running.
	d.closeWindow()
	d.waitFor("the window to be hidden after closing it", func() bool { return d.visible() == "" })
	select {
	case <-d.exited:
		t.Fatalf("closing the window ended the app; stderr:\n%s", d.stderr)
	case <-time.After(300 * time.Millisecond):
	}

	// A pending call: its notification's default action opens the approval
	// window; `d` there denies it.
	run := d.exec("awaiting_approval", `try { return await writer.record({item: "denied in the window"}) } catch (e) { return "caught " + e.code }`)
	note := d.mon.notify(t, "writer.record")
	t0 := time.Now()
	if out, err := exec.Command("dunstctl", "action", "0").CombinedOutput(); err != nil {
		t.Fatalf("dunstctl action: %v\n%s", err, out)
	}
	d.waitFor("the default action to show the approval window", func() bool { return d.visible() == "capabilities — Approvals" })
	t.Logf("measured: notification clicked → approval window mapped %.1f ms", ms(time.Since(t0)))
	time.Sleep(300 * time.Millisecond) // let the page list the call before the screenshot
	d.screenshot("window-approval")
	// `d` in the window denies the call.
	got := d.decideInWindow(run, "d")
	if got.Choice != model.ChoiceDeny || got.Channel != "desktop" {
		t.Fatalf("the run's decision is %s via %s, want deny via desktop", got.Choice, got.Channel)
	}
	d.waitFor("the approval window to go away once nothing waits", func() bool { return d.visible() == "" })
	d.waitFor("the notification of the call decided in the window to be closed", func() bool { return d.mon.closed(note.id) })
	if n := lines(t, d.calls); n != 0 {
		t.Fatalf("the upstream acted %d times on a denied call", n)
	}

	// Decided elsewhere while its window is open → the window goes away.
	run2 := d.exec("awaiting_approval", `try { return await writer.record({item: "decided elsewhere"}) } catch (e) { return "caught " + e.code }`)
	note2 := d.mon.notifyAfter(t, "writer.record", note.serial)
	d.waitFor("the tray menu to list the call", func() bool {
		l := d.menu(item).labels()
		return len(l) > 1 && strings.HasPrefix(l[1], "Approve writer.record?")
	})
	if err := d.menu(item).event(d.bus, "Approve writer.record? (run "+run2+")"); err != nil {
		t.Fatal(err)
	}
	d.waitFor("the tray's pending call to show the approval window", func() bool { return d.visible() == "capabilities — Approvals" })
	d.cli("hub", "approve", run2, "--choice", "deny")
	d.waitFor("the window of the call decided with hub approve to go away", func() bool { return d.visible() == "" })
	d.waitFor("its notification to be closed", func() bool { return d.mon.closed(note2.id) })

	// "Connect agents…": one capabilities entry in each agent's config (here
	// Claude Code's, with a key of its own that stays), then a notification.
	claude := filepath.Join(d.work, ".claude.json")
	if err := os.WriteFile(claude, []byte("{\n  \"numStartups\": 3\n}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := d.menu(item).event(d.bus, "Connect agents…"); err != nil {
		t.Fatal(err)
	}
	d.mon.notifyAfter(t, "Connected Claude Code", note2.serial)
	var cfg struct {
		NumStartups int `json:"numStartups"`
		MCPServers  map[string]struct {
			Command string   `json:"command"`
			Args    []string `json:"args"`
		} `json:"mcpServers"`
	}
	b, err := os.ReadFile(claude)
	if err == nil {
		err = json.Unmarshal(b, &cfg)
	}
	if err != nil {
		t.Fatalf("reading Claude Code's config after Connect agents…: %v\n%s", err, b)
	}
	if e := cfg.MCPServers["capabilities"]; cfg.NumStartups != 3 || e.Command != filepath.Join(d.bins, "window", "capabilities") || strings.Join(e.Args, " ") != "hub serve --stdio --profile default" {
		t.Fatalf("Claude Code's config after Connect agents…:\n%s\nwant its numStartups kept and a capabilities entry running %s hub serve --stdio --profile default", b, filepath.Join(d.bins, "window", "capabilities"))
	}

	// The setting "Bring the approval window to the front" (what the
	// Settings screen writes): a call that waits now opens the window
	// too, beside its notification.
	if err := os.WriteFile(filepath.Join(d.home, "hub", "settings.json"), []byte(`{"raiseApprovals": true}`), 0o600); err != nil {
		t.Fatal(err)
	}
	d.waitFor("no window before the call", func() bool { return d.visible() == "" })
	run3 := d.exec("awaiting_approval", `try { return await writer.record({item: "raised"}) } catch (e) { return "caught " + e.code }`)
	note3 := d.mon.notifyAfter(t, "writer.record", note2.serial)
	d.waitFor("the setting to bring the approval window up with the notification", func() bool { return d.visible() == "capabilities — Approvals" })
	d.cli("hub", "approve", run3, "--choice", "deny")
	d.waitFor("the window to go away once decided", func() bool { return d.visible() == "" })
	d.waitFor("its notification to be closed", func() bool { return d.mon.closed(note3.id) })

	// A second launch shows the first one's window and exits 0.
	second := exec.Command(bin)
	second.Env = d.env
	out, err := second.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "already running") {
		t.Fatalf("a second launch: %v\n%s; want exit 0 saying it is already running", err, out)
	}
	d.waitFor("the second launch to show the first one's window", func() bool { return d.visible() != "" })

	// Quit from the tray → exit 0.
	if err := d.menu(item).event(d.bus, "Quit"); err != nil {
		t.Fatal(err)
	}
	if code := d.wait(); code != 0 {
		t.Fatalf("Quit: exit %d, want 0; stderr:\n%s", code, d.stderr)
	}
}

// closeWindow asks the app's window to close the way a window manager's
// close button does (testdata/tools/desktop/wm-close.c).
func (d *desktop) closeWindow() {
	d.t.Helper()
	out, err := exec.Command("xdotool", "search", "--onlyvisible", "--name", "^capabilities").Output()
	ids := strings.Fields(string(out))
	if err != nil || len(ids) != 1 {
		d.t.Fatalf("finding the app's window: %v %q", err, out)
	}
	if out, err := exec.Command(filepath.Join(d.bins, "wm-close"), ids[0]).CombinedOutput(); err != nil {
		d.t.Fatalf("wm-close: %v\n%s", err, out)
	}
}

// decideInWindow presses key in the approval window until run's one pending
// call is decided, and returns the decision. The page lists the call once
// its request returns, so a press may come before: it is pressed again (a
// second press finds nothing left to decide), 1.5 s later, past the second
// an early key makes the call's shortcuts wait again.
func (d *desktop) decideInWindow(run, key string) *model.Decision {
	d.t.Helper()
	decided := func() bool {
		r := d.run(run)
		return len(r.Pending) == 1 && r.Pending[0].Decision != nil
	}
	d.waitFor("`"+key+"` pressed in the window to be recorded", func() bool {
		if err := d.tryKey(key); err != nil {
			d.t.Logf("pressing again: %v", err)
		}
		for range 30 {
			if decided() {
				return true
			}
			time.Sleep(50 * time.Millisecond)
		}
		return false
	})
	return d.run(run).Pending[0].Decision
}

// key types a key into the app's window.
func (d *desktop) key(k string) {
	d.t.Helper()
	if err := d.tryKey(k); err != nil {
		d.t.Fatal(err)
	}
}

// tryKey types a key into the app's window, if it is still there: a window
// that closes between xdotool's search and its key press (the decision the
// last press made closes it) fails with BadWindow, which a caller pressing
// again until something is recorded takes as "not yet".
func (d *desktop) tryKey(k string) error {
	out, err := exec.Command("xdotool", "search", "--onlyvisible", "--name", "^capabilities",
		"windowfocus", "--sync", "key", "--clearmodifiers", k).CombinedOutput()
	if err != nil {
		return fmt.Errorf("xdotool key %s: %w\n%s", k, err, out)
	}
	return nil
}

// windowFallbacksScenario: the app with its window, without a tray host, a
// notification daemon or a keychain (NO_TRAY_HOST=1 NO_NOTIFYD=1
// NO_KEYRING=1): it says the tray is unavailable and where secrets are kept
// instead, and shows its window at launch; a pending call is listed
// there (no notification), and `o` pressed in it allows it once via
// desktop, and the window stays; the upstream acts exactly once on resume.
func (d *desktop) windowFallbacksScenario() {
	t := d.t
	// No keychain on the bus either (the session runs none): the app is
	// not told to do without one, it finds out.
	var env []string
	for _, e := range d.env {
		if !strings.HasPrefix(e, "NO_KEYRING=") {
			env = append(env, e)
		}
	}
	d.env = env
	d.startBin(filepath.Join(d.bins, "window", "capabilities-desktop"))
	d.waitFor("the app to say the tray is unavailable", func() bool {
		return strings.Contains(d.stderr.String(), "the tray is unavailable")
	})
	// Not "in the browser": it has its window.
	d.waitFor("the app to say pending calls open the approval screen", func() bool {
		return strings.Contains(d.stderr.String(), "no notification daemon on the session bus: pending calls open the approval screen instead")
	})
	d.waitFor("the app to say where secrets are kept without a keychain", func() bool {
		return strings.Contains(d.stderr.String(), "secrets are kept in "+filepath.Join(d.home, "hub", "secrets.json")+" (mode 600), not in the OS keychain")
	})
	d.waitFor("the window to show itself without a tray", func() bool { return d.visible() == "capabilities — Approvals" })
	run := d.exec("awaiting_approval", `return await writer.record({item: "no tray, no daemon"})`)
	got := d.decideInWindow(run, "o")
	if got.Choice != model.ChoiceOnce || got.Channel != "desktop" {
		t.Fatalf("the run's decision is %s via %s, want once via desktop", got.Choice, got.Channel)
	}
	// Without a tray the window is the one way to the app: it stays when
	// nothing waits any more (it used to close, leaving the app unreachable).
	time.Sleep(time.Second)
	if v := d.visible(); v != "capabilities — Approvals" {
		t.Errorf("after the last call was decided the window shows %q, want it still up (capabilities — Approvals)", v)
	}
	d.exec("completed", "--resume", run)
	if n := lines(t, d.calls); n != 1 {
		t.Fatalf("the upstream acted %d times after Allow once and resume, want exactly once", n)
	}
	if n := d.mon.count("Notify"); n != 0 {
		t.Errorf("%d Notify calls without a notification daemon, want 0", n)
	}
	_ = d.app.Process.Signal(syscall.SIGTERM)
	if code := d.wait(); code != 0 {
		t.Fatalf("SIGTERM: exit %d, want 0; stderr:\n%s", code, d.stderr)
	}
}

// windowBrokenScenario: a capabilities-window beside the app that cannot
// start (its libraries missing: here a program that exits 127) → the app
// says so in its log and shows the screens in the browser instead.
func (d *desktop) windowBrokenScenario() {
	t := d.t
	dir := filepath.Join(d.work, "broken")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, b := range []string{"capabilities-desktop", "capabilities"} {
		if err := os.Link(filepath.Join(d.bins, b), filepath.Join(dir, b)); err != nil {
			t.Fatal(err)
		}
	}
	script := "#!/bin/sh\necho 'capabilities-window: error while loading shared libraries: libwebkit2gtk-4.1.so.0' >&2\nexit 127\n"
	if err := os.WriteFile(filepath.Join(dir, "capabilities-window"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	d.startBin(filepath.Join(dir, "capabilities-desktop"))
	item := d.trayItem()
	if err := d.menu(item).event(d.bus, "Runs…"); err != nil {
		t.Fatal(err)
	}
	d.waitFor("Runs… to open the console in the browser", func() bool { return len(d.links()) == 1 })
	if l := d.links()[0]; !strings.HasSuffix(l, "#runs") {
		t.Fatalf("the browser got %q, want the console's link at #runs", l)
	}
	if !strings.Contains(d.stderr.String(), "the window cannot start here") {
		t.Errorf("the app did not say why the screens open in the browser:\n%s", d.stderr)
	}
	_ = d.app.Process.Signal(syscall.SIGTERM)
	if code := d.wait(); code != 0 {
		t.Fatalf("SIGTERM: exit %d, want 0; stderr:\n%s", code, d.stderr)
	}
}
