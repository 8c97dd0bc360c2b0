package hub

import (
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// quiet gives memory back once the hub has been idle for trimAfter: an
// agent works in bursts (a search, a describe, a few executes) with the
// model thinking for seconds in between, and a hub that runs all day
// (serve, the desktop app) should not hold, in between, the heap its last
// burst grew or the runtimes it warmed for the next one beyond the one
// that makes that next execute as fast. Requests mark the hub busy while
// they run; when the last one ends the clock starts again.
type quiet struct {
	mu     sync.Mutex
	busy   int
	timer  *time.Timer
	closed bool
	trims  atomic.Int64 // trims made (tests)
}

// trimAfter is how long the hub must have been idle before it trims (a
// variable for tests).
var trimAfter = 2 * time.Second

// busy marks a request under way until the returned func is called.
func (h *Hub) busy() (done func()) {
	q := &h.quiet
	q.mu.Lock()
	q.busy++
	if q.timer != nil {
		q.timer.Stop()
	}
	q.mu.Unlock()
	return func() {
		q.mu.Lock()
		defer q.mu.Unlock()
		if q.busy--; q.busy > 0 || q.closed {
			return
		}
		if q.timer == nil {
			q.timer = time.AfterFunc(trimAfter, h.trim)
		} else {
			q.timer.Reset(trimAfter)
		}
	}
}

// trim lets go what an idle hub need not hold: the sandbox's runtimes
// waiting to be reset, its snapshots of other namespace sets and its spare
// memories (sandbox.Driver.Trim), then the heap's free pages, returned to
// the system.
func (h *Hub) trim() {
	q := &h.quiet
	q.mu.Lock()
	idle := q.busy == 0 && !q.closed
	q.mu.Unlock()
	// A shared Driver (Options.Driver) serves other hubs, and the process
	// is theirs too: whoever made it trims it, not each tenant going idle.
	if !idle || h.opts.Driver != nil {
		return
	}
	if d := h.runs.driver.Load(); d != nil && !d.Trim() {
		return // an attempt is running (resumed by another path): not idle
	}
	debug.FreeOSMemory()
	q.trims.Add(1)
}

// stopQuiet stops trimming: the hub is closing.
func (h *Hub) stopQuiet() {
	q := &h.quiet
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	if q.timer != nil {
		q.timer.Stop()
	}
}
