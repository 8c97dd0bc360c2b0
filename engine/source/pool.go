package source

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/capabilities-sh/capabilities/engine/model"
)

// Pool holds at most one live session per namespace and starts each lazily,
// on the first call that needs it. Close reaps them all.
type Pool struct {
	opts Options
	// connected, when set, hears each start of a session: the namespace,
	// and the error that kept it from starting (nil when it started).
	connected func(namespace string, err error)

	mu       sync.Mutex
	sessions map[string]*poolEntry
	closed   bool
}

// OnConnect sets what hears each start of a session (not each call): the
// namespace, and the error that kept it from starting or nil. Set it
// before the pool serves.
func (p *Pool) OnConnect(f func(namespace string, err error)) { p.connected = f }

type poolEntry struct {
	once sync.Mutex // serializes starting this namespace's session
	s    *Session
	live atomic.Pointer[Session] // s, for Wake, which does not wait on once
}

// NewPool returns an empty pool.
func NewPool(opts Options) *Pool {
	return &Pool{opts: opts, sessions: map[string]*poolEntry{}}
}

// Session returns the live session for src (and the credential, nil for
// none), starting it if there is none or the previous one died (its
// process exited or its connection ended: an upstream that closed its
// stdout is started again). Each
// connection of a source has its own session. protocol is the version
// negotiated before, if any.
func (p *Pool) Session(ctx context.Context, src model.Source, protocol string, cred *Credential) (*Session, error) {
	key := src.Namespace
	if cred != nil {
		key += "#" + cred.Connection
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, errPoolClosed
	}
	e := p.sessions[key]
	if e == nil {
		e = &poolEntry{}
		p.sessions[key] = e
	}
	p.mu.Unlock()

	e.once.Lock()
	defer e.once.Unlock()
	if e.s != nil && e.s.Alive() && sameSource(&e.s.orig, &src) && e.s.secret == cred.key() {
		return e.s, nil
	}
	if e.s != nil {
		_ = e.s.Close()
		e.s = nil
		e.live.Store(nil)
	}
	opts := p.opts
	opts.Protocol = protocol
	s, err := ConnectWith(ctx, src, cred, opts)
	if p.connected != nil && ctx.Err() == nil {
		p.connected(src.Namespace, err)
	}
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	closed := p.closed
	p.mu.Unlock()
	if closed {
		_ = s.Close()
		return nil, errPoolClosed
	}
	e.s = s
	e.live.Store(s)
	return s, nil
}

// Drop closes the namespace's sessions, if any (the source was removed or
// changed, or its credentials did).
func (p *Pool) Drop(namespace string) {
	p.mu.Lock()
	var drop []*poolEntry
	for k, e := range p.sessions {
		if k == namespace || strings.HasPrefix(k, namespace+"#") {
			drop = append(drop, e)
			delete(p.sessions, k)
		}
	}
	p.mu.Unlock()
	for _, e := range drop {
		e.once.Lock()
		if e.s != nil {
			_ = e.s.Close()
		}
		e.once.Unlock()
	}
}

// Close ends every session and reaps every upstream process.
func (p *Pool) Close() {
	p.mu.Lock()
	p.closed = true
	entries := p.sessions
	p.sessions = map[string]*poolEntry{}
	p.mu.Unlock()
	var wg sync.WaitGroup
	for _, e := range entries {
		wg.Go(func() {
			e.once.Lock()
			defer e.once.Unlock()
			if e.s != nil {
				_ = e.s.Close()
			}
		})
	}
	wg.Wait()
}

func sameSource(a, b *model.Source) bool {
	if a.Kind != b.Kind || a.Command != b.Command || a.URL != b.URL || a.Document != b.Document || a.Cwd != b.Cwd || a.CallTimeoutMs != b.CallTimeoutMs || len(a.Args) != len(b.Args) || len(a.Env) != len(b.Env) {
		return false
	}
	for i := range a.Args {
		if a.Args[i] != b.Args[i] {
			return false
		}
	}
	for k, v := range a.Env {
		if b.Env[k] != v {
			return false
		}
	}
	return true
}

// Options returns the options the pool connects with.
func (p *Pool) Options() Options { return p.opts }
