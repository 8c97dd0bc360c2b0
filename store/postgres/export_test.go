package postgres

import (
	"context"

	"github.com/jackc/pgx/v5/stdlib"
)

// MigrateTo brings the database at url to schema version v, up or down
// (the tests of a migration on an older schema's rows).
func MigrateTo(ctx context.Context, url string, v int64) error {
	pool, _, err := connect(ctx, url)
	if err != nil {
		return err
	}
	defer pool.Close()
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	p, err := provider(db)
	if err != nil {
		return err
	}
	cur, err := p.GetDBVersion(ctx)
	if err != nil {
		return err
	}
	if cur > v {
		_, err = p.DownTo(ctx, v)
	} else {
		_, err = p.UpTo(ctx, v)
	}
	return err
}

// SetFeedQueue sets how far a change feed may fall behind before it says
// Resync, until the test ends.
func SetFeedQueue(t interface{ Cleanup(func()) }, n int) {
	old := feedQueue
	feedQueue = n
	t.Cleanup(func() { feedQueue = old })
}
