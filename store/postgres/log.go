package postgres

// Logs: a record's lines, a row of log_lines each.

import (
	"bytes"
	"context"
	"fmt"

	"github.com/capabilities-sh/capabilities/store"
	"github.com/jackc/pgx/v5"
)

func (s *Store) Append(ctx context.Context, kind store.Kind, id string, line []byte) error {
	if err := s.check(kind, id); err != nil {
		return err
	}
	return s.appendLine(ctx, kind, id, line)
}

func (s *Store) appendLine(ctx context.Context, kind store.Kind, id string, line []byte) error {
	if bytes.ContainsAny(line, "\n\r") {
		return fmt.Errorf("appending to %s/%s: a log line must not contain a newline", kind, id)
	}
	// One statement, committed (flushed to the write-ahead log, with the
	// default synchronous_commit) before it returns. It takes the log's
	// lock (a transaction-scoped advisory lock) before its line gets its
	// seq, so lines commit in the order of their seq: a reader never sees
	// a line appear before one it has already read.
	if _, err := s.sh.pool.Exec(ctx, insertLine, string(kind), id, line, s.tenant, s.lock); err != nil {
		return s.fail(fmt.Sprintf("appending to %s/%s", kind, id), err)
	}
	return nil
}

// insertLine appends a line to the log of the tenant $4 ($5 its lock
// prefix).
const insertLine = `WITH l AS (SELECT pg_advisory_xact_lock(hashtextextended('log/' || $5 || $1 || '/' || $2, 0)))
INSERT INTO log_lines (tenant, kind, id, line) SELECT $4, $1, $2, $3 FROM l`

// writeLine is appendLine without waiting for the drive (Log.Write, the
// file store's write without fdatasync), in one round trip: committed, so
// in PostgreSQL when it returns (a hub process that dies leaves it
// written), and made durable by the next synchronous commit on the
// database (the log's next Append or Sync, or anyone's), since the
// write-ahead log is flushed in order.
func (s *Store) writeLine(ctx context.Context, kind store.Kind, id string, line []byte) error {
	if bytes.ContainsAny(line, "\n\r") {
		return fmt.Errorf("appending to %s/%s: a log line must not contain a newline", kind, id)
	}
	batch := &pgx.Batch{}
	batch.Queue(`BEGIN`)
	batch.Queue(`SELECT set_config('synchronous_commit', 'off', true)`)
	batch.Queue(insertLine, string(kind), id, line, s.tenant, s.lock)
	batch.Queue(`COMMIT`)
	if err := s.sh.pool.SendBatch(ctx, batch).Close(); err != nil {
		return s.fail(fmt.Sprintf("appending to %s/%s", kind, id), err)
	}
	return nil
}

// syncLog makes every line written so far durable: a transaction that
// writes to the write-ahead log (a transactional logical message, which
// nothing reads) commits synchronously, and its flush covers every record
// before it.
func (s *Store) syncLog(ctx context.Context, kind store.Kind, id string) error {
	if _, err := s.sh.pool.Exec(ctx, `SELECT pg_logical_emit_message(true, 'capabilities-sync', '')`); err != nil {
		return s.fail(fmt.Sprintf("syncing the log of %s/%s", kind, id), err)
	}
	return nil
}

func (s *Store) OpenLog(ctx context.Context, kind store.Kind, id string) (store.Log, error) {
	if err := s.check(kind, id); err != nil {
		return nil, err
	}
	return &pgLog{s: s, kind: kind, id: id}, nil
}

// pgLog appends a line a statement. Append commits synchronously (the
// file store's write and fdatasync), Write without waiting for the drive
// (its write alone), Sync flushes what Write left.
type pgLog struct {
	s    *Store
	kind store.Kind
	id   string
}

func (l *pgLog) Append(line []byte) error {
	return l.s.appendLine(context.Background(), l.kind, l.id, line)
}

func (l *pgLog) Write(line []byte) error {
	return l.s.writeLine(context.Background(), l.kind, l.id, line)
}

func (l *pgLog) Sync() error { return l.s.syncLog(context.Background(), l.kind, l.id) }

func (l *pgLog) Close() error { return nil }

func (s *Store) ReadLog(ctx context.Context, kind store.Kind, id string) ([][]byte, error) {
	if err := s.check(kind, id); err != nil {
		return nil, err
	}
	rows, err := s.sh.pool.Query(ctx, `SELECT line FROM log_lines WHERE tenant = $1 AND kind = $2 AND id = $3 ORDER BY seq`, s.tenant, string(kind), id)
	if err != nil {
		return nil, s.fail(fmt.Sprintf("reading the log of %s/%s", kind, id), err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
	if err != nil {
		return nil, s.fail(fmt.Sprintf("reading the log of %s/%s", kind, id), err)
	}
	return lines, nil
}
