package app_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/cookiejar"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/google/go-cmp/cmp"
)

// call calls a tool and returns its answer, error or not.
func (a *agent) call(name string, args map[string]any) agentResult {
	a.d.t.Helper()
	b, _ := json.Marshal(map[string]any{"name": name, "arguments": args})
	if _, err := a.in.Write(append(b, '\n')); err != nil {
		a.d.t.Fatal(err)
	}
	if !a.out.Scan() {
		a.d.t.Fatalf("the agent ended: %v\n%s", a.out.Err(), a.errout)
	}
	var r agentResult
	if err := json.Unmarshal(a.out.Bytes(), &r); err != nil {
		a.d.t.Fatalf("%s %v: %v\n%s", name, args, err, a.out.Text())
	}
	return r
}

// registered are the tray items registered with the StatusNotifierWatcher
// (none when it cannot be asked).
func (d *desktop) registered() []string {
	v, err := d.bus.Object("org.kde.StatusNotifierWatcher", "/StatusNotifierWatcher").GetProperty("org.kde.StatusNotifierWatcher.RegisteredStatusNotifierItems")
	if err != nil {
		return nil
	}
	items, _ := v.Value().([]string)
	return items
}

// goneScenario: the hub's folder deleted while the app runs (rm -rf of
// CAPABILITIES_HOME), a call waiting in it and an agent relaying to the app.
//
//   - the app says it in one critical notification, "The hub folder was
//     deleted", that names the folder and the call that waited (its own
//     notification is closed: the call is lost, not decided), with "Set up
//     a new hub here" and "Quit"; the tray's first item names the folder,
//     "Set up a new hub here" under it, no call listed, the tooltip says it;
//   - the agent's next call is answered with an error naming the folder,
//     the console page open in the browser with 410 hub_gone saying it;
//   - a console screen picked in the tray raises the notice again and
//     opens no page; nothing recreates the folder;
//   - "Set up a new hub here" picked in dunst → a new hub there, and the
//     app starts again on it (the same process, re-executed): a new tray
//     item with no call, the endpoint announced, `hub exec` runs; Quit →
//     exit 0.
func (d *desktop) goneScenario() {
	t := d.t
	d.start()
	item := d.trayItem()
	ep := d.endpoint()
	ag := d.agent()
	res := ag.execute("awaiting_approval", map[string]any{"code": `return await writer.record({item: "lost"})`})
	run := res.Structured.RunID
	callNote := d.mon.notify(t, "writer.record")
	d.waitFor("the tray to list the call", func() bool { return d.menu(item).labels()[0] == "1 pending call" })
	// The console open in the browser, on the Runs screen.
	if err := d.menu(item).event(d.bus, "Runs…"); err != nil {
		t.Fatal(err)
	}
	d.waitFor("Runs… to open the console", func() bool { return len(d.links()) == 1 })
	jar, _ := cookiejar.New(nil)
	page := &http.Client{Jar: jar, Timeout: testenv.Timeout(10 * time.Second)}
	link := strings.TrimSuffix(d.links()[0], "#runs")
	api := func(path string) (int, string) {
		res, err := page.Get(strings.Split(link, "?")[0] + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	if res, err := page.Get(link); err != nil {
		t.Fatal(err)
	} else {
		res.Body.Close()
	}
	if code, body := api("api/approvals"); code != http.StatusOK || !strings.Contains(body, run) {
		t.Fatalf("the console's approvals before the deletion: %d %s", code, body)
	}

	// As a person would: again when it fails (the app refills runs/ with
	// empty spare files in the background after a write, and rm -rf meets
	// "directory not empty" when it comes in between).
	d.waitFor("the hub's home to be deleted", func() bool { return os.RemoveAll(d.home) == nil })
	dir := filepath.Join(d.home, "hub")
	var gone note
	d.waitFor("the notification that the hub was deleted", func() bool {
		n := d.mon.notes(callNote.serial, "The hub folder was deleted")
		if len(n) > 0 {
			gone = n[0]
		}
		return len(n) > 0
	})
	for _, want := range []string{dir + " was deleted or moved away while the app ran", "1 call waiting for your approval went with it: writer.record (run " + run + ", call c1)"} {
		if !strings.Contains(gone.body, want) {
			t.Errorf("the notification of the hub deleted does not say %q:\n%s", want, gone.body)
		}
	}
	if diff := cmp.Diff([]string{"setup", "Set up a new hub here", "quit", "Quit"}, gone.actions); diff != "" {
		t.Errorf("its actions (-want +got):\n%s", diff)
	}
	d.waitFor("the call's own notification to be closed", func() bool { return d.mon.closed(callNote.id) })
	want := []string{"The hub folder was deleted: " + dir, "Set up a new hub here", "—", "Review N new or changed tools", "Runs…", "Sources…", "Settings…", "Connect agents…", "—", "Pause hub", "Serving MCP at " + ep, "Start at login", "—", "Open hub folder", "Quit"}
	d.waitFor("the tray to say the hub was deleted", func() bool { return slices.Equal(d.menu(item).labels(), want) })
	wantTip := "capabilities: the hub folder was deleted (" + dir + "): agents' calls fail until there is a hub again"
	d.waitFor("the tooltip to say the hub was deleted", func() bool { return d.tooltip(item) == wantTip })
	res = ag.call("execute", map[string]any{"code": `return 1`})
	if !res.IsError || !strings.Contains(res.Text, "the hub at "+dir+" was deleted or moved away while the desktop app served it") {
		t.Errorf("the agent's call after the deletion: isError %v, %q; want the hub deleted, named", res.IsError, res.Text)
	}
	// The page open is told, not handed the store's "no such file".
	if code, body := api("api/runs"); code != http.StatusGone || !strings.Contains(body, `"code":"hub_gone","message":"The hub folder was deleted. `+dir+` was deleted or moved away`) {
		t.Errorf("the console's runs after the deletion: %d %s; want 410 hub_gone saying it", code, body)
	}
	notices := len(d.mon.notes(callNote.serial, "The hub folder was deleted"))
	if err := d.menu(item).event(d.bus, "Runs…"); err != nil {
		t.Fatal(err)
	}
	d.waitFor("Runs… to raise the notice again", func() bool {
		return len(d.mon.notes(callNote.serial, "The hub folder was deleted")) == notices+1
	})
	time.Sleep(4 * time.Second) // a periodic check (3 s) passes
	if l := d.links(); len(l) != 1 {
		t.Errorf("a console page opened over the deleted hub: %q", l)
	}
	if _, err := os.Stat(d.home); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the hub's home is back (%v) before the person asked for a new hub", err)
	}

	// "Set up a new hub here", picked in dunst: the app starts again.
	if out, err := exec.Command("dunstctl", "context").CombinedOutput(); err != nil {
		t.Fatalf("dunstctl context: %v\n%s", err, out)
	}
	d.waitFor("the app to start again on a new hub", func() bool {
		// Each start logs it, on whichever port is free (another
		// app may hold 4790: "port 4790 is in use: serving MCP at …").
		return strings.Count(d.stderr.String(), `msg="serving MCP"`) == 2
	})
	if !strings.Contains(d.stderr.String(), "set up a new hub at "+dir+": starting again on it") {
		t.Errorf("the app does not say it set up a new hub:\n%s", d.stderr)
	}
	var again string
	d.waitFor("a new tray item", func() bool {
		if r := d.registered(); len(r) == 1 && r[0] != item {
			again = r[0]
		}
		return again != ""
	})
	d.waitFor("the new tray to show no call", func() bool {
		l := d.menu(again).labels()
		return len(l) > 1 && l[0] == "No pending calls" && l[1] == "—"
	})
	d.endpoint() // announced by the same process
	d.cli("hub", "exec", "return 1")
	if err := d.menu(again).event(d.bus, "Quit"); err != nil {
		t.Fatal(err)
	}
	if code := d.wait(); code != 0 {
		t.Fatalf("Quit: exit %d, want 0; stderr:\n%s", code, d.stderr)
	}
}
