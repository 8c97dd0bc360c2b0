//go:build desktop

package app

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"sync"

	"github.com/capabilities-sh/capabilities/engine/approval"
	"github.com/capabilities-sh/capabilities/engine/console"
	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/godbus/dbus/v5"
	"github.com/wailsapp/wails/v2"
	"github.com/wailsapp/wails/v2/pkg/logger"
	"github.com/wailsapp/wails/v2/pkg/options"
	"github.com/wailsapp/wails/v2/pkg/options/assetserver"
	"github.com/wailsapp/wails/v2/pkg/options/linux"
	wruntime "github.com/wailsapp/wails/v2/pkg/runtime"
)

// Windows says what the app shows its screens in.
const Windows = "its own window (Wails)"

// wailsShell runs Wails' main loop (GTK and WebKitGTK on Linux, WebView2 on
// Windows, WKWebView on macOS) on the calling goroutine and the app's body
// beside it. Its one window shows the console's screens, served by the
// console's handler as Wails' asset server: no network between the window
// and the engine.
type wailsShell struct{ opts shellOptions }

func newShell(opts shellOptions) shell { return wailsShell{opts} }

// instanceID names the app's single instance: one per hub and person.
func instanceID(dir string) string {
	sum := sha256.Sum256([]byte(dir))
	return "sh.capabilities.desktop." + hex.EncodeToString(sum[:6])
}

func (s wailsShell) run(ctx context.Context, body func(context.Context, func(*hub.Hub) windows) error) error {
	id := instanceID(s.opts.dir)
	if focusRunning(id) {
		fmt.Fprintln(s.opts.stderr, "capabilities-desktop: already running for this hub: showed its window")
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w := &window{log: s.opts.log, mounted: make(chan struct{})}
	var (
		bodyErr error
		started = make(chan struct{})
		done    = make(chan struct{})
	)
	err := wails.Run(&options.App{
		Title:              "capabilities",
		Width:              760,
		Height:             680,
		MinWidth:           360,
		MinHeight:          420,
		StartHidden:        true,
		HideWindowOnClose:  true, // closing the window keeps the app in the tray
		AssetServer:        &assetserver.Options{Handler: w},
		Logger:             slogLogger{s.opts.log},
		LogLevel:           logger.WARNING,
		LogLevelProduction: logger.WARNING,
		SingleInstanceLock: &options.SingleInstanceLock{
			UniqueId: id,
			// A second launch (one Focus above lost a race) shows this one.
			OnSecondInstanceLaunch: func(options.SecondInstanceData) { _ = w.Show("", false) },
		},
		OnDomReady: func(context.Context) { w.domReady() },
		OnStartup: func(wctx context.Context) {
			w.ctx = wctx
			close(started)
			go func() {
				defer close(done)
				bodyErr = body(ctx, func(h *hub.Hub) windows {
					w.mount(console.New(h, console.Options{Logger: s.opts.log, Channel: approval.ChannelDesktop}))
					return w
				})
				// The body ended (Quit, a signal, a failure): so does the window system.
				wruntime.Quit(wctx)
			}()
		},
		Linux: &linux.Options{ProgramName: "capabilities", WebviewGpuPolicy: linux.WebviewGpuPolicyNever},
	})
	cancel()
	select {
	case <-started:
		<-done
	default:
	}
	if err != nil {
		return fmt.Errorf("running the window system: %w", err)
	}
	return bodyErr
}

// focusRunning asks the app already running for this hub, if any, to show
// its window (the D-Bus name Wails' SingleInstanceLock owns), and says
// whether there was one.
func focusRunning(id string) bool {
	conn, err := dbus.ConnectSessionBus()
	if err != nil {
		return false
	}
	defer conn.Close()
	name := wailsInstanceName(id)
	if !hasOwner(conn, name) {
		return false
	}
	path := dbus.ObjectPath("/org/" + wailsInstanceSuffix(id) + "/SingleInstance")
	return conn.Object(name, path).Call(name+".SendMessage", 0, `{"args":[]}`).Err == nil
}

// wailsInstanceSuffix and wailsInstanceName are how Wails (v2, Linux) names
// a SingleInstanceLock's D-Bus object.
func wailsInstanceSuffix(id string) string {
	b := []byte("wails_app_" + id)
	for i, c := range b {
		if c == '-' || c == '.' {
			b[i] = '_'
		}
	}
	return string(b)
}

func wailsInstanceName(id string) string { return "org." + wailsInstanceSuffix(id) + ".SingleInstance" }

// window is the app's one Wails window: it shows one screen of the console
// at a time.
type window struct {
	log     *slog.Logger
	ctx     context.Context // Wails' runtime context
	handler http.Handler    // the console, once mounted
	mounted chan struct{}   // closed by mount

	mu     sync.Mutex
	screen string // the screen shown
	shown  bool
	ready  bool // the page has loaded: it follows a change of its location's hash
}

// domReady is Wails' word that the page has loaded: a screen asked for
// before then is shown now.
func (w *window) domReady() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.ready = true
	w.log.Info("the window's page is ready", "screen", w.screen)
	wruntime.WindowExecJS(w.ctx, follow(w.screen))
}

// follow is the script that brings the page to a screen and reads it again
// (a hashchange even when the fragment is already the screen's).
func follow(screen string) string {
	return "if (location.hash.replace(/^#/, '') === " + strconv.Quote(screen) + ") window.dispatchEvent(new HashChangeEvent('hashchange')); " +
		"else location.hash = " + strconv.Quote("#"+screen) + ";"
}

// mount serves the console in the window.
func (w *window) mount(h http.Handler) {
	w.handler = h
	close(w.mounted)
}

// ServeHTTP is Wails' asset server: the console, once the hub is open (the
// page the window loads at start waits for it).
func (w *window) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	select {
	case <-w.mounted:
		w.handler.ServeHTTP(rw, r)
	case <-r.Context().Done():
		http.Error(rw, "the hub did not open", http.StatusServiceUnavailable)
	}
}

// titles are the window's title per screen (what a window manager and
// xdotool see).
var titles = map[string]string{
	"":        "capabilities — Approvals",
	"review":  "capabilities — Review",
	"runs":    "capabilities — Runs",
	"sources": "capabilities — Sources",
}

// Show shows a screen in the window and brings it up. A screen the app
// opens by itself (auto) comes up minimised, so it never takes the focus
// from what the person is typing.
func (w *window) Show(screen string, auto bool) error {
	title, ok := titles[screen]
	if !ok {
		return fmt.Errorf("showing the window: no screen %q", screen)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	wruntime.WindowSetTitle(w.ctx, title)
	wruntime.WindowExecJS(w.ctx, follow(screen))
	wruntime.WindowShow(w.ctx)
	if auto && !w.shown {
		wruntime.WindowMinimise(w.ctx)
	} else {
		wruntime.WindowUnminimise(w.ctx)
	}
	w.screen, w.shown = screen, true
	w.log.Info("showed the window", "screen", screen, "auto", auto)
	return nil
}

// Withdraw hides the window when it shows the pending calls: nothing waits
// any more (decided here, in a notification, or elsewhere).
func (w *window) Withdraw() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.shown || w.screen != "" {
		return
	}
	wruntime.WindowHide(w.ctx)
	w.shown = false
	w.log.Info("withdrew the window")
}

// NoTray shows the window: without a tray it is the way to the app.
func (w *window) NoTray() {
	if err := w.Show("", false); err != nil {
		w.log.Warn("showing the window", "err", err)
	}
}

// Close does nothing: the window goes with Wails' main loop.
func (w *window) Close() {}

// slogLogger is Wails' logger over the app's.
type slogLogger struct{ log *slog.Logger }

func (l slogLogger) Print(m string)   { l.log.Info(m, "from", "wails") }
func (l slogLogger) Trace(m string)   { l.log.Debug(m, "from", "wails") }
func (l slogLogger) Debug(m string)   { l.log.Debug(m, "from", "wails") }
func (l slogLogger) Info(m string)    { l.log.Info(m, "from", "wails") }
func (l slogLogger) Warning(m string) { l.log.Warn(m, "from", "wails") }
func (l slogLogger) Error(m string)   { l.log.Error(m, "from", "wails") }
func (l slogLogger) Fatal(m string)   { l.log.Error(m, "from", "wails") }
