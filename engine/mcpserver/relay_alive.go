package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"
)

// A hub that is alive but frozen (stopped with SIGSTOP, or stuck) accepts
// the shim's connections and answers nothing. go-sdk sends no headers on a
// request's stream before its first message, and an execute may rightly
// take minutes (a person deciding in the client's form, a slow tool), so
// the request's own silence says nothing. While any message it relayed is
// outstanding, the shim therefore asks the hub's AlivePath, a separate GET
// the hub's HTTP server answers at once, every Liveness/2: two probes in a
// row unanswered for Liveness/2 each mean the hub is frozen, and every
// outstanding request is answered with an error saying so (its outcome is
// unknown: the hub may carry it out if it comes back). A request sent while
// the hub is known frozen is probed first and, if the hub is still silent,
// not sent at all. A hub that answers again serves the next request.

// DefaultLiveness is how long a relayed request's hub may leave the
// liveness probe unanswered before the shim gives up on it.
const DefaultLiveness = 20 * time.Second

// errHubFrozen is the cause of a relayed message given up on because the
// hub stopped answering its liveness probe.
var errHubFrozen = errors.New("the hub does not answer its liveness probe")

// liveness is the shim's state for the liveness probe.
type liveness struct {
	mu       sync.Mutex
	next     int
	inflight map[int]context.CancelCauseFunc // messages posted to the hub, not yet answered
	watching bool                            // a watch loop runs
	frozen   bool                            // the last probes went unanswered
}

func (s *Shim) window() time.Duration {
	if s.Liveness > 0 {
		return s.Liveness
	}
	return DefaultLiveness
}

// track registers a message about to be posted to the hub and returns the
// context to post it with: it is cancelled with errHubFrozen if the hub
// stops answering meanwhile. done unregisters it.
func (s *Shim) track(ctx context.Context, wg *sync.WaitGroup) (pctx context.Context, done func()) {
	pctx, cancel := context.WithCancelCause(ctx)
	l := &s.alive
	l.mu.Lock()
	if l.inflight == nil {
		l.inflight = map[int]context.CancelCauseFunc{}
	}
	l.next++
	id := l.next
	l.inflight[id] = cancel
	start := !l.watching
	l.watching = true
	l.mu.Unlock()
	if start {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.watch(ctx)
		}()
	}
	return pctx, func() {
		l.mu.Lock()
		delete(l.inflight, id)
		l.mu.Unlock()
		cancel(nil)
	}
}

// watch probes the hub while messages are outstanding, and gives up on
// them when it stays silent.
func (s *Shim) watch(ctx context.Context) {
	w := s.window()
	l := &s.alive
	misses := 0
	for {
		if misses == 0 {
			t := time.NewTimer(w / 2)
			select {
			case <-ctx.Done():
				t.Stop()
				l.mu.Lock()
				l.watching = false
				l.mu.Unlock()
				return
			case <-t.C:
			}
		}
		l.mu.Lock()
		if len(l.inflight) == 0 {
			l.watching = false
			l.mu.Unlock()
			return
		}
		l.mu.Unlock()
		err := s.probe(ctx, w/2)
		switch {
		case err == nil:
			misses = 0
		case isSilent(err):
			misses++
			s.Logger.Debug("the hub did not answer the liveness probe", "url", s.Endpoint.URL, "pid", s.Endpoint.PID, "misses", misses)
		default:
			// Not silence: the hub is gone (refused) or the shim is
			// ending. The outstanding posts find out for themselves.
			misses = 0
			s.Logger.Debug("probing the hub", "err", err)
		}
		if misses >= 2 {
			misses = 0
			l.mu.Lock()
			l.frozen = true
			cancels := slices.Collect(maps.Values(l.inflight))
			l.mu.Unlock()
			s.Logger.Warn("the hub is not responding: answering its outstanding requests with an error", "url", s.Endpoint.URL, "pid", s.Endpoint.PID, "silent", w)
			for _, c := range cancels {
				c(errHubFrozen)
			}
		}
	}
}

// probe asks the hub's AlivePath once, waiting at most wait. Any HTTP
// answer counts (a hub from before AlivePath answers 404): it shows the
// hub's process serves. A hub known frozen that answers is frozen no more.
func (s *Shim) probe(ctx context.Context, wait time.Duration) error {
	u, err := url.Parse(s.Endpoint.URL)
	if err != nil {
		return fmt.Errorf("probing the hub: %w", err)
	}
	u.Path, u.RawQuery = AlivePath, ""
	pctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	req, err := http.NewRequestWithContext(pctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return fmt.Errorf("probing the hub: %w", err)
	}
	s.headers(req, "", true)
	resp, err := s.probeClient.Do(req)
	if err != nil {
		return fmt.Errorf("probing the hub: %w", err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	resp.Body.Close()
	s.Logger.Debug("the hub answered the liveness probe", "url", s.Endpoint.URL, "status", resp.StatusCode)
	l := &s.alive
	l.mu.Lock()
	was := l.frozen
	l.frozen = false
	l.mu.Unlock()
	if was {
		s.Logger.Info("the hub answers again", "url", s.Endpoint.URL, "pid", s.Endpoint.PID)
	}
	return nil
}

// stillFrozen reports, for a message about to be posted, whether the hub
// is known frozen and stays silent to one more probe: then the message is
// not sent.
func (s *Shim) stillFrozen(ctx context.Context) bool {
	l := &s.alive
	l.mu.Lock()
	frozen := l.frozen
	l.mu.Unlock()
	if !frozen {
		return false
	}
	return isSilent(s.probe(ctx, s.window()/2))
}

// isSilent reports whether a probe failed for want of an answer in time
// (the hub is stopped or stuck), not because nothing listens any more.
func isSilent(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}

// answerFrozen answers a message given up on because the hub stopped answering:
// a request gets an error saying what happened and what to do; anything
// else is dropped, and logged. sent says whether it reached the hub.
func (s *Shim) answerFrozen(m shimMsg, sent bool) {
	if !m.isRequest() {
		s.Logger.Warn("the hub is not responding: a message to it was dropped", "method", m.Method, "url", s.Endpoint.URL, "pid", s.Endpoint.PID)
		return
	}
	if s.Remote {
		s.write(remoteFrozenReply(m.ID, s.Endpoint.URL, s.window(), sent))
		return
	}
	s.write(hubFrozenReply(m.ID, s.Endpoint, s.window(), sent))
}

func hubFrozenReply(id json.RawMessage, ep Endpoint, silent time.Duration, sent bool) *rpcError {
	what := fmt.Sprintf("the hub at %s (pid %d) is running but has not answered for %s: it is stopped (kill -STOP, a debugger) or stuck", ep.URL, ep.PID, silent)
	fix := fmt.Sprintf("If it does not come back, restart the desktop app or end the hub (`kill %d`; one stopped with kill -STOP goes on with `kill -CONT %d`): the requests after that run on this process's own engine.", ep.PID, ep.PID)
	if !sent {
		return errorReply(id, -32603, "%s; this request was not sent to it, so nothing of it happened: send it again. %s", what, fix)
	}
	return errorReply(id, -32603, "%s; this request's outcome is unknown: the hub may still carry it out if it comes back (`capabilities hub runs` lists the runs). The next request goes to the hub again. %s", what, fix)
}
