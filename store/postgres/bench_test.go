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

// BenchmarkPostgres measures the store's calls on a real PostgreSQL (this
// machine, over loopback TCP, fsync on): one Put, Get, Update and Append an
// op, each committed before it returns.
func BenchmarkPostgres(b *testing.B) {
	pg := testenv.StartPostgres(b)
	u := pg.NewDatabase(b)
	ctx := context.Background()
	if err := postgres.Migrate(ctx, u); err != nil {
		b.Fatal(err)
	}
	s, err := postgres.Open(ctx, u)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	type rec struct {
		Name  string `json:"name"`
		Count int    `json:"count"`
		Pad   string `json:"pad"`
	}
	pad := "a source's record, about half a kilobyte of JSON once indented: " +
		"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" +
		"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" +
		"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	// A run record is committed without waiting for the drive (as the file
	// store does not sync it); every other kind is committed synchronously.
	for _, kind := range []store.Kind{store.Runs, store.Sources} {
		b.Run("Put/"+string(kind), func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if err := s.Put(ctx, kind, "put-"+strconv.Itoa(i%100), rec{Name: "x", Count: i, Pad: pad}); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
	if err := s.Put(ctx, store.Sources, "get", rec{Name: "get", Pad: pad}); err != nil {
		b.Fatal(err)
	}
	b.Run("Get", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var r rec
			if err := s.Get(ctx, store.Sources, "get", &r); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, kind := range []store.Kind{store.Runs, store.Profiles} {
		b.Run("Update/"+string(kind), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				err := store.UpdateJSON(ctx, s, kind, "update", func(old *rec) (*rec, error) {
					if old == nil {
						old = &rec{Name: "update", Pad: pad}
					}
					old.Count++
					return old, nil
				})
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("Append", func(b *testing.B) {
		b.ReportAllocs()
		line := []byte(`{"seq":1,"kind":"call","tool":"github.create_issue","args":{"title":"a journal line of about 120 bytes"}}`)
		for b.Loop() {
			if err := s.Append(ctx, store.Runs, "append", line); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("AppendParallel", func(b *testing.B) {
		b.ReportAllocs()
		line := []byte(`{"seq":1,"kind":"call","tool":"github.create_issue","args":{"title":"a journal line of about 120 bytes"}}`)
		b.SetParallelism(4) // 8 appenders on 2 cores, each to its own run's journal: group commit shares the WAL flushes
		var n atomic.Int64
		b.RunParallel(func(pb *testing.PB) {
			id := "append-parallel-" + strconv.FormatInt(n.Add(1), 10)
			for pb.Next() {
				if err := s.Append(ctx, store.Runs, id, line); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

// BenchmarkPostgresHold measures a claim taken and released (what every
// run that calls a tool does once), on a holds table fresh and after churn
// runs took and released theirs (the dead rows a busy hub leaves between
// two autovacuums: at 300 runs a second, 20,000 in about a minute), and
// the same with synchronous_commit off for the database, to see the
// statements' cost apart from the drive's.
//
//	go test ./store/postgres -run '^$' -bench BenchmarkPostgresHold -benchmem
func BenchmarkPostgresHold(b *testing.B) {
	pg := testenv.StartPostgres(b)
	ctx := context.Background()
	for _, c := range []struct {
		churn int
		sync  bool
	}{{0, true}, {20000, true}, {0, false}, {20000, false}} {
		name := "churn-" + strconv.Itoa(c.churn)
		if !c.sync {
			// The statements' own cost, without the drive's.
			name += "/synchronous_commit-off"
		}
		churn := c.churn
		b.Run(name, func(b *testing.B) {
			u := pg.NewDatabase(b)
			if !c.sync {
				u += "&options=-c%20synchronous_commit%3Doff"
			}
			if err := postgres.Migrate(ctx, u); err != nil {
				b.Fatal(err)
			}
			s, err := postgres.Open(ctx, u)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			hold := func(i int) {
				release, err := s.Hold(ctx, store.Runs, "r"+strconv.Itoa(i))
				if err != nil {
					b.Fatal(err)
				}
				release()
			}
			for i := range churn {
				hold(i)
			}
			b.ReportAllocs()
			i := churn
			for b.Loop() {
				hold(i)
				i++
			}
		})
	}
}
