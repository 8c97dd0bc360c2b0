package app

import (
	"errors"
	"fmt"
	"html"
	"strings"
	"time"

	"github.com/capabilities-sh/capabilities/engine/visible"
	"github.com/capabilities-sh/capabilities/store"
	"github.com/godbus/dbus/v5"
)

// ErrRestart is returned by Run when the person set up a new hub in place
// of the one deleted under the app: the app is to start again on it
// (capabilities-desktop re-executes itself).
var ErrRestart = errors.New("a new hub was set up: starting again")

// The hub's folder can go while the app runs (`rm -rf ~/.capabilities`, a
// cleanup tool, a move). Nothing the app holds open keeps it: every record
// is read and written by path. The app notices (the watcher's burst of
// removals, else its periodic check), says it (stderr, the tray, one
// notification naming the folder and the calls that were waiting), answers
// every MCP call with a precise error (mcpserver.Options.Unavailable), and
// offers a new hub at that place (then starts again on it) or Quit. It
// never sets one up by itself.

// hubGone is what happened to the app's hub.
type hubGone struct {
	dir  string
	what string // store.HubDeleted, store.HubReplaced
	at   time.Time
	tray bool // the app has a tray (its way back is there)
	// lost are the calls that were waiting for a person in it, as
	// "writer.record (run r…, call c1)": they went with it.
	lost []string
}

// replaced reports whether another hub is at the folder now.
func (g *hubGone) replaced() bool { return g.what == store.HubReplaced }

// Error is what an agent's call is answered with: what happened, since
// when, and what the person is offered. It names the folder only (nothing
// read from the hub: the model gets no secret from it).
func (g *hubGone) Error() string {
	at := g.at.UTC().Format("15:04:05")
	if g.replaced() {
		return fmt.Sprintf("the hub at %s %s while the desktop app served it (at %s UTC): nothing runs until the app starts again on the hub there now, and runs that waited for an approval went with the old one (they cannot be resumed); tell the person: the app's tray and its notification offer to start again on it",
			g.dir, g.what, at)
	}
	return fmt.Sprintf("the hub at %s %s while the desktop app served it (at %s UTC): nothing runs until there is a hub again, and runs that waited for an approval went with it (they cannot be resumed); tell the person: the app's tray and its notification offer to set up a new hub there (or they run `capabilities hub init` and start the app again)",
		g.dir, g.what, at)
}

// summary is the tray's status line and the notification's summary.
func (g *hubGone) summary() string {
	if g.replaced() {
		return "The hub folder was replaced"
	}
	return "The hub folder was deleted"
}

// tooltip is the tray's tooltip, after "capabilities: ".
func (g *hubGone) tooltip() string {
	if g.replaced() {
		return "the hub folder was replaced (" + g.dir + "): agents' calls fail until the app starts again on the new hub"
	}
	return "the hub folder was deleted (" + g.dir + "): agents' calls fail until there is a hub again"
}

// wayBack is the label of the action that starts the app again on a hub
// at the folder (set up then, or there now).
func (g *hubGone) wayBack() string {
	if g.replaced() {
		return "Start again on the new hub"
	}
	return "Set up a new hub here"
}

// body is the notification's body (and what stderr says): the folder, what
// went with it, the calls that were waiting, and the way back.
func (g *hubGone) body(actions bool) string {
	at := g.at.Local().Format("15:04:05")
	first := fmt.Sprintf("%s %s while the app ran (%s): the sources, policies, runs and secrets kept there went with it; agents' calls fail until there is a hub again.", g.dir, g.what, at)
	if g.replaced() {
		first = fmt.Sprintf("%s %s while the app ran (%s): the app's hub, its runs among them, is gone; agents' calls fail until the app starts again on the hub there now.", g.dir, g.what, at)
	}
	lines := []string{first}
	if n := len(g.lost); n > 0 {
		const listed = 5
		shown := g.lost[:min(n, listed)]
		l := fmt.Sprintf("%d %s waiting for your approval went with it: %s", n, plural(n, "call", "calls"), strings.Join(shown, "; "))
		if n > listed {
			l += fmt.Sprintf("; and %d more", n-listed)
		}
		lines = append(lines, l+".")
	}
	switch {
	case g.replaced() && actions:
		lines = append(lines, "Start again on the new hub, or Quit.")
	case g.replaced() && g.tray:
		lines = append(lines, "Start again on the new hub from the tray, or quit the app and start it again.")
	case g.replaced():
		lines = append(lines, "Quit the app (Ctrl-C or SIGTERM) and start it again.")
	case actions:
		lines = append(lines, "Set up a new hub there (the app starts again on it), or Quit.")
	case g.tray:
		lines = append(lines, "Set up a new hub there from the tray (the app starts again on it), or quit the app, run `capabilities hub init` and start it again.")
	default:
		lines = append(lines, "Quit the app (Ctrl-C or SIGTERM), run `capabilities hub init` and start it again.")
	}
	return strings.Join(lines, "\n")
}

// lostCall names a call that went with the hub.
func lostCall(c *call) string {
	return fmt.Sprintf("%s (run %s, call %s)", visible.Line(cut(c.address, noteAddressChars)), c.run, c.id)
}

// vanishWindow is how long a call whose run record disappeared is
// remembered: rm -rf removes runs/ before hub.json as often as after, and
// a call withdrawn then is named among those lost with the hub.
const vanishWindow = 10 * time.Second

// vanished is a call withdrawn because its run's record disappeared.
type vanished struct {
	at   time.Time
	call string // lostCall
}

// unavailable is the MCP server's Options.Unavailable: the hub gone, or
// nil. Called from the server's goroutines.
func (a *App) unavailable() error {
	if g := a.gone.Load(); g != nil {
		return g
	}
	return nil
}

// goneText is what the console's API answers once the hub is gone (the
// person reads it), "" while it is there. Called from the console's
// goroutines.
func (a *App) goneText() string {
	g := a.gone.Load()
	if g == nil {
		return ""
	}
	return g.summary() + ". " + strings.ReplaceAll(g.body(false), "\n", " ")
}

// checkHub notices the hub gone (once); it reports whether it just did.
func (a *App) checkHub() bool {
	if a.gone.Load() != nil {
		return false
	}
	what := store.Gone(a.dir, a.hubID)
	if what == "" {
		return false
	}
	a.lose(what)
	return true
}

// lose takes the app out of service for a hub that is gone: the calls
// waiting are named as lost (with the ones whose run vanished just
// before) and their notifications closed, as the import offers' and
// sign-ins'; the person is told; the app's name on the session bus is
// released, so that the app started on a new hub there is not sent here.
func (a *App) lose(what string) {
	g := &hubGone{dir: a.dir, what: what, at: time.Now(), tray: a.tray != nil}
	for _, v := range a.vanished {
		if g.at.Sub(v.at) < vanishWindow {
			g.lost = append(g.lost, v.call)
		}
	}
	a.vanished = nil
	for _, c := range a.sorted() {
		g.lost = append(g.lost, lostCall(c))
	}
	a.gone.Store(g)
	a.withdrawAll()
	if w, ok := a.win.(*windowProcess); ok {
		w.hubGone()
	}
	clear(a.running)
	clear(a.interrupted)
	a.review, a.failing = 0, nil
	if a.release != nil {
		a.release()
	}
	a.log.Warn("the hub is gone", "dir", a.dir, "what", what, "lost calls", len(g.lost))
	if a.stderr != nil {
		fmt.Fprintf(a.stderr, "capabilities-desktop: %s: %s\n", g.summary(), strings.ReplaceAll(g.body(false), "\n", " "))
	}
	a.tellGone()
}

// tellGone raises the notification of the hub gone, or raises it again
// (the person picked a console screen in the tray, which has no hub to
// show).
func (a *App) tellGone() {
	g := a.gone.Load()
	if g == nil || a.notes == nil {
		return
	}
	id, err := a.notes.gone(a.goneNote, g)
	if err != nil {
		a.log.Warn("raising the notification of the hub gone", "err", err)
		return
	}
	a.goneNote = id
}

// actGone handles an action picked in the notification of the hub gone.
func (a *App) actGone(action string) {
	switch action {
	case actionSetUp:
		a.setUp()
	case actionQuit:
		a.Quit()
	}
}

// setUp sets up a new hub at the app's folder (or keeps the one set up
// there since, as `hub init` does) and has the app start again on it.
func (a *App) setUp() {
	if a.gone.Load() == nil {
		return
	}
	f, created, err := store.Init(a.dir)
	if err != nil {
		a.log.Warn("setting up a new hub", "dir", a.dir, "err", err)
		a.tell("The new hub could not be set up", err.Error())
		return
	}
	f.Close()
	if a.stderr != nil {
		if created {
			fmt.Fprintf(a.stderr, "capabilities-desktop: set up a new hub at %s: starting again on it\n", a.dir)
		} else {
			fmt.Fprintf(a.stderr, "capabilities-desktop: a hub is at %s again: starting again on it\n", a.dir)
		}
	}
	a.restart = true
	a.Quit()
}

// unlessGone is f, unless the hub is gone: then the notification of it is
// raised again instead (a console screen, the pause, the agents' configs
// all need the hub).
func (a *App) unlessGone(f func()) func() {
	return func() {
		if a.gone.Load() != nil {
			a.tellGone()
			return
		}
		f()
	}
}

// Action keys of the notification of the hub gone.
const (
	actionSetUp = "setup"
	actionQuit  = "quit"
)

// gone raises, or replaces, the notification of the hub gone: critical and
// resident, with "Set up a new hub here" (wayBack) and "Quit" where the server shows
// actions.
func (n *notifier) gone(replaces uint32, g *hubGone) (uint32, error) {
	body := g.body(n.actions)
	if n.markup {
		body = html.EscapeString(body)
	}
	var actions []string
	if n.actions {
		actions = []string{actionSetUp, g.wayBack(), actionQuit, "Quit"}
	}
	hints := map[string]dbus.Variant{
		"urgency":  dbus.MakeVariant(byte(2)),
		"resident": dbus.MakeVariant(true),
	}
	var id uint32
	err := n.obj.Call(notifyName+".Notify", 0, "capabilities", replaces, "dialog-error", g.summary(), body, actions, hints, int32(0)).Store(&id)
	if err != nil {
		return 0, fmt.Errorf("raising a notification: %w", err)
	}
	return id, nil
}
