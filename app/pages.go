package app

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/capabilities-sh/capabilities/engine/approval"
	"github.com/capabilities-sh/capabilities/engine/console"
	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/internal/browser"
)

// pages serves the console on loopback behind a Guard (started on first
// use, again after its 24 h expire) and opens it in the browser with a
// one-time link per opening. Decisions made there are recorded with channel
// desktop. Where capabilities-window is installed beside the app, the
// screens are in the app's own window instead (window_process.go).
type pages struct {
	ctx  context.Context
	hub  *hub.Hub
	log  *slog.Logger
	open func(link string) error
	gone func() string // nil: the hub is never gone (windowsOptions.gone)

	mu     sync.Mutex
	guard  *console.Guard
	stop   context.CancelFunc
	served chan struct{}
}

func newPages(ctx context.Context, h *hub.Hub, log *slog.Logger, open func(string) error) *pages {
	if open == nil {
		open = browser.Open
	}
	return &pages{ctx: ctx, hub: h, log: log, open: open}
}

// Show opens the console at a screen: "" (the pending calls), "review",
// "runs", "sources".
func (p *pages) Show(screen string, _ bool) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	g, err := p.console()
	if err != nil {
		return err
	}
	link, err := g.Link()
	if err != nil {
		return fmt.Errorf("opening the console: %w", err)
	}
	if screen != "" {
		link += "#" + screen
	}
	if err := p.open(link); err != nil {
		return err
	}
	p.log.Info("opened the console in the browser", "screen", screen)
	return nil
}

func (p *pages) console() (*console.Guard, error) {
	if p.guard != nil && time.Now().Before(p.guard.Expires()) {
		return p.guard, nil
	}
	if p.stop != nil {
		p.stop()
		<-p.served
		p.guard, p.stop = nil, nil
	}
	ln, err := console.Listen("127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("starting the console: %w", err)
	}
	g, err := console.NewGuard(goneAPI(console.New(p.hub, console.Options{Logger: p.log, Channel: approval.ChannelDesktop}), p.gone), ln.Addr().String(), console.GuardOptions{Logger: p.log})
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("starting the console: %w", err)
	}
	ctx, stop := context.WithDeadline(p.ctx, g.Expires())
	served := make(chan struct{})
	go func() {
		defer close(served)
		if err := console.Serve(ctx, ln, g); err != nil {
			p.log.Warn("the console stopped", "err", err)
		}
	}()
	p.guard, p.stop, p.served = g, stop, served
	p.log.Info("serving the console on loopback", "port", ln.Addr().(*net.TCPAddr).Port)
	return g, nil
}

// Withdraw does nothing: a page in the browser is the person's to close.
func (p *pages) Withdraw() {}

// NoTray does nothing: a pending call opens its page.
func (p *pages) NoTray() {}

// Close stops the console, if it was started.
func (p *pages) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stop != nil {
		p.stop()
		<-p.served
		p.guard, p.stop = nil, nil
	}
}

// goneAPI answers the console's API with what happened to the hub once its
// folder is gone (410 in the API's error shape, code hub_gone: the page
// stops for good and shows it, its list of calls emptied), instead of each
// screen failing on a file that is not there; the page's session and its
// assets are served as before. gone nil: next.
func goneAPI(next http.Handler, gone func() string) http.Handler {
	if gone == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		msg := ""
		if strings.HasPrefix(r.URL.Path, "/api/") && r.URL.Path != "/api/session" {
			msg = gone()
		}
		if msg == "" {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusGone)
		_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"code": "hub_gone", "message": msg}})
	})
}
