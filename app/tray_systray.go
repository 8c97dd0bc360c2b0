//go:build !darwin || cgo

package app

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"net/url"
	"strings"

	"fyne.io/systray"
)

// slots is how many pending calls the menu lists one by one; the last slot
// says how many more there are.
const slots = 8

// tray is the app's tray item (fyne.io/systray: a StatusNotifierItem with a
// dbusmenu on Linux, pure Go over D-Bus). Its menu: the pending calls (a
// count, then one item per call, each opening the console), "Resume or
// cancel N interrupted runs…" while runs whose process died wait (the
// Approvals screen), "Sign in to
// <namespace>…" while a connection needs a sign-in (the Sources screen), "Review N new or
// changed tools", "Runs…", "Sources…", "Settings…", "Connect agents…", "Pause hub" (or "Resume hub"),
// where MCP is served, "Open hub folder", "Quit". Once the hub's folder is
// gone, the first item says so and "Set up a new hub here" follows it
// (gone.go); the items that need the hub raise its notification again.
type tray struct {
	end      func()
	endpoint string // host:port of the MCP endpoint, "" when not serving
	status   *systray.MenuItem
	calls    [slots]*systray.MenuItem
	review   *systray.MenuItem
	signIn   *systray.MenuItem // hidden while no connection needs a sign-in
	stopped  *systray.MenuItem // the interrupted runs; hidden while there are none
	sources  *systray.MenuItem
	pause    *systray.MenuItem
	login    *systray.MenuItem // nil where start at login is not built
	setUp    *systray.MenuItem // "Set up a new hub here", shown once the hub is gone
	shown    string            // the icon shown: "idle", "pending", "failing" or "paused"
}

// startTray registers the tray item; its clicks reach the loop as events.
func startTray(events chan<- func(), a *App) (*tray, error) {
	t := &tray{endpoint: hostPort(a.endpoint)}
	ready := make(chan struct{})
	start, end := systray.RunWithExternalLoop(func() {
		systray.SetIcon(icons["idle"])
		t.shown = "idle"
		systray.SetTitle("capabilities")
		systray.SetTooltip(t.tooltip("idle"))
		t.status = systray.AddMenuItem("No pending calls", "Calls waiting for your decision")
		t.status.Disable()
		t.setUp = systray.AddMenuItem("Set up a new hub here", "Set up a new hub at "+a.dir+" (or take the one there now) and start the app again on it")
		t.setUp.Hide()
		on(t.setUp, events, a.setUp)
		for i := range t.calls {
			t.calls[i] = systray.AddMenuItem("", "Open the call's approval in the console")
			t.calls[i].Hide()
			on(t.calls[i], events, a.unlessGone(func() { a.openCall(i) }))
		}
		t.stopped = systray.AddMenuItem("", "Runs whose process stopped (killed, crashed) while they ran: resume or cancel them on the Approvals screen")
		t.stopped.Hide()
		on(t.stopped, events, a.unlessGone(func() { a.openPage("") }))
		t.signIn = systray.AddMenuItem("Sign in…", "Sign in to the sources that ask for it, on the Sources screen")
		t.signIn.Hide()
		on(t.signIn, events, a.unlessGone(func() { a.openPage("sources") }))
		systray.AddSeparator()
		t.review = systray.AddMenuItem("Review new or changed tools", "Review the tools that are new or changed since you last looked")
		on(t.review, events, a.unlessGone(func() { a.openPage("review") }))
		on(systray.AddMenuItem("Runs…", "The runs and their calls"), events, a.unlessGone(func() { a.openPage("runs") }))
		t.sources = systray.AddMenuItem("Sources…", "The hub's MCP servers")
		on(t.sources, events, a.unlessGone(func() { a.openPage("sources") }))
		on(systray.AddMenuItem("Settings…", "Bring approvals to the front, pause the hub"), events, a.unlessGone(func() { a.openPage("settings") }))
		on(systray.AddMenuItem("Connect agents…", "Write one capabilities entry into each agent's MCP config (capabilities rollback undoes it)"), events, a.unlessGone(a.connectAgents))
		systray.AddSeparator()
		t.pause = systray.AddMenuItem("Pause hub", "Paused: every call asks, nothing runs unseen")
		on(t.pause, events, a.unlessGone(a.togglePause))
		serving := "Not serving MCP"
		if t.endpoint != "" {
			serving = "Serving MCP at " + t.endpoint
		}
		systray.AddMenuItem(serving, "Where agents reach the hub (announced in the hub's endpoint.json)").Disable()
		if loginSupported() {
			t.login = systray.AddMenuItemCheckbox("Start at login", "Start the desktop app when you log in", startsAtLogin())
			on(t.login, events, a.toggleLogin)
		}
		systray.AddSeparator()
		on(systray.AddMenuItem("Open hub folder", a.dir), events, a.unlessGone(func() {
			if err := openFolder(a.dir); err != nil {
				a.log.Warn("opening the hub folder", "err", err)
			}
		}))
		on(systray.AddMenuItem("Quit", "Quit the desktop app"), events, a.Quit)
		close(ready)
	}, nil)
	start()
	<-ready
	t.end = end
	return t, nil
}

// on runs f in the loop each time item is clicked.
func on(item *systray.MenuItem, events chan<- func(), f func()) {
	go func() {
		for range item.ClickedCh {
			events <- f
		}
	}()
}

// update shows the pending calls, the review count, the sources failing
// and the pause. The icon: paused, else calls pending, else a source
// failing, else idle.
func (t *tray) update(v trayView) {
	if v.gone != nil {
		t.lost(v.gone)
		return
	}
	t.setUp.Hide()
	calls := v.calls
	state := "idle"
	switch n := len(calls); n {
	case 0:
		t.status.SetTitle("No pending calls")
	default:
		state = "pending"
		t.status.SetTitle(fmt.Sprintf("%d pending %s", n, plural(n, "call", "calls")))
	}
	tip := state
	if state == "pending" {
		tip = fmt.Sprintf("%d pending", len(calls))
	}
	if n := len(v.interrupted); n > 0 {
		// Something waits for the person: the icon says so.
		if state == "idle" {
			state, tip = "pending", ""
		} else {
			tip += "; "
		}
		tip += fmt.Sprintf("%d %s interrupted", n, plural(n, "run", "runs"))
		t.stopped.SetTitle(fmt.Sprintf("Resume or cancel %d interrupted %s…", n, plural(n, "run", "runs")))
		t.stopped.Show()
	} else {
		t.stopped.Hide()
	}
	if n := len(v.failing); n > 0 {
		if state == "idle" {
			state, tip = "failing", ""
		} else {
			tip += "; "
		}
		tip += fmt.Sprintf("%d %s failing: %s", n, plural(n, "source", "sources"), strings.Join(v.failing, ", "))
		t.sources.SetTitle(fmt.Sprintf("Sources… (%d failing)", n))
	} else {
		t.sources.SetTitle("Sources…")
	}
	if v.paused {
		state = "paused"
		tip = "paused, every call asks; " + tip
		t.pause.SetTitle("Resume hub")
	} else {
		t.pause.SetTitle("Pause hub")
	}
	systray.SetTooltip(t.tooltip(tip))
	if state != t.shown {
		systray.SetIcon(icons[state])
		t.shown = state
	}
	for i, item := range t.calls {
		switch {
		case i == slots-1 && len(calls) > slots:
			item.SetTitle(fmt.Sprintf("… and %d more", len(calls)-slots+1))
			item.Show()
		case i < len(calls):
			item.SetTitle(fmt.Sprintf("%s (run %s)", noteTitle(calls[i]), calls[i].run))
			item.Show()
		default:
			item.Hide()
		}
	}
	if v.signIn != "" {
		t.signIn.SetTitle(v.signIn)
		t.signIn.Show()
	} else {
		t.signIn.Hide()
	}
	if review := v.review; review > 0 {
		t.review.SetTitle(fmt.Sprintf("Review %d new or changed %s", review, plural(review, "tool", "tools")))
	} else {
		t.review.SetTitle("Review new or changed tools")
	}
}

// lost shows the hub gone: the status says so and names the folder, "Set
// up a new hub here" comes under it, the calls and offers go; the icon is
// the failing one.
func (t *tray) lost(g *hubGone) {
	t.status.SetTitle(g.summary() + ": " + g.dir)
	t.setUp.SetTitle(g.wayBack())
	t.setUp.Show()
	for _, item := range t.calls {
		item.Hide()
	}
	t.stopped.Hide()
	t.signIn.Hide()
	t.review.SetTitle("Review new or changed tools")
	t.sources.SetTitle("Sources…")
	systray.SetTooltip("capabilities: " + g.tooltip())
	if t.shown != "failing" {
		systray.SetIcon(icons["failing"])
		t.shown = "failing"
	}
}

// showLogin checks or unchecks "Start at login".
func (t *tray) showLogin(on bool) {
	if t.login == nil {
		return
	}
	if on {
		t.login.Check()
	} else {
		t.login.Uncheck()
	}
}

// tooltip is the tray's tooltip for a state, with where MCP is served.
func (t *tray) tooltip(state string) string {
	if t.endpoint == "" {
		return "capabilities: " + state + " (not serving MCP)"
	}
	return "capabilities: " + state + " (MCP at " + t.endpoint + ")"
}

// hostPort is the host:port of an endpoint URL.
func hostPort(endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil {
		return ""
	}
	return u.Host
}

// icons are the tray's icons, drawn here (a ring; filled amber with a dot
// when calls wait; red with a dot when a source fails; grey with a dot
// while paused), so no image file ships
// with the binary.
var icons = map[string][]byte{"idle": drawIcon("idle"), "pending": drawIcon("pending"), "failing": drawIcon("failing"), "paused": drawIcon("paused")}

func drawIcon(state string) []byte {
	const size = 32
	img := image.NewNRGBA(image.Rect(0, 0, size, size))
	ring := color.NRGBA{0x3b, 0x6e, 0xa5, 0xff}
	fill := color.NRGBA{0, 0, 0, 0}
	pending := state != "idle"
	switch state {
	case "pending":
		ring = color.NRGBA{0xd9, 0x7a, 0x00, 0xff}
		fill = color.NRGBA{0xff, 0xc1, 0x4d, 0xff}
	case "failing":
		ring = color.NRGBA{0xb3, 0x26, 0x1e, 0xff}
		fill = color.NRGBA{0xf4, 0xb4, 0xae, 0xff}
	case "paused":
		ring = color.NRGBA{0x70, 0x70, 0x70, 0xff}
		fill = color.NRGBA{0xc8, 0xc8, 0xc8, 0xff}
	}
	for y := range size {
		for x := range size {
			dx, dy := float64(x)-15.5, float64(y)-15.5
			d := dx*dx + dy*dy
			switch {
			case d <= 15*15 && d >= 11*11:
				img.SetNRGBA(x, y, ring)
			case d < 11*11 && pending && d <= 4*4:
				img.SetNRGBA(x, y, ring)
			case d < 11*11:
				img.SetNRGBA(x, y, fill)
			}
		}
	}
	var b bytes.Buffer
	_ = png.Encode(&b, img)
	return b.Bytes()
}
