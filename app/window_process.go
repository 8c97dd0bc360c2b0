package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/capabilities-sh/capabilities/app/screen"
)

// windowBinary is the window process's program, looked for beside the
// app's binary.
const windowBinary = "capabilities-window"

// windowProcess is the app's window: capabilities-window (app/window: Wails
// over WebKitGTK on Linux), run while a window is open and told what to
// show on its stdin. It starts when a screen is first shown and ends when
// the person closes the window or nothing waits any more: the app with its
// windows closed holds no webview (linking WebKit alone cost the app 55 MB
// of RSS; GTK, WebKit and WebKit's own processes live only while a window
// is up).
type windowProcess struct {
	bin   string // capabilities-window
	log   *slog.Logger
	pages windows // where the screens go when the window cannot run

	mu      sync.Mutex
	checked bool   // the window was tried once (capabilities-window --check)
	broken  string // why it cannot start here; "" when it can
	cmd     *exec.Cmd
	in      io.WriteCloser
	done    chan struct{} // closed when the process has exited
	screen  string        // the screen it shows
	auto    bool          // shown by the app itself, not the person
	// retried: a window that failed as it started was started again
	// (once, until one runs a while).
	retried bool
	// noTray: there is no tray, and the window is the one way to the app,
	// so it stays when nothing waits any more.
	noTray bool
}

// newWindows is the app's window where capabilities-window is installed
// beside the app, else pages in the browser.
func newWindows(ctx context.Context, o windowsOptions) windows {
	pg := newPages(ctx, o.hub, o.log, o.open)
	pg.gone = o.gone
	if self, err := os.Executable(); err == nil {
		bin := filepath.Join(filepath.Dir(self), windowBinary)
		if fi, err := os.Stat(bin); err == nil && !fi.IsDir() && fi.Mode().Perm()&0o111 != 0 {
			return &windowProcess{bin: bin, log: o.log, pages: pg}
		}
	}
	return pg
}

// Show shows a screen, starting the window's process if it is not running.
func (w *windowProcess) Show(name string, auto bool) error {
	if !screen.Valid(name) {
		return fmt.Errorf("showing the window: no screen %q", name)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.broken != "" {
		return w.pages.Show(name, auto)
	}
	if !w.checked {
		// Once: can the window start here (its libraries, GTK and
		// WebKitGTK, installed)? If not, the browser shows the screens.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		out, err := exec.CommandContext(ctx, w.bin, "--check").CombinedOutput()
		cancel()
		w.checked = true
		if err != nil {
			w.broken = fmt.Sprintf("%v: %s", err, out)
			w.log.Warn("the window cannot start here: the screens open in the browser", "window", w.bin, "err", w.broken)
			return w.pages.Show(name, auto)
		}
	}
	if w.cmd == nil {
		if err := w.start(); err != nil {
			return err
		}
	}
	w.screen, w.auto = name, auto
	return w.send(w.showLine())
}

// showLine tells the window what to show (w.mu held).
func (w *windowProcess) showLine() string {
	return "show " + strconv.Quote(w.screen) + " " + strconv.FormatBool(w.auto)
}

// start runs the window's process (w.mu held).
func (w *windowProcess) start() error {
	cmd := exec.Command(w.bin)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return fmt.Errorf("starting the window: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting the window: %w", err)
	}
	done := make(chan struct{})
	w.cmd, w.in, w.done = cmd, in, done
	w.log.Info("started the window", "pid", cmd.Process.Pid)
	started := time.Now()
	go func() {
		err := cmd.Wait()
		close(done)
		w.log.Info("the window closed", "pid", cmd.Process.Pid, "err", err)
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.cmd != cmd {
			return
		}
		w.cmd, w.in = nil, nil
		if time.Since(started) >= windowSettled {
			w.retried = false
			return
		}
		// It failed as it started (GTK could not open the display of a
		// loaded session, once in a while): once more, since it may be
		// the one way to the app (no tray, no notifications).
		if err != nil && !w.retried {
			w.retried = true
			if serr := w.start(); serr == nil {
				_ = w.send(w.showLine())
			}
		}
	}()
	return nil
}

// windowSettled is how long a window runs before its failing is no
// longer a failure to start.
const windowSettled = 10 * time.Second

// send writes one line to the window's process (w.mu held).
func (w *windowProcess) send(line string) error {
	if _, err := io.WriteString(w.in, line+"\n"); err != nil {
		return fmt.Errorf("telling the window %q: %w", line, err)
	}
	return nil
}

// Withdraw closes the window when it shows the pending calls, unless there
// is no tray: then it is the one way to the app, and it stays.
func (w *windowProcess) Withdraw() { w.closeIf(screen.Approvals, "withdrew the window") }

// hubGone closes the window whatever it shows once the hub's folder is
// gone: its process opened the hub itself, and every screen would fail on
// files that are not there (the tray and the notification say what
// happened). Without a tray it stays: it is the one way to the app.
func (w *windowProcess) hubGone() {
	w.closeIf(func(string) bool { return true }, "closed the window: the hub is gone")
}

// closeIf closes the window when the screen it shows passes shows, unless
// there is no tray.
func (w *windowProcess) closeIf(shows func(screen string) bool, why string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cmd == nil || !shows(w.screen) || w.noTray {
		return
	}
	w.log.Info(why)
	w.in.Close() // the process ends when its stdin does
	w.cmd, w.in = nil, nil
}

// NoTray shows the window: without a tray it is the way to the app.
func (w *windowProcess) NoTray() {
	w.mu.Lock()
	w.noTray = true
	w.mu.Unlock()
	if err := w.Show("", false); err != nil {
		w.log.Warn("showing the window", "err", err)
	}
}

// Close ends the window's process, if one runs.
func (w *windowProcess) Close() {
	w.pages.Close()
	w.mu.Lock()
	cmd, in, done := w.cmd, w.in, w.done
	w.cmd, w.in = nil, nil
	w.mu.Unlock()
	if cmd == nil {
		return
	}
	in.Close()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}
