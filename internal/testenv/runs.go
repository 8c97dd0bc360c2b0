package testenv

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/store"
)

// PutFinishedRuns writes n completed runs into st, one a minute back from
// now (all within the default retention): a hub's history, for benchmarks.
func PutFinishedRuns(tb testing.TB, st store.Store, n int) {
	tb.Helper()
	for i := range n {
		at := time.Now().Add(-time.Duration(i) * time.Minute)
		r := model.Run{ID: fmt.Sprintf("r%020d", i), Status: model.RunCompleted, Code: "return 1", Result: json.RawMessage("1"), CreatedAt: at, UpdatedAt: at}
		if err := st.Put(context.Background(), store.Runs, r.ID, r); err != nil {
			tb.Fatal(err)
		}
	}
}
