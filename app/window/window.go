//go:build desktop

package window

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/capabilities-sh/capabilities/app/screen"
	"github.com/capabilities-sh/capabilities/engine/approval"
	"github.com/capabilities-sh/capabilities/engine/console"
	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/internal/browser"
	"github.com/capabilities-sh/capabilities/store"
	"github.com/wailsapp/wails/v2"
	"github.com/wailsapp/wails/v2/pkg/logger"
	"github.com/wailsapp/wails/v2/pkg/options"
	"github.com/wailsapp/wails/v2/pkg/options/assetserver"
	"github.com/wailsapp/wails/v2/pkg/options/linux"
	wruntime "github.com/wailsapp/wails/v2/pkg/runtime"
)

// Run is the window process (capabilities-window, started by the desktop
// app while a window is open): one Wails window (WebKitGTK 4.1 on Linux, WebView2 on
// Windows, WKWebView on macOS) showing the console's screens, served by the
// console's handler over the shared store as Wails' asset server — no
// network between window and engine. Decisions made in it are recorded
// with channel desktop. The app tells it what to show on stdin; it ends
// when the person closes the window or the app closes its stdin. Call it
// on the main goroutine (with runtime.LockOSThread in init).
func Run(ctx context.Context, log *slog.Logger) error {
	if os.Getenv("DISPLAY") == "" && os.Getenv("WAYLAND_DISPLAY") == "" {
		return ErrNoDisplay
	}
	home, err := store.Home()
	if err != nil {
		return fmt.Errorf("opening the hub: %w", err)
	}
	st, err := store.Open(filepath.Join(home, "hub"))
	if err != nil {
		return fmt.Errorf("opening the hub: %w", err)
	}
	defer st.Close()
	h := hub.New(st, hub.Options{Logger: log, NoKeychain: os.Getenv("NO_KEYRING") != ""})
	defer h.Close()
	w := &window{log: log}
	// A sign-in's authorization page opens in the system's browser: the web
	// view opens no window of its own.
	con := console.New(h, console.Options{Logger: log, Channel: approval.ChannelDesktop, OpenURL: browser.Open})
	return wails.Run(&options.App{
		Title:              titles[""],
		Width:              760,
		Height:             680,
		MinWidth:           360,
		MinHeight:          420,
		StartHidden:        true, // shown once the app says which screen
		AssetServer:        &assetserver.Options{Handler: con},
		Logger:             slogLogger{log},
		LogLevel:           logger.WARNING,
		LogLevelProduction: logger.WARNING,
		OnDomReady:         func(context.Context) { w.domReady() },
		OnStartup: func(wctx context.Context) {
			w.ctx = wctx
			go func() {
				readCommands(os.Stdin, w.show)
				wruntime.Quit(wctx) // the app closed the window, or ended
			}()
			go func() {
				<-ctx.Done()
				wruntime.Quit(wctx)
			}()
		},
		Linux: &linux.Options{ProgramName: "capabilities", WebviewGpuPolicy: linux.WebviewGpuPolicyNever},
	})
}

// window is the window process's one Wails window.
type window struct {
	log *slog.Logger
	ctx context.Context // Wails' runtime context

	mu     sync.Mutex
	screen string // the screen asked for
	auto   bool   // the app opened it by itself
	asked  bool   // a screen was asked for
	ready  bool   // the page has loaded: it follows a change of its location's hash
}

// show shows a screen and brings the window up. A screen the app opens by
// itself (auto) comes up minimised, so it never takes the focus from what
// the person is typing. Before the page has loaded the window stays
// hidden (no blank window): domReady shows it.
func (w *window) show(name string, auto bool) {
	if !screen.Valid(name) {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.screen, w.auto, w.asked = name, auto, true
	if w.ready {
		w.present()
	}
}

// present brings the window up at w.screen (w.mu held, the page loaded).
func (w *window) present() {
	title, ok := titles[w.screen]
	if !ok { // one pending call
		title = titles[""]
	}
	wruntime.WindowSetTitle(w.ctx, title)
	wruntime.WindowExecJS(w.ctx, follow(w.screen))
	wruntime.WindowShow(w.ctx)
	if w.auto {
		wruntime.WindowMinimise(w.ctx)
	} else {
		wruntime.WindowUnminimise(w.ctx)
	}
	w.log.Info("showed the window", "screen", w.screen, "auto", w.auto)
}

// domReady is Wails' word that the page has loaded (after the first turns
// of the main loop, when Wails has hidden the window it maps at start):
// the screen asked for is shown.
func (w *window) domReady() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.ready = true
	if w.asked {
		w.present()
	}
}

// follow is the script that brings the page to a screen and reads it again
// (a hashchange even when the fragment is already the screen's).
func follow(screen string) string {
	return "if (location.hash.replace(/^#/, '') === " + strconv.Quote(screen) + ") window.dispatchEvent(new HashChangeEvent('hashchange')); " +
		"else location.hash = " + strconv.Quote("#"+screen) + ";"
}

// slogLogger is Wails' logger over the app's.
type slogLogger struct{ log *slog.Logger }

func (l slogLogger) Print(m string)   { l.log.Info(m, "from", "wails") }
func (l slogLogger) Trace(m string)   { l.log.Debug(m, "from", "wails") }
func (l slogLogger) Debug(m string)   { l.log.Debug(m, "from", "wails") }
func (l slogLogger) Info(m string)    { l.log.Info(m, "from", "wails") }
func (l slogLogger) Warning(m string) { l.log.Warn(m, "from", "wails") }
func (l slogLogger) Error(m string)   { l.log.Error(m, "from", "wails") }
func (l slogLogger) Fatal(m string)   { l.log.Error(m, "from", "wails") }

// ErrNoDisplay: there is no graphical session to show a window in.
var ErrNoDisplay = fmt.Errorf("no display: DISPLAY and WAYLAND_DISPLAY are unset")

// titles are the screens a window shows, with the window's title for each
// (what a window manager, and xdotool, see).
var titles = map[string]string{
	"":         "capabilities — Approvals",
	"review":   "capabilities — Review",
	"runs":     "capabilities — Runs",
	"sources":  "capabilities — Sources",
	"settings": "capabilities — Settings",
}

// readCommands reads the app's lines (`show SCREEN AUTO`, SCREEN a quoted
// string, AUTO true or false: app/window_process.go writes them) and
// returns at EOF: the app closed the window, or ended.
func readCommands(r io.Reader, show func(screen string, auto bool)) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		var screen string
		var auto bool
		if n, err := fmt.Sscanf(strings.TrimSpace(sc.Text()), "show %q %t", &screen, &auto); n == 2 && err == nil {
			show(screen, auto)
		}
	}
}
