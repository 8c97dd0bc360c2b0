package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/capabilities-sh/capabilities/store"
)

// changes checks the change feed (store.Changer): every write and removal
// of a followed kind made through writer after the feed is open is heard
// on reader's feed (reader and writer are one Store, or two on one store
// as two processes open it), and a blob's write is not.
func changes(t *testing.T, reader, writer store.Store) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, ok := reader.(store.Changer)
	if !ok {
		t.Fatalf("%T has no change feed (store.Changer): other processes would not hear of its writes", reader)
	}
	feed, err := c.Changes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := writer.Put(ctx, store.Blobs, "b1", record{Name: "not followed"}); err != nil {
		t.Fatal(err)
	}
	type change struct {
		Kind store.Kind
		ID   string
	}
	var want []change
	for _, k := range store.Followed {
		want = append(want, change{k, "w-" + string(k)})
		if err := writer.Put(ctx, k, "w-"+string(k), record{Name: "put"}); err != nil {
			t.Fatal(err)
		}
	}
	want = append(want, change{store.Runs, "u1"}, change{store.Sources, "w-sources"})
	if err := writer.Update(ctx, store.Runs, "u1", func([]byte) ([]byte, error) { return []byte(`{"name":"updated"}`), nil }); err != nil {
		t.Fatal(err)
	}
	if err := writer.Delete(ctx, store.Sources, "w-sources"); err != nil {
		t.Fatal(err)
	}
	// The changes of one record may come once or several times, in any
	// order across records: wait for each.
	heard := map[change]bool{}
	deadline := time.After(testenv.Timeout(30 * time.Second))
	for _, w := range want {
		for !heard[w] {
			select {
			case ch, ok := <-feed:
				if !ok {
					t.Fatal("the change feed closed before its context ended")
				}
				if ch.Resync {
					continue
				}
				if ch.Kind == store.Blobs {
					t.Errorf("the feed reported a blob's write (%s), which no one follows", ch.ID)
				}
				heard[change{ch.Kind, ch.ID}] = true
			case <-deadline:
				t.Fatalf("the change feed did not report %s/%s; it reported %v", w.Kind, w.ID, heard)
			}
		}
	}
	cancel()
	for range feed { // closed once its context ends
	}
}
