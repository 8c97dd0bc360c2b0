package app_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/google/go-cmp/cmp"
)

// offersScenario: a server written into Claude Code's ~/.claude.json in the
// session's HOME while the app runs → a notification offering it ("Claude
// Code added `linear` — add it to the hub?", actions Add and Not now) →
// "Add" picked in dunst's menu (pick-action.sh) → `capabilities hub list`
// shows the source, and the console opens at #review. A second server
// offered and answered "Not now" is not offered again when the config is
// written again (a third, new server is). Then "Start at
// login" (dbusmenu Event) writes $XDG_CONFIG_HOME/autostart/
// capabilities.desktop starting the app by its path and checks the item; a
// second click removes it and unchecks it. It logs write →
// offer (the budget is 2 s; never asserted).
//
// The watcher reads the configs as they are when it starts (not offered),
// and the app does not say when that is: the test writes a server with a
// new name until one is offered, each write waiting long enough for the
// offer of the one before.
func (d *desktop) offersScenario() {
	t := d.t
	d.start()
	item := d.trayItem()
	cfg := filepath.Join(d.work, ".claude.json")
	scripted := testenv.Scripted(t)
	var (
		name    string
		written time.Time
		found   note
	)
	for i := 1; found.summary == ""; i++ {
		if i > 10 {
			t.Fatalf("no import offer after %d servers written into %s; the app's stderr:\n%s", i-1, cfg, d.stderr)
		}
		name = fmt.Sprintf("linear%d", i)
		doc := map[string]any{"mcpServers": map[string]any{name: map[string]any{"command": scripted[0], "args": append(scripted[1:], "--name", name)}}}
		b, _ := json.MarshalIndent(doc, "", "  ")
		tmp := cfg + ".tmp"
		if err := os.WriteFile(tmp, b, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, cfg); err != nil { // as harnesses write: a rename over the file
			t.Fatal(err)
		}
		written = time.Now()
		deadline := time.Now().Add(testenv.Timeout(3 * time.Second))
		for time.Now().Before(deadline) {
			if n, ok := d.mon.find("added `"+name+"`", 0); ok {
				found = n
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	t.Logf("measured: server written into ~/.claude.json → import offer Notify %.1f ms", ms(found.at.Sub(written)))
	if diff := cmp.Diff("Claude Code added `"+name+"` — add it to the hub?", found.summary); diff != "" {
		t.Errorf("the offer's summary (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"add", "Add", "not-now", "Not now"}, found.actions); diff != "" {
		t.Errorf("the offer's actions (-want +got):\n%s", diff)
	}
	if out, err := exec.Command("dunstctl", "context").CombinedOutput(); err != nil {
		t.Fatalf("dunstctl context: %v\n%s", err, out)
	}
	d.waitFor("Add to add the source and open the console at #review", func() bool {
		l := d.links()
		return len(l) == 1 && strings.HasSuffix(l[0], "#review")
	})
	if got := d.sources(); !contains(got, name) {
		t.Fatalf("hub list shows %q after Add, want %s among them", got, name)
	}

	// Answered, the offer leaves the screen.
	d.waitFor("the offer answered Add to be closed", func() bool { return d.mon.closed(found.id) })

	// "Not now": the offer is declined for good — the config written again
	// with the declined server and a new one brings an offer for the new one
	// only.
	declined := name + "-declined"
	d.writeClaude(cfg, declined)
	offer := d.mon.notifyAfter(t, "added `"+declined+"`", found.serial)
	if err := os.WriteFile(filepath.Join(d.work, ".pick-action"), []byte("Not now"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("dunstctl", "context").CombinedOutput(); err != nil {
		t.Fatalf("dunstctl context: %v\n%s", err, out)
	}
	d.waitFor("Not now to close the offer", func() bool {
		out, err := exec.Command("dunstctl", "count", "displayed").Output()
		return err == nil && strings.TrimSpace(string(out)) == "0"
	})
	later := name + "-later"
	d.writeClaude(cfg, declined, later)
	d.mon.notifyAfter(t, "added `"+later+"`", offer.serial)
	if n, ok := d.mon.find("added `"+declined+"`", offer.serial); ok {
		t.Fatalf("the declined server was offered again: %q", n.summary)
	}
	if contains(d.sources(), declined) {
		t.Fatalf("Not now added %s to the hub", declined)
	}

	// "Start at login" writes the autostart entry (build/linux) starting
	// this app by its path (it is not on PATH here), and removes it.
	cfgHome := os.Getenv("XDG_CONFIG_HOME")
	if cfgHome == "" {
		cfgHome = filepath.Join(d.work, ".config")
	}
	entry := filepath.Join(cfgHome, "autostart", "capabilities.desktop")
	if d.menu(item).checked("Start at login") {
		t.Fatalf("Start at login is checked before any click")
	}
	if err := d.menu(item).event(d.bus, "Start at login"); err != nil {
		t.Fatal(err)
	}
	d.waitFor("Start at login to be checked", func() bool { return d.menu(item).checked("Start at login") })
	b, err := os.ReadFile(entry)
	if err != nil {
		t.Fatalf("Start at login wrote no autostart entry: %v", err)
	}
	// On this hub: it is not at the default place.
	exe := filepath.Join(d.bins, "capabilities-desktop")
	if !strings.Contains(string(b), "[Desktop Entry]") || !strings.Contains(string(b), "\nExec=env CAPABILITIES_HOME="+d.home+" "+exe+"\n") {
		t.Errorf("the autostart entry does not start %s on the hub at %s:\n%s", exe, d.home, b)
	}
	if err := d.menu(item).event(d.bus, "Start at login"); err != nil {
		t.Fatal(err)
	}
	d.waitFor("Start at login to be unchecked", func() bool { return !d.menu(item).checked("Start at login") })
	if _, err := os.Stat(entry); !os.IsNotExist(err) {
		t.Errorf("the autostart entry is still there after Start at login was turned off (%v)", err)
	}

	if err := d.app.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if code := d.wait(); code != 0 {
		t.Fatalf("SIGINT: exit %d, want 0; stderr:\n%s", code, d.stderr)
	}
}

// sources are the namespaces `hub list` shows.
func (d *desktop) sources() []string {
	d.t.Helper()
	var list struct {
		Sources []struct {
			Namespace string `json:"namespace"`
		} `json:"sources"`
	}
	out := d.cli("hub", "list", "--json")
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		d.t.Fatalf("hub list --json: %v\n%s", err, out)
	}
	var got []string
	for _, s := range list.Sources {
		got = append(got, s.Namespace)
	}
	return got
}

// writeClaude writes Claude Code's config with these servers (the scripted
// upstream under each name), as harnesses write: a rename over the file.
func (d *desktop) writeClaude(cfg string, names ...string) {
	d.t.Helper()
	scripted := testenv.Scripted(d.t)
	servers := map[string]any{}
	for _, name := range names {
		servers[name] = map[string]any{"command": scripted[0], "args": append(scripted[1:], "--name", name)}
	}
	b, _ := json.MarshalIndent(map[string]any{"mcpServers": servers}, "", "  ")
	tmp := cfg + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		d.t.Fatal(err)
	}
	if err := os.Rename(tmp, cfg); err != nil {
		d.t.Fatal(err)
	}
}
