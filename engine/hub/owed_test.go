package hub_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/store"
)

// TestDirectCallOwedRun: a direct call that waits for a person is the run
// the same call made again continues (the same arguments in another key
// order too), until its outcome is handed over once; another call, a run
// pruned meanwhile, or an outcome older than a day is a new run.
func TestDirectCallOwedRun(t *testing.T) {
	h, st, _ := profileHub(t)
	ctx := context.Background()
	// call returns the run and its status, as "<run> <status>".
	call := func(args string) string {
		t.Helper()
		env, err := h.DirectCall(ctx, "writer.record", json.RawMessage(args))
		if err != nil {
			t.Fatal(err)
		}
		return env.RunID + " " + env.Status
	}
	first := call(`{"item":"x","n":{"a":1,"b":2}}`)
	if got := call(`{"n":{"b":2,"a":1},"item":"x"}`); got != first {
		t.Errorf("the same call again = %s, want the waiting run %s", got, first)
	}
	for _, other := range []string{`{"item":"y"}`, `{"item":"x","n":{"a":1,"b":2},"big":9007199254740993}`} {
		if got := call(other); got[:21] == first[:21] {
			t.Errorf("another call %s continues the waiting run %s", other, got)
		}
	}
	if a, b := call(`{"item":"z","big":9007199254740993}`), call(`{"item":"z","big":9007199254740992}`); a[:21] == b[:21] {
		t.Errorf("two calls whose numbers differ beyond 2^53 are the same run %s", a)
	}
	id := first[:21]

	// The person cancels it elsewhere: the call made again hands over the
	// cancellation, once.
	eng, _ := h.Runs()
	if _, err := eng.Cancel(ctx, id); err != nil {
		t.Fatal(err)
	}
	if got := call(`{"item":"x","n":{"a":1,"b":2}}`); got != id+" cancelled" {
		t.Errorf("the same call after the run was cancelled = %s, want %s cancelled", got, id)
	}
	next := call(`{"item":"x","n":{"a":1,"b":2}}`)
	if next[:21] == id {
		t.Fatalf("the call after the outcome was handed over continues %s", next)
	}

	// Pruned meanwhile: a new run.
	if err := st.Delete(ctx, store.Runs, next[:21]); err != nil {
		t.Fatal(err)
	}
	pruned := call(`{"item":"x","n":{"a":1,"b":2}}`)
	if pruned[:21] == next[:21] || pruned[22:] != "awaiting_approval" {
		t.Errorf("the same call after its run was pruned = %s, want a new waiting run", pruned)
	}

	// Ended more than a day ago: a new run.
	if _, err := eng.Cancel(ctx, pruned[:21]); err != nil {
		t.Fatal(err)
	}
	r, err := store.Get[model.Run](ctx, st, store.Runs, pruned[:21])
	if err != nil {
		t.Fatal(err)
	}
	r.UpdatedAt = time.Now().Add(-25 * time.Hour)
	if err := st.Put(ctx, store.Runs, r.ID, r); err != nil {
		t.Fatal(err)
	}
	if got := call(`{"item":"x","n":{"a":1,"b":2}}`); got[:21] == pruned[:21] {
		t.Errorf("the same call a day after its run ended = %s, want a new run", got)
	}
}
