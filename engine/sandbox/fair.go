package sandbox

import (
	"sync"
	"sync/atomic"
)

// fairTurns is a counting semaphore shared by admission keys (tenants,
// Request.Key). Waiters are served round robin across the keys that wait,
// one turn per key in each round; within a key, in arrival order, those
// asking again (an attempt that already started) before those asking first.
// A named key holds at most perKey turns at once, even when more are free,
// so that one key cannot hold them all (an attempt gives its turn back only
// when it waits or ends: an infinite loop holds a compute turn until its
// compute time runs out). The empty key (a Driver one hub owns) has no cap.
//
// With a single key it is the semaphore it replaced: free turns are taken
// at once, waiters are served again-before-next in arrival order.
//
// Invariant: when free > 0, every key that waits holds its cap.
type fairTurns struct {
	mu     sync.Mutex
	free   int
	perKey int  // cap of a named key's turns
	off    bool // fairness off: one queue, no cap (benchmarks' comparison)
	keys   map[string]*keyTurns
	ring   []*keyTurns // keys that wait, next to serve first
	// waiting is len(ring), read without mu by a computing attempt's
	// ticks (othersWait): zero, the usual case, costs them nothing more.
	waiting atomic.Int32
	// observe, when set (tests), is called under mu after a key took a
	// turn, with how many it holds.
	observe func(key string, held int)
}

// keyTurns is one key's turns held and waiters.
type keyTurns struct {
	key         string
	held        int
	again, next []chan struct{}
	inRing      bool
}

func newFairTurns(n, perKey int, off bool) *fairTurns {
	return &fairTurns{free: n, perKey: perKey, off: off, keys: map[string]*keyTurns{}}
}

func (f *fairTurns) capOf(k *keyTurns) int {
	if k.key == "" || f.off {
		return int(^uint(0) >> 1)
	}
	return f.perKey
}

func (f *fairTurns) keyOf(key string) *keyTurns {
	if f.off {
		key = ""
	}
	k := f.keys[key]
	if k == nil {
		k = &keyTurns{key: key}
		f.keys[key] = k
	}
	return k
}

// forget drops an idle named key (tenants come and go).
func (f *fairTurns) forget(k *keyTurns) {
	if k.key != "" && k.held == 0 && len(k.again) == 0 && len(k.next) == 0 {
		delete(f.keys, k.key)
	}
}

func (f *fairTurns) took(k *keyTurns) {
	k.held++
	if f.observe != nil {
		f.observe(k.key, k.held)
	}
}

// enqueue takes a turn for key at once when it may (ch nil), else queues a
// waiter whose channel is closed when the turn is granted.
func (f *fairTurns) enqueue(key string, again bool) (ch chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	k := f.keyOf(key)
	// By the invariant, a key under its cap has no waiter when a turn is
	// free, so this one goes before no one.
	if f.free > 0 && k.held < f.capOf(k) {
		f.free--
		f.took(k)
		return nil
	}
	ch = make(chan struct{})
	if again {
		k.again = append(k.again, ch)
	} else {
		k.next = append(k.next, ch)
	}
	if !k.inRing {
		k.inRing = true
		f.ring = append(f.ring, k)
		f.waiting.Store(int32(len(f.ring)))
	}
	return ch
}

// abandon drops the waiter ch of key (its wait ended otherwise). When the
// turn was granted meanwhile, it is handed on.
func (f *fairTurns) abandon(key string, ch chan struct{}) {
	f.mu.Lock()
	k := f.keyOf(key)
	var dropped bool
	if k.again, dropped = drop(k.again, ch); !dropped {
		k.next, dropped = drop(k.next, ch)
	}
	if dropped {
		if len(k.again) == 0 && len(k.next) == 0 {
			f.unring(k)
		}
		f.forget(k)
		f.mu.Unlock()
		return
	}
	f.mu.Unlock()
	f.release(key) // granted meanwhile: hand it on
}

func (f *fairTurns) unring(k *keyTurns) {
	if !k.inRing {
		return
	}
	k.inRing = false
	for i, r := range f.ring {
		if r == k {
			f.ring = append(f.ring[:i], f.ring[i+1:]...)
			f.waiting.Store(int32(len(f.ring)))
			return
		}
	}
}

// acquire waits for a turn until stop is closed; it reports false when stop
// came first.
func (f *fairTurns) acquire(key string, again bool, stop <-chan struct{}) bool {
	ch := f.enqueue(key, again)
	if ch == nil {
		return true
	}
	select {
	case <-ch:
		return true
	case <-stop:
	}
	f.abandon(key, ch)
	return false
}

// release gives a turn of key back: to the first key in the ring that
// waits under its cap (which then goes to the ring's end), else it is free.
func (f *fairTurns) release(key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	k := f.keyOf(key)
	k.held--
	for i, w := range f.ring {
		if w.held >= f.capOf(w) {
			continue
		}
		var ch chan struct{}
		if len(w.again) > 0 {
			ch, w.again = w.again[0], w.again[1:]
		} else {
			ch, w.next = w.next[0], w.next[1:]
		}
		f.took(w)
		close(ch)
		f.ring = append(f.ring[:i], f.ring[i+1:]...)
		if len(w.again) > 0 || len(w.next) > 0 {
			f.ring = append(f.ring, w)
		} else {
			w.inRing = false
		}
		f.waiting.Store(int32(len(f.ring)))
		f.forget(k)
		return
	}
	f.free++
	f.forget(k)
}

// othersWait reports whether a key other than key waits under its cap:
// a turn key gives back would go to it.
func (f *fairTurns) othersWait(key string) bool {
	if f.waiting.Load() == 0 {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	k := f.keyOf(key)
	for _, w := range f.ring {
		if w != k && w.held < f.capOf(w) {
			return true
		}
	}
	return false
}

// heldBy reports the turns key holds, and its cap.
func (f *fairTurns) heldBy(key string) (held, limit int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	k := f.keyOf(key)
	held, limit = k.held, f.capOf(k)
	f.forget(k)
	return held, limit
}

func drop(q []chan struct{}, ch chan struct{}) ([]chan struct{}, bool) {
	for i, c := range q {
		if c == ch {
			return append(q[:i], q[i+1:]...), true
		}
	}
	return q, false
}
