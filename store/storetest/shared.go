package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/capabilities-sh/capabilities/store"
	"github.com/google/go-cmp/cmp"
)

// RunShared runs the tests of one store opened twice, as two processes
// open it: open returns two Stores on the same fresh, empty store (the
// file store's folder, the same database). Every store shared across
// processes passes it; the memory store shares nothing and does not.
func RunShared(t *testing.T, open func(t *testing.T) (a, b store.Store)) {
	ctx := context.Background()

	t.Run("UpdateSerializesAcrossInstances", func(t *testing.T) {
		a, b := open(t)
		const each = 20
		var wg sync.WaitGroup
		errs := make(chan error, 2*each)
		for _, s := range []store.Store{a, b} {
			for range each {
				wg.Go(func() {
					errs <- store.UpdateJSON(ctx, s, store.Profiles, "default", func(old *record) (*record, error) {
						if old == nil {
							old = &record{Name: "default"}
						}
						old.Count++
						return old, nil
					})
				})
			}
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		for i, s := range []store.Store{a, b} {
			got, err := store.Get[record](ctx, s, store.Profiles, "default")
			if err != nil {
				t.Fatal(err)
			}
			if got.Count != 2*each {
				t.Errorf("instance %d reads count = %d after %d concurrent updates from two instances; updates were lost", i, got.Count, 2*each)
			}
		}
	})

	t.Run("ChangesHeardByTheOther", func(t *testing.T) {
		a, b := open(t)
		changes(t, b, a)
	})

	t.Run("WritesSeenByTheOther", func(t *testing.T) {
		a, b := open(t)
		var genBefore store.Generation
		ga, isGen := b.(store.Generationer)
		if isGen {
			var err error
			if genBefore, err = ga.Generation(); err != nil {
				t.Fatal(err)
			}
		}
		if err := a.Put(ctx, store.Sources, "everything", record{Name: "everything", Count: 1}); err != nil {
			t.Fatal(err)
		}
		got, err := store.Get[record](ctx, b, store.Sources, "everything")
		if err != nil || got.Count != 1 {
			t.Fatalf("the other instance reads %+v, %v; want the record just written", got, err)
		}
		if isGen {
			after, err := ga.Generation()
			if err != nil {
				t.Fatal(err)
			}
			if after == genBefore {
				t.Error("the other instance's generation did not change after a source was written")
			}
		}
		if err := b.Delete(ctx, store.Sources, "everything"); err != nil {
			t.Fatal(err)
		}
		if err := a.Get(ctx, store.Sources, "everything", &record{}); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Get after the other instance's Delete = %v, want ErrNotFound", err)
		}
	})

	t.Run("AppendFromBoth", func(t *testing.T) {
		a, b := open(t)
		var wg sync.WaitGroup
		for i, s := range []store.Store{a, b} {
			wg.Go(func() {
				for j := range 15 {
					if err := s.Append(ctx, store.Runs, "r1", fmt.Appendf(nil, `{"s":%d,"j":%d}`, i, j)); err != nil {
						t.Error(err)
					}
				}
			})
		}
		wg.Wait()
		for _, s := range []store.Store{a, b} {
			lines, err := s.ReadLog(ctx, store.Runs, "r1")
			if err != nil || len(lines) != 30 {
				t.Fatalf("ReadLog = %d lines, %v; want 30", len(lines), err)
			}
			// Each instance's lines are in its own order.
			next := map[byte]int{}
			for _, l := range lines {
				var s, j int
				if _, err := fmt.Sscanf(string(l), `{"s":%d,"j":%d}`, &s, &j); err != nil {
					t.Fatalf("line %q: %v", l, err)
				}
				if j != next[byte(s)] {
					t.Fatalf("instance %d's line %d came at its position %d", s, j, next[byte(s)])
				}
				next[byte(s)]++
			}
		}
	})

	t.Run("HoldAcrossInstances", func(t *testing.T) {
		a, b := open(t)
		release, err := a.Hold(ctx, store.Runs, "r1")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.Hold(ctx, store.Runs, "r1"); !errors.Is(err, store.ErrBusy) {
			t.Fatalf("Hold on the other instance while held = %v, want ErrBusy", err)
		}
		if held, err := b.Held(ctx, store.Runs, "r1"); err != nil || !held {
			t.Errorf("Held on the other instance while held = %v, %v; want true", held, err)
		}
		release()
		again, err := b.Hold(ctx, store.Runs, "r1")
		if err != nil {
			t.Fatalf("Hold on the other instance after release: %v", err)
		}
		if _, err := a.Hold(ctx, store.Runs, "r1"); !errors.Is(err, store.ErrBusy) {
			t.Errorf("Hold back on the first instance while the other holds = %v, want ErrBusy", err)
		}
		again()
	})

	t.Run("Generation", func(t *testing.T) {
		a, b := open(t)
		g, ok := b.(store.Generationer)
		if !ok {
			t.Skip("the store keeps no generation")
		}
		before, err := g.Generation()
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Put(ctx, store.Runs, "r1", record{}); err != nil {
			t.Fatal(err)
		}
		if err := a.Append(ctx, store.Runs, "r1", []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
		same, err := g.Generation()
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(before, same, cmp.AllowUnexported(store.Generation{})); diff != "" {
			t.Errorf("a run's write changed the generation (-before +after):\n%s", diff)
		}
		for _, k := range []store.Kind{store.Manifests, store.Connections, store.Policies, store.Profiles} {
			if err := a.Update(ctx, k, "x", func([]byte) ([]byte, error) { return []byte(`{}`), nil }); err != nil {
				t.Fatal(err)
			}
			after, err := g.Generation()
			if err != nil {
				t.Fatal(err)
			}
			if after == same {
				t.Errorf("an update of %s did not change the generation", k)
			}
			same = after
		}
	})
}
