package mcpserver

import (
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// HTTPLimits bound what the HTTP endpoint holds at once, so that a flood of
// clients is queued, not refused, and slow or idle connections cannot keep
// it from serving a real client. The zero value means the defaults.
type HTTPLimits struct {
	// ReadHeaderTimeout bounds the wait for a request's headers (10 s).
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds the wait for a whole request, body included (30 s;
	// the largest body, 1 MB, takes milliseconds on loopback). Responses,
	// such as a long execute or an event stream, have no write deadline.
	ReadTimeout time.Duration
	// IdleTimeout closes a kept-alive connection that sends nothing (2 min).
	IdleTimeout time.Duration
	// MaxConns caps open connections (2048). A connection past it is not
	// refused: it waits in the kernel's accept queue until one closes, and
	// the oldest connection that has sent no whole request for SlowAfter
	// (a slow or silent client, or an idle kept-alive one) is closed to
	// make room.
	MaxConns int
	// SlowAfter is how long the server may wait on a connection for a
	// whole request before a newcomer past MaxConns may take its place
	// (2 s).
	SlowAfter time.Duration
	// MaxRequests is how many requests may read their bodies at once
	// (64): with MaxBodyBytes each, it bounds the memory of bodies.
	// The others wait for a turn.
	MaxRequests int
	// MaxWaiting is how many requests may wait for a turn (MaxConns); past
	// it a request is answered 503 with Retry-After, unserved.
	MaxWaiting int
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
		l.MaxConns = 2048
	}
	if l.SlowAfter <= 0 {
		l.SlowAfter = 2 * time.Second
	}
	if l.MaxRequests <= 0 {
		l.MaxRequests = 64
	}
	if l.MaxWaiting <= 0 {
		l.MaxWaiting = l.MaxConns
	}
	return l
}

// admission gives requests their turn to read a body: at most max at once,
// the rest waiting in arrival order, at most waiting of them; past that a
// request is answered 503 with Retry-After, unserved (the stdio shim sends
// it again then). A turn ends when the body has been read (the engine
// bounds its own work: a run waits for its turn in the sandbox), or when
// the handler returns. GETs (event streams, the liveness probe) and
// DELETEs read no body and take no turn.
type admission struct {
	turns   chan struct{}
	max     int64
	waiting atomic.Int64
	log     *slog.Logger

	mu       sync.Mutex
	refused  int // 503s since the last log line
	loggedAt time.Time
}

func newAdmission(max, waiting int, log *slog.Logger) *admission {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &admission{turns: make(chan struct{}, max), max: int64(waiting), log: log}
}

// retryAfter is the Retry-After of a 503, in seconds.
const retryAfter = 1

func (a *admission) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		select {
		case a.turns <- struct{}{}:
		default:
			if a.waiting.Add(1) > a.max {
				a.waiting.Add(-1)
				a.refuse(w)
				return
			}
			select {
			case a.turns <- struct{}{}:
				a.waiting.Add(-1)
			case <-r.Context().Done():
				a.waiting.Add(-1)
				return
			}
		}
		var once sync.Once
		end := func() { once.Do(func() { <-a.turns }) }
		defer end()
		r.Body = &turnBody{ReadCloser: r.Body, end: end}
		next.ServeHTTP(w, r)
	})
}

func (a *admission) refuse(w http.ResponseWriter) {
	w.Header().Set("Retry-After", strconv.Itoa(retryAfter))
	deny(w, http.StatusServiceUnavailable, fmt.Sprintf("the hub is busy: %d requests wait for their turn; nothing of this one was served, send it again after %d s", a.max, retryAfter))
	a.mu.Lock()
	a.refused++
	n := a.refused
	log := time.Since(a.loggedAt) >= time.Second
	if log {
		a.refused, a.loggedAt = 0, time.Now()
	}
	a.mu.Unlock()
	if log {
		a.log.Warn("the hub is busy: requests answered 503 with Retry-After, unserved", "refused", n, "waiting", a.max)
	}
}

// turnBody ends a request's turn once its body is read whole or closed.
type turnBody struct {
	io.ReadCloser
	end func()
}

func (b *turnBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil {
		b.end()
	}
	return n, err
}

func (b *turnBody) Close() error {
	b.end()
	return b.ReadCloser.Close()
}

// connLimiter is a listener that keeps at most max connections open. Past
// it, Accept waits (connections queue in the kernel, none is refused) until
// one closes, closing the oldest one that has sent no whole request for
// slow (a slow or silent client) to make room.
type connLimiter struct {
	net.Listener
	max    int
	slow   time.Duration
	closed chan struct{}
	close  sync.Once

	mu    sync.Mutex
	conns []*limitedConn // in accept order
	freed chan struct{}  // closed when a connection closes
}

type limitedConn struct {
	net.Conn
	l       *connLimiter
	read    atomic.Bool // the server has begun reading it
	waiting atomic.Bool // the server waits in Read for the client to send
	served  bool        // a request is being served on it (guarded by l.mu)
	since   time.Time   // when the server began reading it or it last became idle (guarded by l.mu)
	once    sync.Once
}

// Read marks when the server waits for the client to send. A connection is
// slow only while the server waits on it: one accepted under load whose
// request is there, unread, until its goroutine runs (or read, and not yet
// parsed) is never closed for a newcomer.
func (c *limitedConn) Read(p []byte) (int, error) {
	if !c.read.Load() {
		c.l.mu.Lock()
		c.since = time.Now()
		c.read.Store(true)
		c.l.mu.Unlock()
	}
	c.waiting.Store(true)
	n, err := c.Conn.Read(p)
	c.waiting.Store(false)
	return n, err
}

func newConnLimiter(ln net.Listener, max int, slow time.Duration) *connLimiter {
	return &connLimiter{Listener: ln, max: max, slow: slow, closed: make(chan struct{}), freed: make(chan struct{})}
}

func (l *connLimiter) Close() error {
	l.close.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

func (l *connLimiter) Accept() (net.Conn, error) {
	if err := l.room(); err != nil {
		return nil, err
	}
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	lc := &limitedConn{Conn: c, l: l}
	l.mu.Lock()
	l.conns = append(l.conns, lc)
	l.mu.Unlock()
	return lc, nil
}

// room waits until fewer than max connections are open.
func (l *connLimiter) room() error {
	for {
		l.mu.Lock()
		if len(l.conns) < l.max {
			l.mu.Unlock()
			return nil
		}
		var evict *limitedConn
		now := time.Now()
		for _, o := range l.conns {
			if !o.served && o.read.Load() && o.waiting.Load() && now.Sub(o.since) >= l.slow && (evict == nil || o.since.Before(evict.since)) {
				evict = o
			}
		}
		freed := l.freed
		l.mu.Unlock()
		if evict != nil {
			evict.Close()
			continue
		}
		t := time.NewTimer(l.slow / 4)
		select {
		case <-freed:
		case <-t.C:
		case <-l.closed:
			t.Stop()
			return net.ErrClosed
		}
		t.Stop()
	}
}

// state follows http.Server's view of each connection.
func (l *connLimiter) state(c net.Conn, st http.ConnState) {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
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
		lc.served, lc.since = false, time.Now()
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
			close(l.freed)
			l.freed = make(chan struct{})
			return
		}
	}
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.forget(c) })
	return err
}
