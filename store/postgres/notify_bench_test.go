package postgres_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/capabilities-sh/capabilities/store"
	"github.com/capabilities-sh/capabilities/store/postgres"
)

// BenchmarkPostgresPutRunParallel measures run records written by 8
// writers at once (each its own run), what a busy hub does: every such
// write notifies the change feeds (pg_notify in its statement), and
// PostgreSQL queues a transaction's notifications under one lock at
// commit, which the writers take in turn. One change feed listens, as a
// serving hub's would.
func BenchmarkPostgresPutRunParallel(b *testing.B) {
	pg := testenv.StartPostgres(b)
	u := pg.NewDatabase(b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := postgres.Migrate(ctx, u); err != nil {
		b.Fatal(err)
	}
	s, err := postgres.Open(ctx, u)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if c, ok := any(s).(store.Changer); ok {
		feed, err := c.Changes(ctx)
		if err != nil {
			b.Fatal(err)
		}
		go func() {
			for range feed {
			}
		}()
	}
	rec := map[string]any{"status": "running", "code": "return await github.create_issue({title: 'x'})", "pending": []string{}}
	b.ReportAllocs()
	b.SetParallelism(4) // 8 writers on 2 cores
	var n atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		id := "run-" + strconv.FormatInt(n.Add(1), 10)
		for pb.Next() {
			if err := s.Put(ctx, store.Runs, id, rec); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
