package postgres

// Records by when they were last written (migration 00004): what the prune
// of old runs reads instead of every run (engine/run, retention.go).

import (
	"context"
	"time"

	"github.com/capabilities-sh/capabilities/store"
	"github.com/jackc/pgx/v5"
)

// Oldest returns up to limit records of kind last written before before,
// oldest first (by written time, then id), those after after in that order
// (the zero Aged: from the first), each with its size: its data and its
// log's lines. Nothing else of a record is read.
func (s *Store) Oldest(ctx context.Context, kind store.Kind, before time.Time, after store.Aged, limit int) ([]store.Aged, error) {
	if err := s.check(kind, "x"); err != nil {
		return nil, err
	}
	rows, err := s.sh.pool.Query(ctx, `SELECT r.id, r.written_at, octet_length(r.data) + coalesce((
	SELECT sum(octet_length(l.line) + 1) FROM log_lines l WHERE l.tenant = r.tenant AND l.kind = r.kind AND l.id = r.id
), 0)
FROM records r
WHERE r.tenant = $1 AND r.kind = $2 AND r.written_at < $3 AND (r.written_at, r.id) > ($4, $5)
ORDER BY r.written_at, r.id
LIMIT $6`, s.tenant, string(kind), before, after.Written, after.ID, limit)
	if err != nil {
		return nil, s.fail("listing the oldest "+string(kind), err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Aged, error) {
		var a store.Aged
		err := row.Scan(&a.ID, &a.Written, &a.Size)
		return a, err
	})
	if err != nil {
		return nil, s.fail("listing the oldest "+string(kind), err)
	}
	return out, nil
}

// Size is how many records of kind whose id starts with prefix there are
// and what they take, their logs included, counted in the database.
func (s *Store) Size(ctx context.Context, kind store.Kind, prefix string) (n int, bytes int64, err error) {
	if err := s.check(kind, "x"); err != nil {
		return 0, 0, err
	}
	err = s.sh.pool.QueryRow(ctx, `SELECT count(*), coalesce(sum(octet_length(data)), 0) + coalesce((
	SELECT sum(octet_length(line) + 1) FROM log_lines WHERE tenant = $1 AND kind = $2 AND starts_with(id, $3)
), 0)
FROM records WHERE tenant = $1 AND kind = $2 AND starts_with(id, $3)`, s.tenant, string(kind), prefix).Scan(&n, &bytes)
	if err != nil {
		return 0, 0, s.fail("sizing "+string(kind), err)
	}
	return n, bytes, nil
}
