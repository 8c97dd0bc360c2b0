package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"
)

// HTTPLimits bound what one connection to the HTTP endpoint may hold, so
// that slow or idle connections cannot keep the endpoint from serving a
// real client. The zero value means the defaults.
type HTTPLimits struct {
	// ReadHeaderTimeout bounds the wait for a request's headers (10 s).
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds the wait for a whole request, body included (30 s;
	// the largest body, 1 MB, takes milliseconds on loopback). Responses,
	// such as a long execute or an event stream, have no write deadline.
	ReadTimeout time.Duration
	// IdleTimeout closes a kept-alive connection that sends nothing (2 min).
	IdleTimeout time.Duration
	// MaxConns caps open connections (256). Past it, the oldest connection
	// that has not yet sent a whole request is closed to make room; when
	// every connection is serving one, the newcomer is refused.
	MaxConns int
}

func (l HTTPLimits) withDefaults() HTTPLimits {
	if l.ReadHeaderTimeout <= 0 {
		l.ReadHeaderTimeout = 10 * time.Second
	}
	if l.ReadTimeout <= 0 {
		l.ReadTimeout = 30 * time.Second
	}
	if l.IdleTimeout <= 0 {
		l.IdleTimeout = 2 * time.Minute
	}
	if l.MaxConns <= 0 {
		l.MaxConns = 256
	}
	return l
}

// ServeHTTP serves the MCP endpoint (HTTPHandler) on ln until ctx is done,
// then shuts down, giving open requests up to 5 s.
func (s *Server) ServeHTTP(ctx context.Context, ln net.Listener, token string, lim HTTPLimits) error {
	lim = lim.withDefaults()
	cl := newConnLimiter(ln, lim.MaxConns)
	hs := &http.Server{
		Handler:           s.HTTPHandler(token),
		ReadHeaderTimeout: lim.ReadHeaderTimeout,
		ReadTimeout:       lim.ReadTimeout,
		IdleTimeout:       lim.IdleTimeout,
		MaxHeaderBytes:    64 << 10,
		ConnState:         cl.state,
		ErrorLog:          nil,
	}
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-ctx.Done():
		case <-done:
			return
		}
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := hs.Shutdown(sctx); err != nil {
			hs.Close()
		}
	}()
	if err := hs.Serve(cl); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving over HTTP: %w", err)
	}
	return nil
}

// connLimiter is a listener that keeps at most max connections open,
// closing the oldest one that has not yet sent a whole request (a slow or
// silent client) to make room for a new one.
type connLimiter struct {
	net.Listener
	max int

	mu    sync.Mutex
	conns []*limitedConn // in accept order
}

type limitedConn struct {
	net.Conn
	l      *connLimiter
	served bool // a whole request was read from it (guarded by l.mu)
	once   sync.Once
}

func newConnLimiter(ln net.Listener, max int) *connLimiter {
	return &connLimiter{Listener: ln, max: max}
}

func (l *connLimiter) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		lc := &limitedConn{Conn: c, l: l}
		l.mu.Lock()
		var evict *limitedConn
		if len(l.conns) >= l.max {
			for _, o := range l.conns {
				if !o.served {
					evict = o
					break
				}
			}
		}
		full := len(l.conns) >= l.max && evict == nil
		if !full {
			l.conns = append(l.conns, lc)
		}
		l.mu.Unlock()
		if evict != nil {
			evict.Close()
		}
		if full {
			c.Close()
			continue
		}
		return lc, nil
	}
}

// state follows http.Server's view of each connection.
func (l *connLimiter) state(c net.Conn, st http.ConnState) {
	lc, ok := c.(*limitedConn)
	if !ok {
		return
	}
	switch st {
	case http.StateActive:
		l.mu.Lock()
		lc.served = true
		l.mu.Unlock()
	case http.StateIdle:
		// Between requests, a kept-alive connection may be closed for a
		// newcomer like one that never sent a request.
		l.mu.Lock()
		lc.served = false
		l.mu.Unlock()
	case http.StateClosed, http.StateHijacked:
		l.forget(lc)
	}
}

func (l *connLimiter) forget(lc *limitedConn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, o := range l.conns {
		if o == lc {
			l.conns = append(l.conns[:i], l.conns[i+1:]...)
			return
		}
	}
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.forget(c) })
	return err
}
