package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/capabilities-sh/capabilities/engine/console"
	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/mcpserver"
	"github.com/capabilities-sh/capabilities/internal/browser"
)

// pageOpener is the approval page of the process that owns a run: when a
// run waits for a decision and the agent's client cannot ask the person,
// it serves the console on loopback (started on first use, one per
// process, a free port unless configured) and opens a one-time link to it
// in the person's browser, once per pending call.
type pageOpener struct {
	ctx  context.Context // the serve's: the console stops with it
	hub  *hub.Hub
	log  *slog.Logger
	addr string // where the console listens ("127.0.0.1:0")
	// open hands a link to the browser (browser.Open).
	open func(link string) error

	mu     sync.Mutex
	guard  *console.Guard
	stop   context.CancelFunc
	served chan struct{} // closed when the console stopped serving
	shown  map[string]bool
}

var _ mcpserver.PageOpener = (*pageOpener)(nil)

func newPageOpener(ctx context.Context, h *hub.Hub, log *slog.Logger, addr string) *pageOpener {
	return &pageOpener{ctx: ctx, hub: h, log: log, addr: addr, open: browser.Open, shown: map[string]bool{}}
}

// Open shows the page for run's pending calls ids. A call that had a page
// opens none again: a retry of the same call says the page is shown. The
// link goes to the browser only; neither it nor its token is returned,
// logged or kept.
func (o *pageOpener) Open(ctx context.Context, run string, ids []string) (mcpserver.Page, error) {
	_, why, err := browser.Argv()
	if err != nil {
		return mcpserver.Page{Why: why}, nil
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	fresh := false
	for _, id := range ids {
		if !o.shown[run+"/"+id] {
			fresh = true
		}
	}
	if !fresh {
		return mcpserver.Page{Shown: true}, nil
	}
	g, err := o.console()
	if err != nil {
		return mcpserver.Page{}, err
	}
	link, err := g.Link()
	if err != nil {
		return mcpserver.Page{}, err
	}
	if err := o.open(link); err != nil {
		if errors.Is(err, browser.ErrOff) || errors.Is(err, browser.ErrNoDisplay) {
			return mcpserver.Page{Why: why}, nil
		}
		return mcpserver.Page{}, err
	}
	for _, id := range ids {
		o.shown[run+"/"+id] = true
	}
	o.log.Info("opened the approval page in the browser", "run", run, "calls", len(ids))
	return mcpserver.Page{Shown: true}, nil
}

// console starts the console on its first use, and again after its page
// expired (24 h).
func (o *pageOpener) console() (*console.Guard, error) {
	if o.guard != nil && time.Now().Before(o.guard.Expires()) {
		return o.guard, nil
	}
	if o.stop != nil {
		o.stop()
		<-o.served
		o.guard, o.stop = nil, nil
	}
	ln, err := console.Listen(o.addr)
	if err != nil {
		return nil, fmt.Errorf("starting the approval page: %w", err)
	}
	gopts := console.GuardOptions{Logger: o.log}
	if links, shared, err := keysOf(o.ctx, o.hub.Store()); err != nil {
		ln.Close()
		return nil, fmt.Errorf("starting the approval page: %w", err)
	} else if shared {
		// A database store: the page's links work on every hub process
		// over it, once.
		gopts.Links = links
	}
	g, err := console.NewGuard(console.New(o.hub, console.Options{Logger: o.log}), ln.Addr().String(), gopts)
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("starting the approval page: %w", err)
	}
	ctx, stop := context.WithDeadline(o.ctx, g.Expires())
	served := make(chan struct{})
	go func() {
		defer close(served)
		if err := console.Serve(ctx, ln, g); err != nil {
			o.log.Warn("the approval page stopped", "err", err)
		}
	}()
	o.guard, o.stop, o.served = g, stop, served
	o.log.Info("serving the approval page on loopback", "port", ln.Addr().(*net.TCPAddr).Port)
	return g, nil
}

// Close stops the console, if it was started.
func (o *pageOpener) Close() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.stop != nil {
		o.stop()
		<-o.served
		o.guard, o.stop = nil, nil
	}
}
