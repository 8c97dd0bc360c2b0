package app_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/source"
	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/godbus/dbus/v5"
	"github.com/google/go-cmp/cmp"
)

// scenarioEnv names the scenario a re-executed test binary runs inside the
// throwaway desktop session; binEnv the directory holding the binaries.
const (
	scenarioEnv = "APP_DESKTOP_SCENARIO"
	binEnv      = "APP_DESKTOP_BIN"
)

// desktopTools are the commands testdata/tools/desktop/with-desktop-session.sh
// and these tests run.
var desktopTools = []string{"Xvfb", "dbus-run-session", "dbus-send", "dunst", "dunstctl", "status-notifier-watcher", "gnome-keyring-daemon", "xdotool"}

// requireDesktop fails (CI=true) or skips the test when a piece of the
// desktop session is not installed.
func requireDesktop(t *testing.T) {
	t.Helper()
	var missing []string
	for _, c := range desktopTools {
		if _, err := exec.LookPath(c); err != nil {
			missing = append(missing, c)
		}
	}
	if len(missing) == 0 {
		return
	}
	msg := fmt.Sprintf("the desktop session needs %s: run scripts/setup.sh --tests (it installs xvfb, dbus, dunst, haskell-status-notifier-item-utils, …)", strings.Join(missing, ", "))
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
	wailsErr  error // why the build with the window is missing
)

// binaries builds capabilities and capabilities-desktop (CGO_ENABLED=0:
// the desktop app's pure-Go slice must build without cgo) once, and the
// desktop app's window (window/capabilities-window) where it can.
func binaries(t *testing.T) string {
	t.Helper()
	root := testenv.Root(t)
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "capabilities-desktop-test-")
		if buildErr != nil {
			return
		}
		for _, pkg := range []string{"capabilities", "capabilities-desktop"} {
			cmd := exec.Command("go", "build", "-o", filepath.Join(binDir, pkg), "github.com/capabilities-sh/capabilities/cmd/"+pkg)
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
			if out, err := cmd.CombinedOutput(); err != nil {
				buildErr = fmt.Errorf("building %s with CGO_ENABLED=0: %w\n%s", pkg, err, out)
				return
			}
		}
		wailsErr = buildWails(binDir, root)
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binDir
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// TestNoDisplayExitsTwo: without DISPLAY or WAYLAND_DISPLAY the app says so,
// points to `capabilities hub serve` and exits 2.
func TestNoDisplayExitsTwo(t *testing.T) {
	if os.Getenv(scenarioEnv) != "" {
		t.Skip("runs outside the desktop session")
	}
	bin := filepath.Join(binaries(t), "capabilities-desktop")
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "DISPLAY=", "WAYLAND_DISPLAY=", "CAPABILITIES_HOME="+t.TempDir())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	code := -1
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	}
	if code != 2 || !strings.Contains(stderr.String(), "capabilities hub serve") || !strings.Contains(stderr.String(), "no display") {
		t.Fatalf("without a display: exit %d (%v), stderr %q; want exit 2 saying there is no display and pointing to capabilities hub serve", code, err, stderr.String())
	}
}

// TestDesktopApp runs the app in the repository's throwaway desktop session
// (Xvfb, a private session bus, status-notifier-watcher, dunst): each
// scenario re-executes this test binary inside with-desktop-session.sh.
//
//   - tray: launch → the tray item is registered with the
//     StatusNotifierWatcher and its dbusmenu has the items; a write paused by
//     `hub exec` in another process → one Notify whose summary names the
//     address, with the actions Open (default), Allow once and Deny, and the
//     menu lists the call; "Allow once" picked through dunst's context menu
//     (pick-action.sh) → the run's decision is once via desktop, and
//     `hub exec --resume` makes the upstream write exactly once; the
//     default action (`dunstctl action`) opens the console's one-time link
//     in the browser (CAPABILITIES_BROWSER), the tray's "Runs…" the same at
//     #runs; a call decided with `hub approve` → the app closes its
//     notification (CloseNotification; dunst shows none) and the menu lists
//     no call; "Quit" (dbusmenu Event) → exit 0.
//   - fallbacks (NO_NOTIFYD=1 NO_TRAY_HOST=1): the app says the tray is
//     unavailable and runs; a pending call opens the console's page with
//     the browser (CAPABILITIES_BROWSER) instead of a notification.
//   - second: a second app of the hub where no session bus is shared with
//     the first exits (secondScenario).
//   - gone: the hub's folder deleted while the app runs (goneScenario).
//
// It logs launch → tray registered, pending call written → Notify, and the
// app's idle RSS (BENCHMARKS.md; never asserted).
func TestDesktopApp(t *testing.T) {
	if os.Getenv(scenarioEnv) != "" {
		t.Skip("runs outside the desktop session")
	}
	requireDesktop(t)
	testenv.Node(t)
	bins := binaries(t)
	session := filepath.Join(testenv.Root(t), "testdata", "tools", "desktop", "with-desktop-session.sh")
	scenarios := []struct {
		name string
		env  []string
	}{
		{"tray", []string{"DESKTOP_DMENU=" + filepath.Join(filepath.Dir(session), "pick-action.sh"), "PICK_ACTION=Allow once"}},
		{"hosted", []string{"DESKTOP_DMENU=" + filepath.Join(filepath.Dir(session), "pick-action.sh"), "PICK_ACTION=Allow once"}},
		{"hub", []string{"DESKTOP_DMENU=" + filepath.Join(filepath.Dir(session), "pick-action.sh"), "PICK_ACTION=Allow once"}},
		{"offers", []string{"DESKTOP_DMENU=" + filepath.Join(filepath.Dir(session), "pick-action.sh"), "PICK_ACTION=Add"}},
		{"fallbacks", []string{"NO_NOTIFYD=1", "NO_TRAY_HOST=1"}},
		{"second", nil},
		{"gone", []string{"DESKTOP_DMENU=" + filepath.Join(filepath.Dir(session), "pick-action.sh"), "PICK_ACTION=Set up a new hub here"}},
		{"signin", nil},
		{"windows-signin", nil},
		{"windows", nil},
		{"windows-fallbacks", []string{"NO_NOTIFYD=1", "NO_TRAY_HOST=1", "NO_KEYRING=1"}},
		{"windows-broken", nil},
		{"windows-soak", []string{"DESKTOP_DMENU=" + filepath.Join(filepath.Dir(session), "pick-action.sh"), "PICK_ACTION=Deny"}},
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			if strings.HasPrefix(sc.name, "windows") && wailsErr != nil {
				if os.Getenv("CI") == "true" {
					t.Fatal(wailsErr)
				}
				t.Skip(wailsErr)
			}
			cmd := exec.Command(session, os.Args[0], "-test.run", "^TestInsideDesktopSession$", "-test.v", "-test.count=1")
			cmd.Env = append(os.Environ(), scenarioEnv+"="+sc.name, binEnv+"="+bins, "TEST_HOME="+t.TempDir())
			cmd.Env = append(cmd.Env, sc.env...)
			out, err := cmd.CombinedOutput()
			if err != nil || !bytes.Contains(out, []byte("--- PASS: TestInsideDesktopSession")) {
				t.Fatalf("inside the desktop session: %v\n%s", err, out)
			}
			for _, line := range strings.Split(string(out), "\n") {
				if strings.Contains(line, "measured:") {
					t.Log(line[strings.Index(line, "measured:"):])
				}
			}
		})
	}
}

// TestInsideDesktopSession is the scenario TestDesktopApp runs in the
// session; it skips anywhere else.
func TestInsideDesktopSession(t *testing.T) {
	scenario := os.Getenv(scenarioEnv)
	if scenario == "" || os.Getenv("WITH_DESKTOP_INNER") == "" {
		t.Skip("runs inside with-desktop-session.sh, started by TestDesktopApp")
	}
	d := newDesktop(t)
	switch scenario {
	case "tray":
		d.trayScenario()
	case "hosted":
		d.hostedScenario() // hosted_desktop_test.go
	case "hub":
		d.hubScenario()
	case "offers":
		d.offersScenario()
	case "fallbacks":
		d.fallbackScenario()
	case "gone":
		d.goneScenario()
	case "second":
		d.secondScenario()
	case "signin":
		d.signInScenario()
	case "windows-signin":
		d.windowSignInScenario()
	case "windows":
		d.windowsScenario()
	case "windows-fallbacks":
		d.windowFallbacksScenario()
	case "windows-broken":
		d.windowBrokenScenario()
	case "windows-soak":
		d.soakScenario()
	default:
		t.Fatalf("no scenario %q", scenario)
	}
}

// desktop is one hub and one app inside the session.
type desktop struct {
	t       *testing.T
	bins    string
	work    string
	home    string // CAPABILITIES_HOME
	calls   string // the writer's call log
	events  string // the writer's events (a line "start" each time it starts)
	opened  string // the links the browser stand-in got
	env     []string
	bus     *dbus.Conn
	mon     *monitor
	app     *exec.Cmd
	stderr  *testenv.Buffer
	exited  chan struct{} // closed when the app exited
	exitErr error
}

func newDesktop(t *testing.T) *desktop {
	t.Helper()
	work := os.Getenv("HOME")
	d := &desktop{t: t, bins: os.Getenv(binEnv), work: work, home: filepath.Join(work, "caps"),
		calls: filepath.Join(work, "writer-calls.jsonl"), events: filepath.Join(work, "writer-events"), opened: filepath.Join(work, "opened")}
	browser := filepath.Join(work, "browser.sh")
	script := "#!/bin/sh\nprintf '%s\\n' \"$1\" >> " + d.opened + "\n"
	if err := os.WriteFile(browser, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	d.env = append(os.Environ(), "CAPABILITIES_HOME="+d.home, "NO_KEYRING=1", "CAPABILITIES_BROWSER="+browser,
		"CAPABILITIES_CONNECT_TIMEOUT="+testenv.Timeout(source.DefaultConnectTimeout).String())
	d.cli("hub", "init")
	argv := append([]string{"hub", "add", "--yes", "--namespace", "writer", "--env", "SCRIPTED_CALLS=" + d.calls, "--env", "SCRIPTED_EVENTS=" + d.events, "--env", "SCRIPTED_TOOLS=4", "--"}, testenv.Scripted(t)...)
	d.cli(argv...)
	bus, err := dbus.ConnectSessionBus()
	if err != nil {
		t.Fatalf("connecting to the session's bus: %v", err)
	}
	t.Cleanup(func() { bus.Close() })
	d.bus = bus
	d.mon = startMonitor(t)
	return d
}

// cli runs capabilities (CAPABILITIES_NO_BROWSER=1: the CLI opens no page)
// and returns its stdout.
func (d *desktop) cli(args ...string) string {
	d.t.Helper()
	cmd := exec.Command(filepath.Join(d.bins, "capabilities"), args...)
	cmd.Env = append(d.env, "CAPABILITIES_NO_BROWSER=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		d.t.Fatalf("capabilities %s: %v\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// exec runs code with `hub exec --json` and checks the run's status.
func (d *desktop) exec(status string, args ...string) string {
	d.t.Helper()
	out := d.cli(append([]string{"hub", "exec", "--json"}, args...)...)
	var env struct {
		RunID  string `json:"runId"`
		Status string `json:"status"`
	}
	if err := json.Unmarshal([]byte(out), &env); err != nil || env.Status != status {
		d.t.Fatalf("hub exec %v: want status %s, got %s (%v)\n%s", args, status, env.Status, err, out)
	}
	return env.RunID
}

// start launches the app (the pure-Go build: pages in the browser).
func (d *desktop) start() time.Time {
	d.t.Helper()
	return d.startBin(filepath.Join(d.bins, "capabilities-desktop"))
}

// startBin launches a build of the app.
func (d *desktop) startBin(bin string) time.Time {
	d.t.Helper()
	d.stderr = &testenv.Buffer{}
	d.app = exec.Command(bin)
	d.app.Env = d.env
	d.app.Stderr = d.stderr
	d.app.WaitDelay = testenv.Timeout(2 * time.Second) // a child holding stderr does not hang Wait
	t0 := time.Now()
	if err := d.app.Start(); err != nil {
		d.t.Fatal(err)
	}
	d.exited = make(chan struct{})
	go func() { d.exitErr = d.app.Wait(); close(d.exited) }()
	d.t.Cleanup(func() {
		select {
		case <-d.exited:
		default:
			_ = d.app.Process.Kill()
			<-d.exited
		}
	})
	return t0
}

// wait waits for the app to exit and returns its code.
func (d *desktop) wait() int {
	d.t.Helper()
	select {
	case <-d.exited:
		err := d.exitErr
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		if err != nil {
			d.t.Fatal(err)
		}
		return 0
	case <-time.After(testenv.Timeout(10 * time.Second)):
		d.t.Fatalf("the app did not exit; stderr:\n%s", d.stderr)
		return -1
	}
}

// waitFor polls until cond holds; the bound only ends a failing test.
func (d *desktop) waitFor(what string, cond func() bool) {
	d.t.Helper()
	wait := testenv.Timeout(10 * time.Second)
	deadline := time.Now().Add(wait)
	for !cond() {
		if time.Now().After(deadline) {
			d.t.Fatalf("still waiting after %v for %s; the app's stderr:\n%s", wait, what, d.stderr)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// run reads a run record from the store.
func (d *desktop) run(id string) model.Run {
	d.t.Helper()
	var r model.Run
	b, err := os.ReadFile(filepath.Join(d.home, "hub", "runs", id+".json"))
	if err == nil {
		err = json.Unmarshal(b, &r)
	}
	if err != nil {
		d.t.Fatalf("reading run %s: %v", id, err)
	}
	return r
}

// links are the links the browser stand-in was handed, in order.
func (d *desktop) links() []string {
	b, _ := os.ReadFile(d.opened)
	return strings.Fields(string(b))
}

// rss is the app's resident set in MB.
func (d *desktop) rss() float64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(d.app.Process.Pid) + "/status")
	if err != nil {
		return 0
	}
	m := regexp.MustCompile(`VmRSS:\s+(\d+) kB`).FindSubmatch(b)
	if m == nil {
		return 0
	}
	kb, _ := strconv.Atoi(string(m[1]))
	return float64(kb) / 1024
}

func (d *desktop) trayScenario() {
	t := d.t
	t0 := d.start()
	// (a) The tray item is registered with the watcher; its menu has the items.
	item := d.trayItem()
	t.Logf("measured: launch → tray item registered %.1f ms", ms(time.Since(t0)))
	menu := d.menu(item)
	want := []string{"No pending calls", "—", "Review N new or changed tools", "Runs…", "Sources…", "Settings…", "Connect agents…", "—", "Pause hub", "Serving MCP at " + d.endpoint(), "Start at login", "—", "Open hub folder", "Quit"}
	if diff := cmp.Diff(want, menu.labels()); diff != "" {
		t.Fatalf("the tray menu (-want +got):\n%s", diff)
	}
	time.Sleep(300 * time.Millisecond) // settle before reading the idle RSS (a measurement, not an assertion)
	t.Logf("measured: idle RSS %.1f MB (tray registered, nothing pending)", d.rss())

	// (b) A write paused by another process → one notification, with the actions.
	run := d.exec("awaiting_approval", `return await writer.record({item: "desktop"})`)
	note := d.mon.notify(t, "writer.record")
	if st, err := os.Stat(filepath.Join(d.home, "hub", "runs", run+".json")); err == nil {
		t.Logf("measured: pending call written by another process → Notify %.1f ms", ms(note.at.Sub(st.ModTime())))
	}
	if diff := cmp.Diff("Approve writer.record?", note.summary); diff != "" {
		t.Errorf("the notification's summary (-want +got):\n%s", diff)
	}
	// dunst reads markup (it lists body-hyperlinks): the body is escaped.
	if !strings.Contains(note.body, `{&#34;item&#34;:&#34;desktop&#34;}`) {
		t.Errorf("the notification does not show the call's arguments, so Allow once would be picked blind:\n%s", note.body)
	}
	if diff := cmp.Diff([]string{"default", "Open", "once", "Allow once", "deny", "Deny"}, note.actions); diff != "" {
		t.Errorf("the notification's actions (-want +got):\n%s", diff)
	}
	d.waitFor("the tray menu to list the pending call", func() bool {
		l := d.menu(item).labels()
		return len(l) > 2 && l[0] == "1 pending call" && l[1] == "Approve writer.record? (run "+run+")"
	})
	if n := d.mon.count("Notify"); n != 1 {
		t.Errorf("%d Notify calls for one pending call, want 1", n)
	}
	// "Allow once" through dunst's context menu (pick-action.sh).
	if out, err := exec.Command("dunstctl", "context").CombinedOutput(); err != nil {
		t.Fatalf("dunstctl context: %v\n%s", err, out)
	}
	d.waitFor("the decision from the notification to be recorded", func() bool {
		r := d.run(run)
		return len(r.Pending) == 1 && r.Pending[0].Decision != nil
	})
	got := d.run(run).Pending[0].Decision
	if got.Choice != model.ChoiceOnce || got.Channel != "desktop" {
		t.Fatalf("the run's decision is %s via %s, want once via desktop", got.Choice, got.Channel)
	}
	// The app goes on with the run by itself once it is decided (issue 37
	// item 1): the write is made with no agent coming back, and the agent's
	// resume gets the finished envelope.
	d.waitFor("the app to finish the run decided from its notification", func() bool {
		return d.run(run).Status == model.RunCompleted
	})
	if n := lines(t, d.calls); n != 1 {
		t.Fatalf("the upstream acted %d times after Allow once, want exactly once", n)
	}
	d.exec("completed", "--resume", run)
	if n := lines(t, d.calls); n != 1 {
		t.Fatalf("the upstream acted %d times after Allow once and resume, want exactly once", n)
	}

	// (c) Decided elsewhere (`hub approve`) → the notification is withdrawn.
	run2 := d.exec("awaiting_approval", `try { return await writer.record({item: "decided elsewhere"}) } catch (e) { return "caught " + e.code }`)
	note2 := d.mon.notifyAfter(t, "writer.record", note.serial)
	// The default action (a click on the notification) opens the console
	// at that call; the tray's "Runs…" opens its runs screen.
	if out, err := exec.Command("dunstctl", "action", "0").CombinedOutput(); err != nil {
		t.Fatalf("dunstctl action: %v\n%s", err, out)
	}
	d.waitFor("the default action to open the console", func() bool { return len(d.links()) == 1 })
	if err := d.menu(item).event(d.bus, "Runs…"); err != nil {
		t.Fatal(err)
	}
	d.waitFor("Runs… to open the console", func() bool { return len(d.links()) == 2 })
	link := regexp.MustCompile(`^http://127\.0\.0\.1:[0-9]+/\?token=[A-Za-z0-9_-]+$`)
	if l := d.links(); !link.MatchString(strings.TrimSuffix(l[0], "#approvals/"+run2+"/c1")) || !strings.HasSuffix(l[0], "#approvals/"+run2+"/c1") || !link.MatchString(strings.TrimSuffix(l[1], "#runs")) || !strings.HasSuffix(l[1], "#runs") {
		t.Fatalf("the browser got %q; want the console's one-time link at the call (#approvals/%s/c1), then the same with #runs", l, run2)
	}
	d.cli("hub", "approve", run2, "--choice", "deny")
	d.waitFor("the app to close the notification of the call decided with hub approve", func() bool {
		return d.mon.closed(note2.id)
	})
	d.waitFor("dunst to show no notification", func() bool {
		out, err := exec.Command("dunstctl", "count", "displayed").Output()
		return err == nil && strings.TrimSpace(string(out)) == "0"
	})
	d.waitFor("the tray menu to show no pending call", func() bool { return d.menu(item).labels()[0] == "No pending calls" })

	// (c2) A run whose process is killed (kill -9) mid-call, a write-free
	// one: nothing writes its record, yet the tray offers it, and opens the
	// Approvals screen (Resume, Cancel); cancelled, it goes.
	slow := exec.Command(filepath.Join(d.bins, "capabilities"), "hub", "exec", `return await writer.sleep({ms: 60000})`)
	slow.Env = append(d.env, "CAPABILITIES_NO_BROWSER=1")
	if err := slow.Start(); err != nil {
		t.Fatal(err)
	}
	var stopped string
	d.waitFor("the slow run to be stored running", func() bool {
		var runs struct{ Runs []struct{ ID, Status string } }
		if json.Unmarshal([]byte(d.cli("hub", "runs", "--status", "running", "--json")), &runs) == nil && len(runs.Runs) == 1 {
			stopped = runs.Runs[0].ID
		}
		return stopped != ""
	})
	if l := d.menu(item).labels(); slices.ContainsFunc(l, func(s string) bool { return strings.Contains(s, "interrupted") }) {
		t.Errorf("the tray offers a run its live process is running: %q", l)
	}
	_ = slow.Process.Kill()
	_ = slow.Wait()
	const offer = "Resume or cancel 1 interrupted run…"
	d.waitFor("the tray to offer the interrupted run", func() bool { return slices.Contains(d.menu(item).labels(), offer) })
	opened := len(d.links())
	if err := d.menu(item).event(d.bus, offer); err != nil {
		t.Fatal(err)
	}
	d.waitFor("the offer to open the console", func() bool { return len(d.links()) == opened+1 })
	if l := d.links()[opened]; !link.MatchString(l) {
		t.Errorf("the offer opened %q; want the console's one-time link at the Approvals screen", l)
	}
	d.cli("hub", "cancel", stopped)
	d.waitFor("the tray to drop the cancelled run", func() bool { return !slices.Contains(d.menu(item).labels(), offer) })

	// (d) Five writes paused one after another: three notifications of
	// their own, one that says two more wait and offers no decision; as
	// calls are decided, the others get theirs, and the last one goes.
	after := note2.serial
	var flood []string
	for i := range 5 {
		flood = append(flood, d.exec("awaiting_approval", fmt.Sprintf(`try { return await writer.record({item: "flood %d"}) } catch (e) { return "caught " + e.code }`, i)))
	}
	d.waitFor("three notifications of their own and one for two more", func() bool {
		more := d.mon.notes(after, "more call")
		return len(d.mon.notes(after, "writer.record")) == 3 && len(more) > 0 && more[len(more)-1].summary == "2 more calls wait for your approval"
	})
	more := d.mon.notes(after, "more call")
	if last := more[len(more)-1]; !strings.Contains(last.body, "writer.record, writer.record") || !slices.Equal(last.actions, []string{"default", "Open"}) {
		t.Errorf("the notification of the calls over the budget: %+v; want the tools and only Open", last)
	}
	time.Sleep(300 * time.Millisecond) // nothing more comes while nothing is decided
	if n := len(d.mon.notes(after, "writer.record")); n != 3 {
		t.Errorf("%d notifications of their own for 5 pending calls, want 3 (the budget)", n)
	}
	for _, r := range flood {
		d.cli("hub", "approve", r, "--choice", "deny")
	}
	d.waitFor("every flooded call to have had its notification, and all to be gone", func() bool {
		out, err := exec.Command("dunstctl", "count", "displayed").Output()
		return len(d.mon.notes(after, "writer.record")) == 5 && err == nil && strings.TrimSpace(string(out)) == "0"
	})

	// (e) Quit from the tray → exit 0.
	if err := d.menu(item).event(d.bus, "Quit"); err != nil {
		t.Fatal(err)
	}
	if code := d.wait(); code != 0 {
		t.Fatalf("Quit: exit %d, want 0; stderr:\n%s", code, d.stderr)
	}
	if strings.Contains(d.stderr.String(), "unavailable") {
		t.Errorf("the app says a piece is unavailable in a full session:\n%s", d.stderr)
	}
}

func (d *desktop) fallbackScenario() {
	t := d.t
	d.start()
	d.waitFor("the app to say the tray is unavailable", func() bool {
		return strings.Contains(d.stderr.String(), "the tray is unavailable")
	})
	d.waitFor("the app to say there is no notification daemon", func() bool {
		return strings.Contains(d.stderr.String(), "no notification daemon")
	})
	d.exec("awaiting_approval", `return await writer.record({item: "no daemon"})`)
	var link string
	d.waitFor("the app to open the approval page in the browser", func() bool {
		if l := d.links(); len(l) > 0 {
			link = l[0]
		}
		return link != ""
	})
	if !regexp.MustCompile(`^http://127\.0\.0\.1:[0-9]+/\?token=[A-Za-z0-9_-]+$`).MatchString(link) {
		t.Fatalf("the browser got %q, want the console's one-time loopback link", link)
	}
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: testenv.Timeout(10 * time.Second)}
	res, err := c.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.Contains(string(page), "/app.js") {
		t.Fatalf("the link: %s\n%s", res.Status, page)
	}
	if n := d.mon.count("Notify"); n != 0 {
		t.Errorf("%d Notify calls without a notification daemon, want 0", n)
	}
	_ = d.app.Process.Signal(syscall.SIGTERM)
	if code := d.wait(); code != 0 {
		t.Fatalf("SIGTERM: exit %d, want 0; stderr:\n%s", code, d.stderr)
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// lines counts the lines of a file (0 when it does not exist).
func lines(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Count(b, []byte("\n"))
}
