package app_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/godbus/dbus/v5"
	"github.com/google/go-cmp/cmp"
)

// endpoint is host:port of the MCP endpoint the app announced in the store.
func (d *desktop) endpoint() string {
	d.t.Helper()
	var ep struct {
		URL string `json:"url"`
		PID int    `json:"pid"`
	}
	d.waitFor("the app to announce its MCP endpoint in hub/endpoint.json", func() bool {
		b, err := os.ReadFile(filepath.Join(d.home, "hub", "endpoint.json"))
		return err == nil && json.Unmarshal(b, &ep) == nil && ep.PID == d.app.Process.Pid
	})
	u, err := url.Parse(ep.URL)
	if err != nil || u.Scheme != "http" || u.Path != "/mcp" {
		d.t.Fatalf("the announced endpoint %q is not http://host:port/mcp", ep.URL)
	}
	return u.Host
}

// tooltip is the tray item's tooltip title.
func (d *desktop) tooltip(item string) string {
	d.t.Helper()
	service, path := item, "/StatusNotifierItem"
	if i := strings.Index(item, "/"); i > 0 {
		service, path = item[:i], item[i:]
	}
	v, err := d.bus.Object(service, dbus.ObjectPath(path)).GetProperty("org.kde.StatusNotifierItem.ToolTip")
	if err != nil {
		d.t.Fatalf("reading the tray item's ToolTip: %v", err)
	}
	s, _ := v.Value().([]any)
	if len(s) < 3 {
		d.t.Fatalf("a ToolTip that is not (sa(iiay)ss): %#v", v.Value())
	}
	title, _ := s[2].(string)
	return title
}

// trayItem waits for the app's tray item to be registered and returns it.
func (d *desktop) trayItem() string {
	d.t.Helper()
	var item string
	d.waitFor("the tray item to be registered with the StatusNotifierWatcher", func() bool {
		v, err := d.bus.Object("org.kde.StatusNotifierWatcher", "/StatusNotifierWatcher").GetProperty("org.kde.StatusNotifierWatcher.RegisteredStatusNotifierItems")
		items, _ := v.Value().([]string)
		if err == nil && len(items) > 0 {
			item = items[0]
		}
		return item != ""
	})
	return item
}

// agent is a TypeScript SDK client without elicitation
// (testdata/clients/sdk1_repl.mjs) over `capabilities hub serve --stdio`.
type agent struct {
	d      *desktop
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Scanner
	errout *testenv.Buffer
}

type agentResult struct {
	Text       string `json:"text"`
	IsError    bool   `json:"isError"`
	Structured *struct {
		RunID  string `json:"runId"`
		Status string `json:"status"`
	} `json:"structured"`
}

func (d *desktop) agent() *agent {
	d.t.Helper()
	cmd := exec.Command(testenv.Node(d.t), filepath.Join(testenv.Root(d.t), "testdata", "clients", "sdk1_repl.mjs"))
	cmd.Env = append(d.env, "CAP_BIN="+filepath.Join(d.bins, "capabilities"))
	a := &agent{d: d, cmd: cmd, errout: &testenv.Buffer{}}
	cmd.Stderr = a.errout
	var err error
	if a.in, err = cmd.StdinPipe(); err != nil {
		d.t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		d.t.Fatal(err)
	}
	a.out = bufio.NewScanner(out)
	a.out.Buffer(make([]byte, 1<<20), 1<<20)
	if err := cmd.Start(); err != nil {
		d.t.Fatal(err)
	}
	d.t.Cleanup(func() { a.in.Close(); _ = cmd.Process.Kill(); _ = cmd.Wait() })
	if !a.out.Scan() || !strings.Contains(a.out.Text(), `"ready":true`) {
		d.t.Fatalf("the agent did not connect: %q\n%s", a.out.Text(), a.errout)
	}
	return a
}

// execute calls the execute tool and checks the run's status.
func (a *agent) execute(status string, args map[string]any) agentResult {
	a.d.t.Helper()
	b, _ := json.Marshal(map[string]any{"name": "execute", "arguments": args})
	if _, err := a.in.Write(append(b, '\n')); err != nil {
		a.d.t.Fatal(err)
	}
	if !a.out.Scan() {
		a.d.t.Fatalf("the agent ended: %v\n%s", a.out.Err(), a.errout)
	}
	var r agentResult
	if err := json.Unmarshal(a.out.Bytes(), &r); err != nil || r.Structured == nil || r.Structured.Status != status {
		a.d.t.Fatalf("execute %v: want status %s (%v)\n%s\n%s", args, status, err, a.out.Text(), a.errout)
	}
	return r
}

// descends reports whether process pid descends from ancestor.
func descends(pid, ancestor int) bool {
	for pid > 1 {
		if pid == ancestor {
			return true
		}
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return false
		}
		// pid (comm) state ppid …: comm may hold spaces, so split after ")".
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(f) < 2 {
			return false
		}
		pid, _ = strconv.Atoi(f[1])
	}
	return false
}

// processes are the pids whose command line holds s.
func processes(s string) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && strings.Contains(string(b), s) {
			out = append(out, pid)
		}
	}
	return out
}

// hubScenario: the app serves the hub's MCP endpoint and agents relay to it.
//
//   - 127.0.0.1:4790 taken (held by the test) → the app serves at the next
//     free port, says so, shows it in the tray's menu and tooltip and
//     announces it in hub/endpoint.json.
//   - a TypeScript SDK client without elicitation over `hub serve --stdio`
//     runs a write → the stdio process relays to the app: the upstream is
//     started once, by the app (its process descends from the app's, not
//     from the stdio process); the pending call is the app's notification
//     (the client is told it is shown; no browser page opens) → "Allow
//     once" picked in dunst → decision via desktop → the client resumes →
//     the upstream wrote exactly once.
//   - "Pause hub" (dbusmenu Event) → hub/paused (mode 600), the item reads
//     "Resume hub", the tooltip says paused; a read that runs otherwise now
//     asks (reason paused) in another process; `hub resume` in a terminal
//     → the tray reads "Pause hub" again and the read runs.
//   - Quit → exit 0 and the announcement is gone.
func (d *desktop) hubScenario() {
	t := d.t
	hold, err := net.Listen("tcp", "127.0.0.1:4790")
	if err == nil {
		defer hold.Close()
	} else if !errors.Is(err, syscall.EADDRINUSE) {
		t.Fatalf("holding port 4790: %v", err)
	}
	before := strings.Count(readFile(t, d.events), "start\n") // `hub add` started it once
	d.start()
	item := d.trayItem()
	ep := d.endpoint()
	host, port, _ := net.SplitHostPort(ep)
	if host != "127.0.0.1" || port == "4790" {
		t.Fatalf("the app serves MCP at %s while 4790 is taken; want 127.0.0.1 and another port", ep)
	}
	d.waitFor("the app to say port 4790 is in use", func() bool {
		return strings.Contains(d.stderr.String(), "port 4790 is in use: serving MCP at http://"+ep+"/mcp")
	})
	if l := d.menu(item).labels(); !contains(l, "Serving MCP at "+ep) || !contains(l, "Pause hub") {
		t.Fatalf("the tray menu %q does not show where MCP is served (%s) and Pause hub", l, ep)
	}
	if tip := d.tooltip(item); tip != "capabilities: idle (MCP at "+ep+")" {
		t.Errorf("the tooltip is %q, want it to say idle and where MCP is served", tip)
	}

	// An agent relays to the app; its write asks through the notification.
	ag := d.agent()
	res := ag.execute("awaiting_approval", map[string]any{"code": `return await writer.record({item: "relayed"})`})
	if !strings.Contains(res.Text, "The desktop app asks the person in a notification") {
		t.Errorf("the agent was not told the call is shown to the person:\n%s", res.Text)
	}
	run := res.Structured.RunID
	d.mon.notify(t, "writer.record")
	if out, err := exec.Command("dunstctl", "context").CombinedOutput(); err != nil {
		t.Fatalf("dunstctl context: %v\n%s", err, out)
	}
	d.waitFor("the decision from the notification to be recorded", func() bool {
		r := d.run(run)
		return len(r.Pending) == 1 && r.Pending[0].Decision != nil
	})
	if got := d.run(run).Pending[0].Decision; got.Choice != model.ChoiceOnce || got.Channel != "desktop" {
		t.Fatalf("the run's decision is %s via %s, want once via desktop", got.Choice, got.Channel)
	}
	ag.execute("completed", map[string]any{"resume": run})
	if n := lines(t, d.calls); n != 1 {
		t.Fatalf("the upstream acted %d times after Allow once and resume, want exactly once", n)
	}
	if n := strings.Count(readFile(t, d.events), "start\n") - before; n != 1 {
		t.Errorf("the upstream started %d times, want once (by the app)", n)
	}
	// Other tests on this machine may run the scripted upstream too: count
	// this hub's, by the process they descend from.
	var byApp, byAgent int
	for _, pid := range processes("scripted.mjs") {
		if descends(pid, d.app.Process.Pid) {
			byApp++
		}
		if descends(pid, ag.cmd.Process.Pid) {
			byAgent++
		}
	}
	if byApp != 1 || byAgent != 0 {
		t.Errorf("%d upstream processes started by the app and %d by the agent's serve --stdio; want 1 and 0", byApp, byAgent)
	}
	if l := d.links(); len(l) != 0 {
		t.Errorf("a browser page opened (%q); the notification is the app's page", l)
	}

	// Pause from the tray; resume from a terminal.
	if err := d.menu(item).event(d.bus, "Pause hub"); err != nil {
		t.Fatal(err)
	}
	flag := filepath.Join(d.home, "hub", "paused")
	d.waitFor("Pause hub to write hub/paused", func() bool { _, err := os.Stat(flag); return err == nil })
	if fi, err := os.Stat(flag); err != nil {
		t.Fatal(err)
	} else if fi.Mode().Perm() != 0o600 {
		t.Errorf("hub/paused has mode %v, want 600", fi.Mode().Perm())
	}
	d.waitFor("the tray to offer Resume hub", func() bool { return contains(d.menu(item).labels(), "Resume hub") })
	if tip := d.tooltip(item); !strings.HasPrefix(tip, "capabilities: paused, every call asks") {
		t.Errorf("the tooltip while paused is %q, want it to say paused", tip)
	}
	read := d.exec("awaiting_approval", `return await writer.echo({message: "while paused"})`)
	if p := d.run(read).Pending; len(p) != 1 || p[0].Reason != "paused" {
		t.Errorf("the read while paused waits on %+v, want one call with the reason paused", p)
	}
	// The end of the pause lets the read go on: it asked only for the pause.
	if out := d.cli("hub", "resume"); !strings.Contains(out, "run "+read+", which waited only for the pause: completed") {
		t.Errorf("`hub resume` said %q, want the read's run to go on and complete", out)
	}
	if st := d.run(read).Status; st != model.RunCompleted {
		t.Errorf("the read after `hub resume` is %s, want completed", st)
	}
	d.waitFor("the tray to offer Pause hub again after `hub resume`", func() bool { return contains(d.menu(item).labels(), "Pause hub") })
	d.exec("completed", `return await writer.echo({message: "resumed"})`)
	d.cli("hub", "pause")
	d.waitFor("the tray to offer Resume hub after `hub pause`", func() bool { return contains(d.menu(item).labels(), "Resume hub") })
	read = d.exec("awaiting_approval", `return await writer.echo({message: "paused again"})`)
	if err := d.menu(item).event(d.bus, "Resume hub"); err != nil {
		t.Fatal(err)
	}
	d.waitFor("Resume hub to remove hub/paused", func() bool { _, err := os.Stat(flag); return os.IsNotExist(err) })
	d.waitFor("the tray to offer Pause hub after Resume hub", func() bool { return contains(d.menu(item).labels(), "Pause hub") })
	d.waitFor("the tray's Resume hub to let the read held by the pause go on", func() bool { return d.run(read).Status == model.RunCompleted })
	d.waitFor("the tooltip to say idle after Resume hub", func() bool { return d.tooltip(item) == "capabilities: idle (MCP at "+ep+")" })

	// A source failing its check shows in the tray: the Sources… item and
	// the tooltip name it; back to health, they say nothing of it.
	broken := filepath.Join(d.work, "flaky-broken")
	scripted := testenv.Scripted(t)
	d.cli(append([]string{"hub", "add", "--yes", "--namespace", "flaky", "--", "sh", "-c", `test -e "$0" && exit 3; exec "$@"`, broken}, scripted...)...)
	if err := os.WriteFile(broken, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	refresh := exec.Command(filepath.Join(d.bins, "capabilities"), "hub", "refresh", "flaky")
	refresh.Env = d.env
	_ = refresh.Run() // it fails: the upstream exits at once
	d.waitFor("the tray to say a source is failing", func() bool { return contains(d.menu(item).labels(), "Sources… (1 failing)") })
	if diff := cmp.Diff("capabilities: 1 source failing: flaky (MCP at "+ep+")", d.tooltip(item)); diff != "" {
		t.Errorf("the tooltip with a source failing (-want +got):\n%s", diff)
	}
	if err := os.Remove(broken); err != nil {
		t.Fatal(err)
	}
	d.cli("hub", "refresh", "flaky")
	d.waitFor("the tray to stop saying a source is failing", func() bool { return contains(d.menu(item).labels(), "Sources…") })

	if n := d.upstreams(); n == 0 {
		t.Fatalf("no upstream process of this hub runs before Quit; the count below would prove nothing")
	}
	if err := d.menu(item).event(d.bus, "Quit"); err != nil {
		t.Fatal(err)
	}
	if code := d.wait(); code != 0 {
		t.Fatalf("Quit: exit %d, want 0; stderr:\n%s", code, d.stderr)
	}
	d.waitFor("no upstream process of this hub to be left after Quit", func() bool { return d.upstreams() == 0 })
	if _, err := os.Stat(filepath.Join(d.home, "hub", "endpoint.json")); !os.IsNotExist(err) {
		t.Errorf("the announcement is still there after Quit (%v)", err)
	}
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

func readFile(t interface{ Fatal(...any) }, p string) string {
	b, err := os.ReadFile(p)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return string(b)
}

// upstreams counts the running processes of this session's upstream (the
// scripted server with this desktop's SCRIPTED_EVENTS in its environment).
func (d *desktop) upstreams() int {
	d.t.Helper()
	procs, err := filepath.Glob("/proc/[0-9]*/environ")
	if err != nil {
		d.t.Fatal(err)
	}
	want := []byte("SCRIPTED_EVENTS=" + d.events + "\x00")
	n := 0
	for _, p := range procs {
		if b, err := os.ReadFile(p); err == nil && bytes.Contains(b, want) {
			n++
		}
	}
	return n
}
