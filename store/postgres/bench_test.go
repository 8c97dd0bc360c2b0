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
