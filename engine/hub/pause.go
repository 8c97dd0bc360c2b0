package hub

import (
	"context"
	"errors"
	"fmt"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/run"
	"os"
	"path/filepath"
	"time"

	"github.com/capabilities-sh/capabilities/engine/policy"
	"github.com/capabilities-sh/capabilities/store"
)

// PausedFile, in the store directory, pauses the hub while it exists: every
// call that policy would run asks a person first (a deny stays a deny).
// Every process over the store sees it on its next call.
const PausedFile = "paused"

// PausedMessage is the verdict's message while the hub is paused.
const PausedMessage = "the hub is paused: every call asks, nothing runs unseen (`capabilities hub resume` ends the pause)"

// dirStore is a store kept in a directory (store.File).
type dirStore interface{ Dir() string }

// pausedID is the record (of kind policies) that pauses a hub whose
// records are not files (a database, store/postgres): every process over
// the database sees it on its next call, as every process over a folder
// sees PausedFile.
const pausedID = "paused"

// pausedRecord reports whether the pause is a record in the store rather
// than PausedFile in the store's directory: a store with a directory (the
// machine's hub folder) whose records are not files in it.
func (h *Hub) pausedRecord() bool {
	_, dir := h.store.(dirStore)
	_, files := h.store.(pather) // records are files: store.File
	return dir && !files
}

func (h *Hub) pausedPath() (string, error) {
	d, ok := h.store.(dirStore)
	if !ok {
		return "", errors.New("this hub's store is not a directory; it cannot be paused")
	}
	return filepath.Join(d.Dir(), PausedFile), nil
}

// Paused says whether the hub is paused. A pause kept in a database that
// cannot be read now counts as paused: calls ask rather than run unseen.
func (h *Hub) Paused() bool {
	if h.pausedRecord() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var at string
		err := h.store.Get(ctx, store.Policies, pausedID, &at)
		return !errors.Is(err, store.ErrNotFound)
	}
	p, err := h.pausedPath()
	if err != nil {
		return false
	}
	_, err = os.Stat(p)
	return err == nil
}

// SetPaused pauses the hub (the flag is written atomically, mode 600) or
// resumes it (the flag is removed). Either is a no-op when already so.
func (h *Hub) SetPaused(paused bool) error {
	if h.pausedRecord() {
		ctx := context.Background()
		if !paused {
			if err := h.store.Delete(ctx, store.Policies, pausedID); err != nil && !errors.Is(err, store.ErrNotFound) {
				return fmt.Errorf("resuming the hub: %w", err)
			}
			return nil
		}
		if err := h.store.Put(ctx, store.Policies, pausedID, time.Now().UTC().Format(time.RFC3339)); err != nil {
			return fmt.Errorf("pausing the hub: %w", err)
		}
		return nil
	}
	p, err := h.pausedPath()
	if err != nil {
		return fmt.Errorf("pausing the hub: %w", err)
	}
	if !paused {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("resuming the hub: %w", err)
		}
		return nil
	}
	if err := store.WriteFileAtomic(p, []byte(time.Now().UTC().Format(time.RFC3339)+"\n")); err != nil {
		return fmt.Errorf("pausing the hub: %w", err)
	}
	return nil
}

// pause turns a verdict that is not a deny into one that asks, with the
// reason paused, while the hub is paused: a tool allowed for the session
// asks too. The message keeps why it would have asked anyway.
func (h *Hub) pause(v policy.Verdict) policy.Verdict {
	if v.Action == policy.Deny || !h.Paused() {
		return v
	}
	msg := PausedMessage
	if v.Action == policy.Ask && v.Message != "" {
		msg += "; " + v.Message
	}
	return policy.Verdict{Action: policy.Ask, Reason: policy.ReasonPaused, Message: msg, Rule: v.Rule}
}

// ResumedRun is a run ContinuePaused went on with, and its status after.
type ResumedRun struct {
	RunID  string `json:"runId"`
	Status string `json:"status"`
}

// ContinuePaused goes on with the runs whose every undecided call asked only
// because the hub was paused (run.PausedOnly), once it is not: each such
// call is decided again (Resume), and runs here when policy allows it. What
// resumes the hub calls it: the CLI, the desktop app, the console.
func (h *Hub) ContinuePaused(ctx context.Context) ([]ResumedRun, error) {
	out := []ResumedRun{}
	if h.Paused() {
		return out, nil
	}
	runs, err := h.runEngine().List(ctx, string(model.RunAwaitingApproval))
	if err != nil {
		return nil, err
	}
	for _, r := range runs {
		if !run.PausedOnly(&r) {
			continue
		}
		env, err := h.Resume(ctx, r.ID)
		if err != nil {
			return out, fmt.Errorf("resuming run %s: %w", r.ID, err)
		}
		out = append(out, ResumedRun{RunID: r.ID, Status: string(env.Status)})
	}
	return out, nil
}
