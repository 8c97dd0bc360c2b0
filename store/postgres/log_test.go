package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/capabilities-sh/capabilities/store"
	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
)

// TestLogWriteThenSync: a line Write returns is committed (another
// process's Store reads it at once), in order with Append's lines, and
// Sync flushes the write-ahead log past it: what Log promises, with Write
// not waiting for the drive (the file store's write without fdatasync).
func TestLogWriteThenSync(t *testing.T) {
	pg := testenv.StartPostgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(time.Minute))
	defer cancel()
	s, u := fresh(t, pg)
	other := open(t, u)
	c, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())

	l, err := s.OpenLog(ctx, store.Runs, "r1")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.Append([]byte(`{"n":1}`)); err != nil {
		t.Fatal(err)
	}
	if err := l.Write([]byte(`{"n":2}`)); err != nil {
		t.Fatal(err)
	}
	var written int64
	if err := c.QueryRow(ctx, `SELECT pg_current_wal_insert_lsn() - '0/0'`).Scan(&written); err != nil {
		t.Fatal(err)
	}
	got, err := other.ReadLog(ctx, store.Runs, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{`{"n":1}`, `{"n":2}`}, strs(got)); diff != "" {
		t.Fatalf("another Store's ReadLog right after Write (-want +got):\n%s", diff)
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	var flushed int64
	if err := c.QueryRow(ctx, `SELECT pg_current_wal_flush_lsn() - '0/0'`).Scan(&flushed); err != nil {
		t.Fatal(err)
	}
	if flushed < written {
		t.Fatalf("after Sync the write-ahead log is flushed to %d, before the written line's end %d", flushed, written)
	}
	if err := l.Write([]byte("two\nlines")); err == nil {
		t.Fatal("Write of a line holding a newline succeeded; want it refused")
	}
	if err := l.Append([]byte(`{"n":3}`)); err != nil {
		t.Fatal(err)
	}
	got, err = other.ReadLog(ctx, store.Runs, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{`{"n":1}`, `{"n":2}`, `{"n":3}`}, strs(got)); diff != "" {
		t.Fatalf("ReadLog (-want +got):\n%s", diff)
	}
}

func strs(lines [][]byte) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = string(l)
	}
	return out
}
