package source

import (
	"context"
	"sync/atomic"
	"time"
)

// waking is a session's state for Wake.
type waking struct {
	lastCall atomic.Int64 // unix nanoseconds of the last call's answer
	pinging  atomic.Bool
}

// wakeWithin is how recently a session must have been called for Wake to
// ping it: an upstream the runs of the last minutes used.
const wakeWithin = 10 * time.Minute

// wakeQuiet is how long after its last answer an upstream is worth waking:
// sooner, it is still warm.
const wakeQuiet = 5 * time.Millisecond

// Wake pings a local upstream that answered a call lately and has been
// quiet since, and returns at once: a run is on its way (an execute
// arrived), and the upstream wakes up and gets its code back into the
// CPU's caches while the sandbox compiles and starts the run, instead of
// after the run's call reaches it. A ping is what MCP has for this (every
// server answers it); its answer, or its error, is dropped, and it never
// marks the session broken. HTTP upstreams are not pinged: a remote server
// would get a request per execute.
func (s *Session) Wake() {
	if s.proc == nil || s.cs == nil || !s.Alive() {
		return
	}
	since := time.Duration(time.Now().UnixNano() - s.wake.lastCall.Load())
	if since < wakeQuiet || since > wakeWithin {
		return
	}
	if !s.wake.pinging.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer s.wake.pinging.Store(false)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = s.cs.Ping(ctx, nil)
	}()
}

// Wake wakes the live local sessions called lately (Session.Wake) whose
// namespace the coming run may call (called reports it): an upstream the
// run's code does not name gets no traffic from it, so an execute costs
// the same however many upstreams are live.
func (p *Pool) Wake(called func(namespace string) bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, e := range p.sessions {
		if s := e.live.Load(); s != nil && called(s.src.Namespace) {
			s.Wake()
		}
	}
}
