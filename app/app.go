// Package app is the desktop app: it lives in the tray, watches the shared
// store's runs/ for calls waiting for a person (from any process: `hub
// exec`, an agent's `serve --stdio`), raises one native notification per
// pending call, records a decision made in a notification (channel
// desktop), withdraws a notification and the approval window when the call
// is decided elsewhere, and shows the console's screens. Built with the
// desktop tag (scripts/setup.sh: -tags desktop,production,webkit2_41), the
// screens are in the app's own Wails window, served by the console's
// handler as Wails' asset server; without it (the pure-Go build), in the
// browser on loopback. It serves the hub's MCP endpoint on 127.0.0.1:4790
// (or the next free port) and announces it, so agents' `serve --stdio`
// relay to it; offers to import a server an agent's config gained; pauses
// and resumes the hub; and turns "Start at login" on and off. It notices
// its hub's folder deleted or replaced under it (gone.go), and runs once
// per hub (instance.go).
package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/capabilities-sh/capabilities/engine/harness/watch"
	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/mcpserver"
	"github.com/capabilities-sh/capabilities/engine/secret"
	"github.com/capabilities-sh/capabilities/store"
	"github.com/godbus/dbus/v5"
)

// ErrNoDisplay is returned by Run when there is no graphical session.
var ErrNoDisplay = errors.New("no display")

// Options configure Run.
type Options struct {
	// Logger receives the app's log (slog to stderr); nil discards it.
	Logger *slog.Logger
	// Stderr is where the app says what a person must know: a piece of
	// the desktop it runs without. Nil: os.Stderr.
	Stderr io.Writer
	// Open hands a link to the browser; nil: CAPABILITIES_BROWSER, else
	// $BROWSER, else the system's opener (xdg-open, open).
	Open func(link string) error
	// Port is where the hub's MCP endpoint is served on 127.0.0.1 (taken:
	// the next free one); 0 is DefaultPort.
	Port int
}

// CheckDisplay says whether a graphical session is there.
func CheckDisplay() error {
	if os.Getenv("DISPLAY") == "" && os.Getenv("WAYLAND_DISPLAY") == "" {
		return fmt.Errorf("%w: the desktop app needs a graphical session (DISPLAY or WAYLAND_DISPLAY is unset); run the hub without it with `capabilities hub serve`", ErrNoDisplay)
	}
	return nil
}

// Run runs the app until ctx ends or the person quits from the tray. It
// opens the hub at $CAPABILITIES_HOME/hub (as the CLI does) and closes it
// before returning; a nil error is a clean quit, ErrRestart a quit to
// start again on a new hub set up in place of one deleted.
func Run(ctx context.Context, opts Options) error {
	if err := CheckDisplay(); err != nil {
		return err
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	stderr := opts.Stderr
	if stderr == nil {
		stderr = os.Stderr
	}
	home, err := store.Home()
	if err != nil {
		return fmt.Errorf("opening the hub: %w", err)
	}
	dir := filepath.Join(home, "hub")
	st, err := store.Open(dir)
	if err != nil {
		// store.Open says what is wrong and where ("opening the hub: no
		// hub here at …; run `capabilities hub init` first", a corrupt
		// hub.json and how to fix it), as the CLI prints it: init is no
		// advice for a hub that exists.
		return err
	}
	defer st.Close()
	h := hub.New(st, hub.Options{Logger: log, NoKeychain: os.Getenv("NO_KEYRING") != ""})
	defer h.Close()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	a := &App{
		log:     log,
		st:      st,
		hub:     h,
		dir:     dir,
		pending: map[string]*call{},
		byNote:  map[uint32]string{},
		offers:  map[uint32]watch.Offer{},
		events:  make(chan func(), 64),
		quit:    make(chan struct{}),
		stderr:  stderr,
		// The hub deleted, moved or replaced while the app runs is
		// noticed (gone.go).
		hubID: st.Hub().ID,
	}
	a.win = newWindows(ctx, windowsOptions{hub: h, log: log, open: opts.Open, gone: a.goneText})
	defer a.win.Close()

	// Without a bus to find, none is started (godbus's dbus-launch would
	// leave a dbus-daemon behind).
	var conn *dbus.Conn
	err = errors.New("DBUS_SESSION_BUS_ADDRESS is not set and /run/user/<uid>/bus does not exist")
	if secret.SessionBusKnown() {
		conn, err = dbus.ConnectSessionBus()
	}
	if err != nil {
		fmt.Fprintf(stderr, "capabilities-desktop: no D-Bus session bus (%v): no notifications; pending calls open the approval screen instead\n", err)
	} else {
		defer conn.Close()
		// One app per hub: a second launch shows this one's window.
		err := claimInstance(conn, dir, func() {
			select {
			case a.events <- func() { a.openPage("") }:
			case <-ctx.Done():
			}
		})
		if errors.Is(err, errRunning) {
			fmt.Fprintln(stderr, "capabilities-desktop:", err)
			return nil
		} else if err != nil {
			log.Warn("one app per hub", "err", err)
		} else {
			// The hub gone, the app started on a new one there is not
			// sent to this one.
			a.release = func() { _, _ = conn.ReleaseName(instanceName(dir)) }
		}
	}
	// One app per hub without a session bus too (or on another one): the
	// bus's name above hands a second launch over to the first; this lock
	// stops one that could not reach it.
	unlock, err := lockApp(dir)
	if err != nil {
		return err
	}
	defer unlock()
	if release := a.release; release != nil {
		a.release = func() { release(); unlock() }
	} else {
		a.release = unlock
	}
	if conn != nil {
		n, err := newNotifier(conn, a.events, a)
		switch {
		case err != nil:
			fmt.Fprintf(stderr, "capabilities-desktop: notifications are unavailable (%v): pending calls open the approval screen instead\n", err)
		case n == nil:
			fmt.Fprintln(stderr, "capabilities-desktop: no notification daemon on the session bus: pending calls open the approval screen instead (the app's window, or the page in the browser where it has none)")
		default:
			a.notes = n
			log.Info("notifications", "actions", n.actions)
		}
	}
	// The hub's MCP endpoint: agents' `serve --stdio` relay here.
	port := opts.Port
	if port == 0 {
		port = DefaultPort
	}
	if ep, stop, err := a.serveMCP(ctx, port); err != nil {
		fmt.Fprintf(stderr, "capabilities-desktop: not serving MCP (%v): each agent's `capabilities hub serve --stdio` runs its own engine\n", err)
	} else {
		defer stop()
		a.endpoint = ep
		if want := fmt.Sprintf("127.0.0.1:%d", port); !strings.Contains(ep, want+"/") {
			fmt.Fprintf(stderr, "capabilities-desktop: port %d is in use: serving MCP at %s instead (announced in %s)\n", port, ep, filepath.Join(dir, "endpoint.json"))
		} else {
			fmt.Fprintf(stderr, "capabilities-desktop: serving MCP at %s (bearer token in %s)\n", ep, filepath.Join(dir, mcpserver.TokenFile))
		}
	}
	a.paused = h.Paused()
	// A keychain that is locked, missing or hung: the hub keeps secrets in
	// its fallback file, and the person is told where.
	a.records.Go(func() {
		if k, ok := h.Secrets().(interface{ Status() secret.Status }); ok {
			if s := k.Status(); s.Backend == secret.BackendFile {
				fmt.Fprintf(stderr, "capabilities-desktop: secrets are kept in %s (mode 600), not in the OS keychain (%s); they move into the keychain when it is back and you store them again\n", s.File, s.Reason)
			}
		}
	})
	// The hosted hubs signed in to with `hub login`: their calls are
	// raised here too (hosted.go).
	a.startHosted(ctx, opts.Open)
	// The agents' configs: a server added to one is offered for import.
	wctx, wcancel := context.WithCancel(ctx)
	if wait, err := a.watchHarnesses(wctx); err != nil {
		wcancel()
		fmt.Fprintf(stderr, "capabilities-desktop: not watching the agents' configs (%v): import new servers with `capabilities hub import`\n", err)
	} else {
		defer func() { wcancel(); wait() }()
	}
	// On Linux and the BSDs the tray is a StatusNotifierItem: it needs a
	// tray host (StatusNotifierWatcher) on the session bus.
	freedesktop := runtime.GOOS != "darwin" && runtime.GOOS != "windows"
	if freedesktop && (conn == nil || !hasOwner(conn, watcherName)) {
		fmt.Fprintln(stderr, "capabilities-desktop: the tray is unavailable (no StatusNotifierWatcher on the session bus): running without it; stop the app with Ctrl-C or SIGTERM")
		a.win.NoTray()
	} else if t, err := startTray(a.events, a); err != nil {
		fmt.Fprintf(stderr, "capabilities-desktop: the tray is unavailable (%v): running without it; stop the app with Ctrl-C or SIGTERM\n", err)
		a.win.NoTray()
	} else {
		a.tray = t
		defer t.end()
	}
	return a.loop(ctx)
}

// hasOwner reports whether a name has an owner on the bus.
func hasOwner(conn *dbus.Conn, name string) bool {
	var ok bool
	if err := conn.BusObject().Call("org.freedesktop.DBus.NameHasOwner", 0, name).Store(&ok); err != nil {
		return false
	}
	return ok
}
