package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/capabilities-sh/capabilities/app/screen"
	"github.com/capabilities-sh/capabilities/engine/approval"
	"github.com/capabilities-sh/capabilities/engine/harness/watch"
	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/run"
	"github.com/capabilities-sh/capabilities/store"
	"github.com/fsnotify/fsnotify"
)

// App is the running desktop app. Its state belongs to the loop goroutine:
// the watcher's events, the notifications' signals and the tray's clicks
// all reach it through events, one at a time.
type App struct {
	log   *slog.Logger
	st    *store.File
	hub   *hub.Hub
	dir   string // the hub's directory
	ctx   context.Context
	win   windows   // the console's screens: the app's window, or pages in the browser
	notes *notifier // nil: no notification daemon (the approval screen opens instead)
	tray  *tray     // nil: no tray host

	pending map[string]*call  // run/call → the call waiting for a person
	byNote  map[uint32]string // notification id → run/call
	// moreNote is the notification that stands for the calls over the
	// budget of notifications (maxNotes), 0 when none is shown.
	moreNote uint32
	review   int      // new or changed tools not reviewed
	failing  []string // the sources whose last check failed

	endpoint string                 // the MCP endpoint served, "" when not serving
	watcher  *watch.Watcher         // the agents' configs; nil: not watched
	offers   map[uint32]watch.Offer // notification id → its import offer
	paused   bool                   // the hub is paused (hub/paused)
	sign     *signIns               // the connections waiting for a sign-in
	remote   *remotes               // the hosted hubs followed (hosted.go); nil: none
	// running are the runs recorded running, interrupted those of them
	// that no live process holds (track).
	running, interrupted map[string]bool

	// hubID is the ID of the hub the app opened; gone is set once
	// it is not there any more (read by the MCP server's goroutines too),
	// goneNote is its notification; vanished are the calls withdrawn as
	// their run's record disappeared, named if the hub turns out gone.
	hubID    string
	gone     atomic.Pointer[hubGone]
	goneNote uint32
	vanished []vanished
	// release gives up the app's name on the session bus and its lock
	// (nil: none), so that an app started on a new hub there runs.
	release func()
	stderr  io.Writer // nil: the log only
	restart bool      // Quit from "Set up a new hub here": Run returns ErrRestart

	events   chan func()
	quit     chan struct{}
	quitOnce sync.Once
	records  sync.WaitGroup // decisions being recorded; the store closes after them
}

// call is one pending call the app shows.
type call struct {
	run, id string
	address string
	// connection is the connection the call goes through, "" when the
	// source has none.
	connection string
	summary    string // the tool's first sentence
	args       string // what it would be called with, every field, shortened
	message    string // why it waits
	seq        int
	created    time.Time
	expires    time.Time // when it expires undecided, zero: never
	note       uint32    // its open notification, 0: none
	raised     bool      // it had its own notification (it is not raised again)
	notified   time.Time
}

func (c *call) key() string { return c.run + "/" + c.id }

// noteArgsBytes is how much of a call's arguments its notification shows:
// every field, long values shortened, so that "Allow once" is not picked
// blind.
const noteArgsBytes = 400

// togglePause pauses the hub, or resumes it (the tray's "Pause hub" /
// "Resume hub").
func (a *App) togglePause() {
	if err := a.hub.SetPaused(!a.paused); err != nil {
		a.log.Warn("pausing the hub", "err", err)
	}
	a.paused = a.hub.Paused()
	a.log.Info("the hub", "paused", a.paused)
	a.show()
	if !a.paused {
		go a.continuePaused()
	}
}

// continuePaused goes on with the runs that waited only for the pause.
func (a *App) continuePaused() {
	resumed, err := a.hub.ContinuePaused(a.ctx)
	if err != nil {
		a.log.Warn("resuming the runs that waited for the pause", "err", err)
	}
	for _, r := range resumed {
		a.log.Info("a run that waited for the pause went on", "run", r.RunID, "status", r.Status)
	}
}

// Quit ends the app (from the tray's Quit): Run returns nil.
func (a *App) Quit() { a.quitOnce.Do(func() { close(a.quit) }) }

// loop watches the store and runs the events until ctx ends or Quit.
func (a *App) loop(ctx context.Context) error {
	a.ctx = ctx
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watching the hub: %w", err)
	}
	defer w.Close()
	defer a.records.Wait()
	runs := filepath.Join(a.dir, string(store.Runs))
	// Records are replaced by rename: watch the directories, not the files.
	for _, k := range []store.Kind{store.Runs, store.Policies, store.Manifests, store.Sources, store.Connections} {
		if err := w.Add(filepath.Join(a.dir, string(k))); err != nil {
			return fmt.Errorf("watching the hub's %s: %w", k, err)
		}
	}
	// The hub's folder itself: the pause flag, set by `hub pause` too.
	if err := w.Add(a.dir); err != nil {
		return fmt.Errorf("watching the hub's folder: %w", err)
	}
	a.scan(ctx)
	a.countReview(ctx)
	a.checkSignIns(ctx)
	a.show()
	// A call that expires undecided is withdrawn when it does: nothing
	// writes its run then, and its notification would offer "Allow once"
	// on a call that can no longer be allowed.
	expiry := time.NewTimer(time.Hour)
	defer expiry.Stop()
	live := time.NewTicker(liveCheck)
	defer live.Stop()
	for {
		a.armExpiry(expiry)
		select {
		case <-live.C:
			// Nothing is written when the hub's folder goes with the
			// folders above it (or is moved): it is looked at here too.
			switch {
			case a.checkHub():
				a.show()
			case a.gone.Load() != nil:
			case len(a.running) > 0 && a.checkRunning(ctx):
				a.show()
			}
			a.forgetVanished()
		case <-expiry.C:
			now := time.Now()
			for _, c := range a.sorted() {
				if !c.expires.IsZero() && !now.Before(c.expires) && a.pending[c.key()] != nil {
					a.sync(ctx, c.run)
				}
			}
			a.show()
		case <-ctx.Done():
			a.withdrawAll()
			return nil
		case <-a.quit:
			a.withdrawAll()
			if a.restart {
				return ErrRestart
			}
			return nil
		case f := <-a.events:
			f()
		case err := <-w.Errors:
			if a.gone.Load() != nil {
				continue
			}
			// An overflowed queue lost events: read every run again.
			a.log.Warn("watching the hub", "err", err)
			a.scan(ctx)
			a.show()
		case ev := <-w.Events:
			// The hub's folder removed or emptied: its runs' records go
			// in the same burst, and their calls are lost, not decided.
			if a.gone.Load() != nil || a.checkHub() {
				for more := true; more; {
					select {
					case <-w.Events:
					default:
						more = false
					}
				}
				a.show()
				continue
			}
			// A burst of writes is one pass: each run read once.
			dirty, review := map[string]bool{}, false
			for more := true; more; {
				switch filepath.Dir(ev.Name) {
				case runs:
					if id, ok := runID(ev.Name); ok {
						dirty[id] = true
					}
				case a.dir:
					// Only the pause flag matters here.
				default:
					review = true
				}
				select {
				case ev = <-w.Events:
				default:
					more = false
				}
			}
			for id := range dirty {
				a.sync(ctx, id)
			}
			if review {
				a.countReview(ctx)
				a.checkSignIns(ctx)
			}
			a.paused = a.hub.Paused()
			a.show()
		}
	}
}

// armExpiry sets t to fire when the first pending call expires, or stops
// it when none will.
func (a *App) armExpiry(t *time.Timer) {
	var first time.Time
	for _, c := range a.pending {
		if !c.expires.IsZero() && (first.IsZero() || c.expires.Before(first)) {
			first = c.expires
		}
	}
	if first.IsZero() {
		t.Stop()
		return
	}
	t.Reset(max(time.Until(first), 0))
}

// runID is the run a file of runs/ records; journals and spares are not
// runs.
func runID(path string) (string, bool) {
	name := filepath.Base(path)
	id, ok := strings.CutSuffix(name, ".json")
	if !ok || store.ValidID(id) != nil {
		return "", false
	}
	return id, true
}

// scan reads every run (at start, and after lost events).
func (a *App) scan(ctx context.Context) {
	ids, err := a.st.List(ctx, store.Runs)
	if err != nil {
		a.log.Warn("listing runs", "err", err)
		return
	}
	seen := map[string]bool{}
	for _, id := range ids {
		seen[id] = true
		a.sync(ctx, id)
	}
	for _, c := range a.pending {
		if !seen[c.run] {
			a.withdraw(c)
		}
	}
}

// sync brings run id's pending calls in line with its record: a call that
// waits and is not shown is raised; a shown call that no longer waits
// (decided here or elsewhere, expired, the run gone) is withdrawn.
func (a *App) sync(ctx context.Context, id string) {
	var r model.Run
	err := a.st.Get(ctx, store.Runs, id, &r)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		a.log.Warn("reading a run", "run", id, "err", err)
		return
	}
	if err == nil {
		a.track(ctx, id, &r)
	} else {
		a.track(ctx, id, nil)
		if a.awaits(id) && a.checkHub() {
			// The record went with the hub: lose named its calls.
			return
		}
	}
	waiting := map[string]*model.Pending{}
	if err == nil && r.Status.Paused() {
		now := time.Now()
		for i := range r.Pending {
			p := &r.Pending[i]
			if p.AwaitsDecision() && (p.ExpiresAt.IsZero() || now.Before(p.ExpiresAt)) {
				waiting[p.ID] = p
			}
		}
	}
	for _, c := range a.pending {
		if c.run == id && waiting[c.id] == nil {
			if err != nil {
				a.vanished = append(a.vanished, vanished{at: time.Now(), call: lostCall(c)})
			}
			a.withdraw(c)
		}
	}
	var fresh []*call
	for _, p := range waiting {
		if a.pending[id+"/"+p.ID] != nil {
			continue
		}
		c := &call{run: id, id: p.ID, address: p.Address, connection: p.Connection, summary: p.Summary, message: p.Message, seq: p.Seq, created: r.UpdatedAt, expires: p.ExpiresAt}
		if len(p.Args) > 0 {
			c.args = string(run.PreviewArgs(a.hub.Scrubber().JSON(p.Args), noteArgsBytes))
		}
		a.pending[c.key()] = c
		fresh = append(fresh, c)
	}
	sort.Slice(fresh, func(i, j int) bool { return fresh[i].seq < fresh[j].seq })
	a.raise(fresh)
}

// awaits reports whether a call of run id is shown waiting.
func (a *App) awaits(id string) bool {
	for _, c := range a.pending {
		if c.run == id {
			return true
		}
	}
	return false
}

// forgetVanished forgets the calls whose run vanished over vanishWindow
// ago (the hub is still there: the runs were removed on their own).
func (a *App) forgetVanished() {
	now := time.Now()
	a.vanished = slices.DeleteFunc(a.vanished, func(v vanished) bool { return now.Sub(v.at) >= vanishWindow })
}

// raise shows new pending calls: a notification each, within the budget
// (fillNotes), and the approval window (once for the batch) when there is
// no notification daemon or the person asked for it in the settings.
func (a *App) raise(fresh []*call) {
	if len(fresh) == 0 {
		return
	}
	// The person's setting: the approval window comes to the front (and
	// takes the focus) when a call waits; else only a notification asks,
	// and a window opened for want of one comes up minimised.
	s, err := a.hub.Settings()
	if err != nil {
		a.log.Warn("reading the settings", "err", err)
	}
	if a.notes == nil || s.RaiseApprovals {
		if err := a.win.Show("", !s.RaiseApprovals); err != nil {
			a.log.Warn("opening the approval page", "err", err)
		}
	}
	a.fillNotes()
}

// maxNotes is how many pending calls have a notification of their own at
// once. Calls beyond it share one notification that says how many more
// wait and opens the approval window: code that pauses on one write after
// another cannot bury the screen in notifications, nor have one slipped in
// among many for an "Allow once" clicked in a hurry (I7: every channel has
// a budget, the person's attention too). A call gets its own notification
// when a place frees up (decided, dismissed), at most once.
const maxNotes = 3

// fillNotes raises the notifications of pending calls, oldest first, up to
// maxNotes shown at once, and shows, updates or closes the notification of
// the rest.
func (a *App) fillNotes() {
	if a.notes == nil {
		return
	}
	shown := 0
	for _, c := range a.pending {
		if c.note != 0 {
			shown++
		}
	}
	var more []*call
	for _, c := range a.sorted() {
		if c.raised {
			continue
		}
		if shown >= maxNotes {
			more = append(more, c)
			continue
		}
		c.raised = true
		id, err := a.notes.notify(c)
		if err != nil {
			a.log.Warn("raising a notification", "run", c.run, "call", c.id, "err", err)
			continue
		}
		shown++
		c.note, c.notified = id, time.Now()
		a.byNote[id] = c.key()
		a.log.Info("notified", "run", c.run, "call", c.id, "address", c.address, "notification", id)
	}
	if len(more) == 0 {
		if a.moreNote != 0 {
			a.notes.close(a.moreNote)
			a.moreNote = 0
		}
		return
	}
	var addrs []string
	for _, c := range more {
		addrs = append(addrs, c.address)
	}
	id, err := a.notes.more(a.moreNote, addrs)
	if err != nil {
		a.log.Warn("raising the notification of more pending calls", "calls", len(more), "err", err)
		return
	}
	a.moreNote = id
}

// withdraw forgets a call that no longer waits and closes its notification;
// the next call waiting gets its place.
func (a *App) withdraw(c *call) {
	a.forget(c)
	if len(a.pending) == 0 {
		a.win.Withdraw()
	}
	a.fillNotes()
}

// forget forgets a call and closes its notification.
func (a *App) forget(c *call) {
	delete(a.pending, c.key())
	if c.note != 0 {
		delete(a.byNote, c.note)
		if a.notes != nil {
			a.notes.close(c.note)
		}
		a.log.Info("withdrew the notification", "run", c.run, "call", c.id, "notification", c.note)
	}
}

// withdrawAll closes every notification of a pending call, and the one of
// the calls over the budget, as the app quits: no call gets a notification
// of its own on the way out (withdraw would raise the next one). The import
// offers and sign-ins are closed too: they are resident, and their actions
// would reach no one once the app is gone (a new app does not offer the
// same server again).
func (a *App) withdrawAll() {
	for _, c := range a.pending {
		a.forget(c)
	}
	a.withdrawHosted()
	if a.notes != nil {
		if a.moreNote != 0 {
			a.notes.close(a.moreNote)
		}
		for id := range a.offers {
			a.notes.close(id)
		}
		if a.sign != nil {
			for id := range a.sign.byNote {
				a.notes.close(id)
			}
		}
		if a.goneNote != 0 {
			a.notes.close(a.goneNote)
		}
	}
	a.moreNote, a.goneNote = 0, 0
	clear(a.offers)
	if a.sign != nil {
		clear(a.sign.byNote)
		clear(a.sign.shown)
	}
	a.win.Withdraw()
}

// act handles an action picked in a notification: once and deny are
// recorded as the person's decision (channel desktop); the default action
// opens the console.
func (a *App) act(note uint32, action string) {
	if note != 0 && note == a.goneNote {
		a.actGone(action)
		return
	}
	if o, ok := a.offers[note]; ok {
		a.actOffer(note, o, action)
		return
	}
	if a.actSignIn(note, action) || a.actHosted(note, action) {
		return
	}
	if note != 0 && note == a.moreNote {
		if err := a.win.Show("", false); err != nil {
			a.log.Warn("opening the approval page", "err", err)
		}
		return
	}
	k, ok := a.byNote[note]
	if !ok {
		return
	}
	c := a.pending[k]
	switch action {
	case "once", "deny":
		run, id, choice := c.run, c.id, model.Choice(action)
		a.records.Go(func() {
			_, err := approval.Record(a.ctx, a.st, approval.Request{RunID: run, CallID: id, Choice: choice, Channel: approval.ChannelDesktop})
			if err != nil {
				a.log.Warn("recording the decision from a notification", "run", run, "call", id, "err", err)
				return
			}
			a.log.Info("recorded the decision from a notification", "run", run, "call", id, "choice", choice)
		})
	case "default":
		// This call, open: not the oldest, which the person did not pick.
		if err := a.win.Show(screen.Call(c.run, c.id), false); err != nil {
			a.log.Warn("opening the approval page", "err", err)
		}
	}
}

// closed forgets a notification the server closed (dismissed, expired or
// acted on); its call stays pending in the tray.
func (a *App) closed(note uint32) {
	if note != 0 && note == a.goneNote {
		a.goneNote = 0
	}
	delete(a.offers, note)
	a.closedSignIn(note)
	a.closedHosted(note)
	if note != 0 && note == a.moreNote {
		a.moreNote = 0
	}
	if k, ok := a.byNote[note]; ok {
		delete(a.byNote, note)
		if c := a.pending[k]; c != nil {
			c.note = 0
		}
		a.fillNotes()
	}
}

// countReview counts the new or changed tools not reviewed yet, and finds
// the sources whose last check failed.
func (a *App) countReview(ctx context.Context) {
	a.hub.Invalidate()
	r, err := a.hub.PendingReview(ctx, "")
	if err != nil {
		a.log.Warn("counting the tools to review", "err", err)
		return
	}
	a.review = len(r.Items)
	recs, err := a.hub.Sources(ctx)
	if err != nil {
		a.log.Warn("reading the sources' health", "err", err)
		return
	}
	a.failing = a.failing[:0]
	for _, rec := range recs {
		if m := rec.Manifest; m != nil && m.Health == "error" {
			a.failing = append(a.failing, rec.Source.Namespace)
		}
	}
}

// sorted is the pending calls, oldest first.
func (a *App) sorted() []*call {
	out := make([]*call, 0, len(a.pending))
	for _, c := range a.pending {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].created.Equal(out[j].created) {
			return out[i].created.Before(out[j].created)
		}
		if out[i].run != out[j].run {
			return out[i].run < out[j].run
		}
		return out[i].seq < out[j].seq
	})
	return out
}

// show updates the tray.
func (a *App) show() {
	if a.tray != nil {
		a.tray.update(trayView{gone: a.gone.Load(), calls: a.sorted(), interrupted: a.interruptedRuns(), review: a.review, failing: a.failing, paused: a.paused, signIn: a.signInTitle()})
	}
}
