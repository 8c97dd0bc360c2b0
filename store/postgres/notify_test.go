package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/capabilities-sh/capabilities/store"
	"github.com/capabilities-sh/capabilities/store/postgres"
)

// next returns the feed's next change, failing the test when none comes.
func next(t *testing.T, feed <-chan store.Change) store.Change {
	t.Helper()
	select {
	case c, ok := <-feed:
		if !ok {
			t.Fatal("the change feed closed")
		}
		return c
	case <-time.After(testenv.Timeout(60 * time.Second)):
		t.Fatal("no change reported")
	}
	panic("unreachable")
}

// TestChanges: the feed of one process (Store) hears another's writes once
// they commit, not a write that rolled back, and keeps hearing them after
// its connection is lost (ended by an administrator, PostgreSQL
// restarted), saying Resync first for what it may have missed.
func TestChanges(t *testing.T) {
	pg := testenv.StartPostgres(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reader, u := fresh(t, pg)
	writer := open(t, u)
	feed, err := reader.Changes(ctx)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("RolledBackUnheard", func(t *testing.T) {
		refused := errors.New("refused")
		if err := writer.Update(ctx, store.Runs, "rolled-back", func([]byte) ([]byte, error) { return nil, refused }); !errors.Is(err, refused) {
			t.Fatalf("Update = %v, want fn's error", err)
		}
		if err := writer.Put(ctx, store.Runs, "committed", map[string]int{}); err != nil {
			t.Fatal(err)
		}
		// Notifications come in the order of the commits: the one after.
		if c := next(t, feed); c != (store.Change{Kind: store.Runs, ID: "committed"}) {
			t.Fatalf("first change = %+v, want runs/committed (a write that rolled back was heard?)", c)
		}
	})

	// hears reports whether the feed said Resync before it heard a write of
	// the writer's; a write made before the feed listens again is missed
	// (what Resync says), so it writes again after a Resync.
	hears := func(t *testing.T, id string) (resynced bool) {
		t.Helper()
		for try := 0; ; try++ {
			id := fmt.Sprintf("%s-%d", id, try)
			// The writer's pool may have lost its connections too: its
			// first call after may fail (clearly), the next connects.
			for {
				err := writer.Put(ctx, store.Policies, id, map[string]int{})
				if err == nil {
					break
				}
				t.Logf("a write on a lost connection: %v", err)
			}
			for {
				c := next(t, feed)
				if c.Resync {
					resynced = true
					break
				}
				if c == (store.Change{Kind: store.Policies, ID: id}) {
					return resynced
				}
			}
		}
	}

	t.Run("ListenerEnded", func(t *testing.T) {
		superuser(t, pg.URL("postgres"), `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'capabilities-changes'`)
		if !hears(t, "after-terminate") {
			t.Error("no Resync after the feed's connection was ended")
		}
	})

	t.Run("Restart", func(t *testing.T) {
		pg.Stop(t)
		pg.Start(t)
		if !hears(t, "after-restart") {
			t.Error("no Resync after PostgreSQL restarted")
		}
	})

	t.Run("CloseEndsTheFeed", func(t *testing.T) {
		other := open(t, u)
		f, err := other.Changes(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		_ = other.Close()
		select {
		case _, ok := <-f:
			for ok {
				_, ok = <-f
			}
		case <-time.After(testenv.Timeout(30 * time.Second)):
			t.Fatal("the feed of a closed store stays open")
		}
		if _, err := other.Changes(context.Background()); err == nil {
			t.Error("Changes on a closed store: no error")
		}
	})
}

// TestChangesSlowFeed: one feed that does not read holds up no other on
// the shared connection (of its tenant or another's), and says Resync
// once it reads again, for what it missed.
func TestChangesSlowFeed(t *testing.T) {
	pg := testenv.StartPostgres(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	root, _ := fresh(t, pg)
	a := root.Tenant(tenantA)
	// The reading feed's queue holds 10,000 changes (the default), the
	// other's 200.
	fast, err := a.Changes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	postgres.SetFeedQueue(t, 200)
	slow, err := a.Changes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const n = 1000 // more than the slow feed's queue and channel hold
	// The reading feed is read as the writes go: it hears every one, in
	// order, however far behind the other feed is (a feed that waited for
	// the slow one would stop after a few hundred), then "end".
	fastDone := make(chan error, 1)
	go func() {
		want, resynced, ever := 0, false, false
		for {
			select {
			case c, ok := <-fast:
				if !ok {
					fastDone <- errors.New("the reading feed closed")
					return
				}
				if c.Resync {
					// Its connection lost and made again (this machine may
					// be very busy): the changes it stands for are allowed
					// to be missed, nothing else is.
					t.Logf("the reading feed said Resync after %d changes", want)
					resynced, ever = true, true
					continue
				}
				if c.ID == "end" {
					if want != n && !ever {
						fastDone <- fmt.Errorf("the reading feed heard %d of %d changes before the end, and no Resync", want, n)
					} else {
						fastDone <- nil
					}
					return
				}
				if resynced {
					if _, err := fmt.Sscanf(c.ID, "r%d", &want); err != nil {
						fastDone <- err
						return
					}
					resynced = false
				}
				if c.ID != fmt.Sprintf("r%d", want) {
					fastDone <- fmt.Errorf("the reading feed heard %+v; want runs/r%d, in order", c, want)
					return
				}
				want++
			case <-time.After(testenv.Timeout(60 * time.Second)):
				fastDone <- fmt.Errorf("the reading feed stalled after %d of %d changes", want, n)
				return
			}
		}
	}()
	for i := range n {
		if err := a.Put(ctx, store.Runs, fmt.Sprintf("r%d", i), map[string]int{"i": i}); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Put(ctx, store.Runs, "end", map[string]int{}); err != nil {
		t.Fatal(err)
	}
	if err := <-fastDone; err != nil {
		t.Fatal(err)
	}
	// The feed that did not read hears what its queue kept, then Resync
	// (for what it dropped).
	heard := 0
	for !next(t, slow).Resync {
		heard++
	}
	if heard >= n {
		t.Errorf("the feed that did not read heard all %d changes: its queue is not bounded", heard)
	}
	t.Logf("the slow feed heard %d of %d changes, then Resync", heard, n)
}
