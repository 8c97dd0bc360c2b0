package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/run"
	"golang.org/x/term"
)

// waitForDecision waits, after hub exec printed a run that asks a person,
// for every call it waits for to be decided (a notification, the desktop
// app's window, the approval page, `hub approve` in another terminal), then
// goes on with the run and returns its new envelope; if the long-running
// hub went on with it first, it waits for that and returns how it ended. A
// status line on stderr says what it waits for. ctx ending (Ctrl-C) leaves
// the run pending: nil, nil.
func (e *env) waitForDecision(ctx context.Context, h *hub.Hub, env *hub.Envelope) (*hub.Envelope, error) {
	eng, err := h.Runs()
	if err != nil {
		return nil, err
	}
	line := newWaitLine(e)
	defer line.clear()
	start := time.Now()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		r, err := eng.Get(ctx, env.RunID)
		if err != nil && ctx.Err() == nil {
			return nil, err
		}
		switch {
		case ctx.Err() != nil:
			line.clear()
			fmt.Fprintf(e.stderr, "Left run %s waiting: decide with `capabilities hub approve %s`, then `capabilities hub exec --resume %s` shows how it ends.\n", env.RunID, env.RunID, env.RunID)
			return nil, nil
		case r.Status.Done() || hub.Decided(r):
			line.clear()
			next, err := h.Resume(ctx, env.RunID)
			if errors.Is(err, run.ErrRunningElsewhere) {
				break // the long-running hub goes on with it: wait for its end
			}
			return next, err
		case r.Status.Paused():
			undecided := 0
			for _, p := range r.Pending {
				if p.Decision == nil {
					undecided++
				}
			}
			line.show(fmt.Sprintf("waiting for a person to decide %d call(s) of run %s (a notification is shown when the desktop app runs; or `capabilities hub approve %s`): %s; Ctrl-C leaves it pending", undecided, env.RunID, env.RunID, time.Since(start).Round(time.Second)))
		default:
			line.show(fmt.Sprintf("run %s goes on in another process: %s", env.RunID, time.Since(start).Round(time.Second)))
		}
		select {
		case <-ctx.Done():
		case <-tick.C:
		}
	}
}

// waitLine is a status line: redrawn in place on a terminal, else a plain
// line when what it says changes, at most every 10 s.
type waitLine struct {
	w     io.Writer
	tty   bool
	drawn bool
	last  time.Time
}

func newWaitLine(e *env) *waitLine {
	if f, ok := e.rawErr.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		return &waitLine{w: f, tty: true}
	}
	return &waitLine{w: e.stderr}
}

func (l *waitLine) show(s string) {
	if l.tty {
		fmt.Fprintf(l.w, "\r\x1b[K%s", s)
		l.drawn = true
		return
	}
	if time.Since(l.last) >= 10*time.Second {
		fmt.Fprintln(l.w, s)
		l.last = time.Now()
	}
}

func (l *waitLine) clear() {
	if l.tty && l.drawn {
		fmt.Fprint(l.w, "\r\x1b[K")
		l.drawn = false
	}
}

// waitsByDefault reports whether hub exec waits for a decision when asked
// neither --wait nor --no-wait: when a person watches its terminal.
func (e *env) waitsByDefault() bool {
	f, ok := e.rawErr.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
