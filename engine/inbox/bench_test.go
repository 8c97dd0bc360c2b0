package inbox_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/inbox"
	"github.com/capabilities-sh/capabilities/engine/inbox/inboxtest"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/store"
)

// BenchmarkList is GET /api/inbox on a memory store holding 10 pending
// calls among 0 or 1,000 finished runs: what the event stream also reads
// on each change of the tenant's runs (debounced by 20 ms).
func BenchmarkList(b *testing.B) {
	for _, finished := range []int{0, 1000} {
		b.Run(fmt.Sprintf("finished=%d", finished), func(b *testing.B) { benchList(b, finished) })
	}
}

func benchList(b *testing.B, finished int) {
	s := inboxtest.New(b, inbox.Options{}, tnA)
	a := s.Tenants[tnA]
	for range 10 {
		a.Pending(b, writeCode)
	}
	ctx := context.Background()
	now := time.Now().UTC()
	for i := range finished {
		id := fmt.Sprintf("r%025d", i)
		if err := a.Store.Put(ctx, store.Runs, id, model.Run{ID: id, Status: model.RunCompleted, Code: "return 1", CreatedAt: now, UpdatedAt: now}); err != nil {
			b.Fatal(err)
		}
	}
	req, _ := http.NewRequest(http.MethodGet, s.URL+"/api/inbox", nil)
	req.Header.Set("Authorization", "Bearer "+inboxtest.Token(tnA))
	b.ResetTimer()
	for b.Loop() {
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			b.Fatal(res.Status)
		}
	}
}
