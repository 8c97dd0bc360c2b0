package cli

import (
	"context"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/capabilities-sh/capabilities/store"
)

// goneEvery is how often serve looks whether its hub's folder is still
// there: one read of hub.json.
const goneEvery = 2 * time.Second

// watchGone follows the hub's folder while serve runs: deleted, moved away
// or replaced by another hub (`rm -rf ~/.capabilities`, a cleanup tool,
// `hub init` after that), every call is answered with an error that says
// so (mcpserver.Options.Unavailable), instead of each failing on a file
// that is gone, and stderr says it once per change. A hub moved back is
// served again. restart is what the person does to serve a new hub. A hub
// in a database has no folder to lose: nothing is followed.
func watchGone(ctx context.Context, st hubStore, stderr io.Writer, restart string) func() error {
	if _, ok := st.(*store.File); !ok {
		return func() error { return nil }
	}
	var gone atomic.Pointer[error]
	dir, id := st.Dir(), st.Hub().ID
	go func() {
		t := time.NewTicker(goneEvery)
		defer t.Stop()
		last := ""
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			what := store.Gone(dir, id)
			if what == last {
				continue
			}
			last = what
			if what == "" {
				gone.Store(nil)
				fmt.Fprintf(stderr, "capabilities: the hub at %s is back: serving it again\n", dir)
				continue
			}
			err := goneError(dir, what, time.Now(), restart)
			gone.Store(&err)
			fmt.Fprintf(stderr, "capabilities: %v\n", err)
		}
	}()
	return func() error {
		if err := gone.Load(); err != nil {
			return *err
		}
		return nil
	}
}

// goneError is what an agent's call is answered with. It names the folder
// only (nothing read from the hub: the model gets no secret from it).
func goneError(dir, what string, at time.Time, restart string) error {
	when := at.UTC().Format("15:04:05")
	if what == store.HubReplaced {
		return fmt.Errorf("the hub at %s %s while `capabilities hub serve` served it (at %s UTC): nothing runs until serve starts again on the hub there now, and runs that waited for an approval went with the old one; tell the person: %s", dir, what, when, restart)
	}
	return fmt.Errorf("the hub at %s %s while `capabilities hub serve` served it (at %s UTC): nothing runs until there is a hub again, and runs that waited for an approval went with it; tell the person: run `capabilities hub init` to set up a new hub, then %s", dir, what, when, restart)
}
