package hub

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/run"
	"github.com/capabilities-sh/capabilities/store"
	"github.com/fsnotify/fsnotify"
)

// FinishDecided resumes each paused run as soon as every call it waits for
// is decided, from a notification, the desktop app's window or the approval
// page (unattended), so that an approved write is made then, not
// when the agent comes back, and the agent's next execute({resume}) gets
// the finished envelope at once. The long-running hub runs it (the desktop
// app, serve --http); `hub exec` waits for its own run (Decided). A run
// another process resumes meanwhile is left to it: resuming takes the
// run's lock (run.ErrRunningElsewhere), so no call is made twice (I6). It
// watches the store's runs folder (one inotify watch), first resumes the
// runs decided before it started, and returns when ctx is done.
func (h *Hub) FinishDecided(ctx context.Context) error {
	f, ok := h.store.(*store.File)
	if !ok {
		return nil
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("following decisions: %w", err)
	}
	defer w.Close()
	dir := filepath.Dir(f.Path(store.Runs, "r0"))
	if err := w.Add(dir); err != nil {
		return fmt.Errorf("following decisions: %w", err)
	}
	var (
		mu      sync.Mutex
		resumes = map[string]bool{} // runs being resumed here
		changed = map[string]bool{}
		wg      sync.WaitGroup
	)
	defer wg.Wait()
	var debounce <-chan time.Time
	// Decisions made while no hub followed them (the app was closed, a
	// person decided in a terminal whose approve stopped) are read once,
	// after the watch is set, so none falls between.
	if paused, err := h.runEngine().Paused(ctx); err == nil {
		for _, r := range paused {
			if Decided(&r) && unattended(&r) {
				changed[r.ID] = true
				debounce = time.After(0)
			}
		}
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return nil
			}
			name := filepath.Base(ev.Name)
			id, isRecord := strings.CutSuffix(name, ".json")
			if !isRecord || store.ValidID(id) != nil || ev.Op&(fsnotify.Create|fsnotify.Write|fsnotify.Rename) == 0 {
				continue
			}
			changed[id] = true
			if debounce == nil {
				debounce = time.After(20 * time.Millisecond)
			}
		case err, ok := <-w.Errors:
			if !ok {
				return nil
			}
			h.log.Warn("following decisions", "err", err)
		case <-debounce:
			debounce = nil
			for id := range changed {
				delete(changed, id)
				mu.Lock()
				busy := resumes[id]
				mu.Unlock()
				if busy || !h.decided(ctx, id) {
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
					case errors.Is(err, run.ErrRunningElsewhere), ctx.Err() != nil:
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
		if d := p.Decision; d != nil && (d.Channel == channelDesktop || d.Channel == channelPage) {
			return true
		}
	}
	return false
}

// The channels of engine/approval (which only host code that handles a
// person's input may import) whose decisions no one waits on.
const (
	channelDesktop = "desktop"
	channelPage    = "approval-page"
)
