package hub

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/run"
	"github.com/capabilities-sh/capabilities/store"
)

// FinishDecided resumes each paused run as soon as every call it waits for
// is decided, from a notification, the desktop app's window or the approval
// page (unattended), so that an approved write is made then, not
// when the agent comes back, and the agent's next execute({resume}) gets
// the finished envelope at once. The long-running hub runs it (the desktop
// app, serve --http); `hub exec` waits for its own run (Decided).
//
// It follows the store's change feed (store.Changer): on the file store
// the runs folder (one inotify watch), on PostgreSQL the notification every
// process's write of a run sends, so a decision recorded through any hub
// process wakes every one at once. Every one that follows tries; resuming
// takes the run's claim (a lease on PostgreSQL), so one resumes it and the
// others find it held (run.ErrRunningElsewhere): no call is made twice
// (I6). A run whose holder died is free again once its claim is (the
// process's lock on the file store; the lease's expiry on PostgreSQL), and
// is taken by the next process that hears of it or reads it again (at its
// start, after a Resync). It first resumes the runs decided before it
// started, and returns when ctx is done, once the resumes it started end
// (they end with ctx).
func (h *Hub) FinishDecided(ctx context.Context) error {
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	feed, err := h.storeChanges(fctx)
	if err != nil || feed == nil {
		return err
	}
	var (
		mu      sync.Mutex
		resumes = map[string]bool{} // runs being resumed here
		changed = map[string]bool{}
		wg      sync.WaitGroup
		// again gets the runs another process held when this one tried:
		// tried again while they stay decided, since their holder may die
		// before it finishes them (its claim then expires).
		again = make(chan string)
	)
	defer wg.Wait()
	defer cancel() // first: the retries end, the resumes end with ctx
	var debounce <-chan time.Time
	// Decisions made while no hub followed them (the app was closed, a
	// person decided in a terminal whose approve stopped, the process that
	// held the run died) are read after the feed is open, so none falls
	// between; again after a Resync (the feed may have missed some).
	readAll := func() {
		paused, err := h.runEngine().Paused(ctx)
		if err != nil {
			h.log.Warn("reading the runs that wait for a person", "err", err)
			return
		}
		for _, r := range paused {
			if Decided(&r) && unattended(&r) {
				changed[r.ID] = true
				debounce = time.After(0)
			}
		}
	}
	readAll()
	h.log.Debug("following decisions")
	for {
		select {
		case <-ctx.Done():
			return nil
		case c, ok := <-feed:
			if !ok {
				return nil
			}
			switch {
			case c.Resync:
				readAll()
			case c.Kind == store.Runs:
				changed[c.ID] = true
				if debounce == nil {
					debounce = time.After(20 * time.Millisecond)
				}
			}
		case id := <-again:
			changed[id] = true
			if debounce == nil {
				debounce = time.After(0)
			}
		case <-debounce:
			debounce = nil
			for id := range changed {
				delete(changed, id)
				mu.Lock()
				busy := resumes[id]
				mu.Unlock()
				if busy || h.draining.Load() || !h.decided(ctx, id) {
					continue
				}
				mu.Lock()
				resumes[id] = true
				mu.Unlock()
				done := make(chan struct{})
				h.finishing.Store(id, done)
				wg.Go(func() {
					defer func() {
						h.finishing.Delete(id)
						close(done)
						mu.Lock()
						delete(resumes, id)
						mu.Unlock()
					}()
					env, err := h.runEngine().Resume(ctx, id)
					switch {
					case ctx.Err() != nil:
					case errors.Is(err, run.ErrRunningElsewhere):
						wg.Go(func() {
							select {
							case <-time.After(heldRetry):
							case <-fctx.Done():
								return
							}
							select {
							case again <- id:
							case <-fctx.Done():
							}
						})
					case err != nil:
						h.log.Warn("resuming a run a person decided", "run", id, "err", err)
					default:
						h.log.Info("resumed a run a person decided", "run", id, "status", env.Status)
					}
				})
			}
		}
	}
}

// heldRetry is how long FinishDecided waits before it tries again a
// decided run another process held.
const heldRetry = time.Second

// DrainDecided makes FinishDecided take no new run (another process, or
// this one's next start, resumes those) and waits until the runs it is
// resuming have ended, or ctx is done (its error): `serve --http` calls it
// on SIGTERM, within the drain's time. A run still under way when ctx ends
// is stopped with the hub and resumed elsewhere: its claim ends with the
// process.
func (h *Hub) DrainDecided(ctx context.Context) error {
	h.draining.Store(true)
	for {
		var wait chan struct{}
		h.finishing.Range(func(_, v any) bool {
			wait = v.(chan struct{})
			return false
		})
		if wait == nil {
			return nil
		}
		select {
		case <-wait:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// decided reports whether run id waits for decisions, has them all, and
// no one else goes on with it (unattended).
func (h *Hub) decided(ctx context.Context, id string) bool {
	r, err := store.Get[model.Run](ctx, h.store, store.Runs, id)
	return err == nil && Decided(r) && unattended(r)
}

// Decided reports whether r is paused for decisions a person has all made:
// resuming it goes on (a call waiting for a credential is not decided so).
func Decided(r *model.Run) bool {
	if r.Status != model.RunAwaitingApproval || len(r.Pending) == 0 {
		return false
	}
	for _, p := range r.Pending {
		if p.Decision == nil {
			return false
		}
	}
	return true
}

// unattended reports whether a decision of r came from a channel that goes
// on with nothing itself: a notification or the window of the desktop app,
// or the approval page. `hub approve` resumes the run it decided, and a
// client's form answers the execute that waits on it: FinishDecided leaves
// those runs to them, so two processes do not race for one run.
func unattended(r *model.Run) bool {
	for _, p := range r.Pending {
		if d := p.Decision; d != nil && (d.Channel == channelDesktop || d.Channel == channelPage || d.Channel == channelDashboard) {
			return true
		}
	}
	return false
}

// The channels of engine/approval (which only host code that handles a
// person's input may import) whose decisions no one waits on.
const (
	channelDesktop   = "desktop"
	channelPage      = "approval-page"
	channelDashboard = "dashboard" // the hosted hub's
)
