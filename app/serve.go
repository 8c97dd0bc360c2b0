package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"syscall"

	"github.com/capabilities-sh/capabilities/engine/elicit"
	"github.com/capabilities-sh/capabilities/engine/mcpserver"
	"github.com/capabilities-sh/capabilities/internal/browser"
)

// DefaultPort is where the app serves the hub's MCP endpoint on loopback,
// as `capabilities hub serve --http` does.
const DefaultPort = 4790

// portsTried is how many ports from the configured one the app tries before
// taking any free one.
const portsTried = 10

// serveMCP serves the hub's MCP endpoint on 127.0.0.1 (port, else the next
// free one) with the bearer token of hub/http-token — the same server as
// `serve --http` — and announces it in the store, so that every agent's
// `serve --stdio` relays its session here. stop ends serving and removes the
// announcement.
func (a *App) serveMCP(ctx context.Context, port int) (endpoint string, stop func(), err error) {
	token, _, err := mcpserver.HTTPToken(a.dir)
	if err != nil {
		return "", nil, err
	}
	signer, err := elicit.LoadSigner(a.dir)
	if err != nil {
		return "", nil, err
	}
	ln, err := listenFrom(port)
	if err != nil {
		return "", nil, err
	}
	srv := mcpserver.New(a.hub, mcpserver.Options{Logger: a.log, Signer: signer, Pages: notePages{a}, Unavailable: a.unavailable})
	// The sandbox and the catalog are built in the background now, so an
	// agent's first execute does not wait for them.
	a.hub.Prepare(ctx)
	endpoint = "http://" + ln.Addr().String() + "/mcp"
	unannounce, err := mcpserver.Announce(a.dir, endpoint)
	if err != nil {
		ln.Close()
		return "", nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := srv.ServeHTTP(ctx, ln, token, mcpserver.HTTPLimits{}); err != nil && !errors.Is(err, context.Canceled) {
			a.log.Warn("serving MCP", "err", err)
		}
	})
	// Sources, manifests and the policy changed by another process (`hub
	// add` in a terminal) reach the agents without a restart.
	wg.Go(func() {
		if err := a.hub.Watch(ctx); err != nil {
			a.log.Warn("live configuration is off", "err", err)
		}
	})
	// A decision from a notification or the window finishes its run here.
	wg.Go(func() {
		if err := a.hub.FinishDecided(ctx); err != nil {
			a.log.Warn("runs are not resumed when a person decides", "err", err)
		}
	})
	a.log.Info("serving MCP", "url", endpoint)
	return endpoint, func() { unannounce(); cancel(); wg.Wait() }, nil
}

// listenFrom listens on 127.0.0.1 at port, or the next free one of the
// portsTried after it, else at any free port.
func listenFrom(port int) (net.Listener, error) {
	var last error
	for p := port; p < port+portsTried && p <= 65535; p++ {
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err == nil {
			return ln, nil
		}
		if !errors.Is(err, syscall.EADDRINUSE) {
			return nil, fmt.Errorf("serving MCP on 127.0.0.1:%d: %w", p, err)
		}
		last = err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("serving MCP: ports %d to %d are in use (%v), and no free port: %w", port, port+portsTried-1, last, err)
	}
	return ln, nil
}

// notePages is how the app shows a pending call to a person whose agent's
// client cannot ask them itself: the app's own watcher of runs/ raises the
// call's notification (or, without a notification daemon, opens the
// approval window or the console's page in the browser), so the MCP answer
// only says where it is shown.
type notePages struct{ a *App }

func (p notePages) Open(ctx context.Context, run string, ids []string) (mcpserver.Page, error) {
	if p.a.notes != nil {
		return mcpserver.Page{Shown: true, Where: "the desktop app asks the person in a notification, with its approval window"}, nil
	}
	if _, ok := p.a.win.(*windowProcess); ok {
		return mcpserver.Page{Shown: true, Where: "the desktop app's approval window is on the person's screen"}, nil
	}
	if _, why, err := browser.Argv(); err != nil {
		return mcpserver.Page{Why: why}, nil
	}
	return mcpserver.Page{Shown: true}, nil
}
