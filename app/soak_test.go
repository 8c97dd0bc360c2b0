package app_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/capabilities-sh/capabilities/engine/model"
)

// soakCalls is how many pending calls the soak scenario raises and decides:
// APP_SOAK_CALLS, default 60 (the 1,000 of BENCHMARKS.md is
// APP_SOAK_CALLS=1000).
func soakCalls() int {
	if n, err := strconv.Atoi(os.Getenv("APP_SOAK_CALLS")); err == nil && n > 0 {
		return n
	}
	return 60
}

// proc is what the soak watches of the app's process.
type proc struct {
	rss     float64 // MB
	fds     int
	threads int
	windows int // X windows of the app's (its window process's)
	kids    int // the app's child processes (the window process, upstreams)
}

func (d *desktop) proc() proc {
	pid := strconv.Itoa(d.app.Process.Pid)
	var p proc
	p.rss = d.rss()
	if ents, err := os.ReadDir("/proc/" + pid + "/fd"); err == nil {
		p.fds = len(ents)
	}
	if b, err := os.ReadFile("/proc/" + pid + "/status"); err == nil {
		if m := regexp.MustCompile(`Threads:\s+(\d+)`).FindSubmatch(b); m != nil {
			p.threads, _ = strconv.Atoi(string(m[1]))
		}
	}
	out, _ := exec.Command("xdotool", "search", "--name", "^capabilities").Output()
	p.windows = len(strings.Fields(string(out)))
	out, _ = exec.Command("pgrep", "-P", pid).Output()
	p.kids = len(strings.Fields(string(out)))
	return p
}

// soakScenario, the "8 hours compressed": the app with its window; pending
// calls from another process raised and decided one after another, half
// in the notification (Deny through dunst's context menu), half in the
// approval window its default action opens (`d`). Each is decided with
// channel desktop, its notification closed and the window gone; at the end
// the app holds no more file descriptors, threads or X windows than after
// the first 20, and its RSS (the webview's own process apart) stays within
// 10 % of it.
func (d *desktop) soakScenario() {
	t := d.t
	d.startBin(filepath.Join(d.bins, "window", "capabilities-desktop"))
	d.trayItem()
	d.waitFor("the window to be hidden at launch", func() bool { return d.visible() == "" })
	// One real pending run, made by `hub exec`; the others are its record
	// again under new ids, written into runs/ as another process would.
	first := d.exec("awaiting_approval", `try { return await writer.record({item: "soak"}) } catch (e) { return "caught " + e.code }`)
	runs := filepath.Join(d.home, "hub", "runs")
	tmpl, err := os.ReadFile(filepath.Join(runs, first+".json"))
	if err != nil {
		t.Fatal(err)
	}
	n := soakCalls()
	var base proc
	var serial uint32
	t0 := time.Now()
	for i := range n {
		id := first
		if i > 0 {
			id = fmt.Sprintf("rsoak%015d", i)
			rec := bytes.ReplaceAll(tmpl, []byte(first), []byte(id))
			tmp := filepath.Join(runs, "."+id+".tmp")
			if err := os.WriteFile(tmp, rec, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, filepath.Join(runs, id+".json")); err != nil {
				t.Fatal(err)
			}
		}
		ti := time.Now()
		phase := func(what string) {
			if i < 6 && os.Getenv("APP_SOAK_TRACE") != "" {
				t.Logf("measured: call %d: %s at %.0f ms", i, what, ms(time.Since(ti)))
			}
		}
		note := d.mon.notifyAfter(t, "writer.record", serial)
		phase("notified")
		serial = note.serial
		if i%2 == 0 {
			if out, err := exec.Command("dunstctl", "context").CombinedOutput(); err != nil {
				t.Fatalf("dunstctl context: %v\n%s", err, out)
			}
		} else {
			if out, err := exec.Command("dunstctl", "action", "0").CombinedOutput(); err != nil {
				t.Fatalf("dunstctl action: %v\n%s", err, out)
			}
			d.waitFor("the approval window", func() bool { return d.visible() == "capabilities — Approvals" })
		}
		decided := func() bool {
			r := d.run(id)
			return len(r.Pending) == 1 && r.Pending[0].Decision != nil
		}
		d.waitFor(fmt.Sprintf("call %d to be decided", i), func() bool {
			if i%2 == 1 && !decided() && d.visible() != "" {
				if err := d.tryKey("d"); err != nil {
					t.Logf("call %d: pressing again: %v", i, err)
				}
			}
			// A key pressed while the call's shortcuts settle makes them
			// wait a second again (frontend/approval.js): the next press
			// comes after that.
			for range 60 {
				if decided() {
					return true
				}
				time.Sleep(25 * time.Millisecond)
			}
			return false
		})
		phase("decided")
		if got := d.run(id).Pending[0].Decision; got.Choice != model.ChoiceDeny || got.Channel != "desktop" {
			t.Fatalf("call %d: decided %s via %s, want deny via desktop", i, got.Choice, got.Channel)
		}
		d.waitFor(fmt.Sprintf("call %d's notification to be closed", i), func() bool { return d.mon.closed(note.id) })
		phase("closed")
		d.waitFor(fmt.Sprintf("call %d's window to go away", i), func() bool { return d.visible() == "" })
		phase("window gone")
		if i == 19 {
			time.Sleep(500 * time.Millisecond)
			base = d.proc()
		}
	}
	elapsed := time.Since(t0)
	time.Sleep(500 * time.Millisecond)
	end := d.proc()
	t.Logf("measured: soak of %d pending calls decided in %.1f s (%.0f ms each): RSS %.1f → %.1f MB, fds %d → %d, threads %d → %d, X windows %d → %d, child processes %d → %d",
		n, elapsed.Seconds(), ms(elapsed)/float64(n), base.rss, end.rss, base.fds, end.fds, base.threads, end.threads, base.windows, end.windows, base.kids, end.kids)
	if n > 20 {
		if end.fds > base.fds || end.windows > base.windows || end.threads > base.threads+2 || end.kids > base.kids {
			t.Errorf("after %d calls the app holds more than after 20: fds %d → %d, threads %d → %d, X windows %d → %d, child processes %d → %d",
				n, base.fds, end.fds, base.threads, end.threads, base.windows, end.windows, base.kids, end.kids)
		}
		if end.rss > base.rss*1.10 {
			t.Errorf("after %d calls the app's RSS grew from %.1f to %.1f MB (more than 10 %%)", n, base.rss, end.rss)
		}
	}
	if out, err := exec.Command("dunstctl", "count", "displayed").Output(); err != nil || strings.TrimSpace(string(out)) != "0" {
		t.Errorf("dunst still shows %s notifications (%v)", bytes.TrimSpace(out), err)
	}
}
