package console

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/capabilities-sh/capabilities/internal/peer"
)

// DefaultAddr is where Listen listens when given no address: loopback, a
// free port.
const DefaultAddr = "127.0.0.1:0"

// Listen opens the console's listener at addr, a loopback IP and a port (0:
// a free one); empty is DefaultAddr. Any other host is refused.
func Listen(addr string) (net.Listener, error) {
	if addr == "" {
		addr = DefaultAddr
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("listening for the console: address %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("listening for the console: %q is not a loopback IP address (127.0.0.1 or ::1); the console is served on this machine only", host)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listening for the console: %w", err)
	}
	return ln, nil
}

// Serve serves h on ln until ctx is done, then shuts down, giving open
// requests up to 2 s. Where the owner of a connection can be known
// (Linux), it serves only this user's.
func Serve(ctx context.Context, ln net.Listener, h http.Handler) error {
	hs := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
	}
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-ctx.Done():
		case <-done:
			return
		}
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err := hs.Shutdown(sctx); err != nil {
			_ = hs.Close()
		}
	}()
	// Only the person's own processes: another user of this machine may
	// connect to a loopback port too, with a one-time link read from the
	// browser's command line (peer).
	if err := hs.Serve(peer.SameUser(ln, nil)); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving the console: %w", err)
	}
	return nil
}
