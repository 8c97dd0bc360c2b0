package postgres

// The store's schema: migrations embedded in the binary, applied by
// goose (Migrate), and the version checks Open makes.

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

//go:embed migrations/*.sql
var migrations embed.FS

// versionTable is goose's table of applied migrations.
const versionTable = "capabilities_migrations"

// SchemaVersion is the newest schema version this build's migrations
// make.
func SchemaVersion() int64 {
	v, err := latestMigration()
	if err != nil {
		panic(err) // the embedded files are part of the build
	}
	return v
}

func latestMigration() (int64, error) {
	entries, err := fs.ReadDir(migrations, "migrations")
	if err != nil {
		return 0, err
	}
	var latest int64
	for _, e := range entries {
		n, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.ParseInt(n, 10, 64)
		if !ok || err != nil {
			return 0, fmt.Errorf("migration %s has no version number", e.Name())
		}
		latest = max(latest, v)
	}
	return latest, nil
}

// Migrate brings the database's schema to this build's version (what
// `capabilities hub init` does), creating it in an empty database. Two
// processes migrating at once take turns (a session advisory lock). It
// refuses a database whose schema is newer than this build's.
func Migrate(ctx context.Context, url string) error {
	pool, where, err := connect(ctx, url)
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := checkNotNewer(ctx, pool, where); err != nil {
		return err
	}
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	p, err := provider(db)
	if err != nil {
		return err
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("migrating the store at %s: %w", where, err)
	}
	return nil
}

// provider is goose's migrator of db with this build's migrations.
func provider(db *sql.DB) (*goose.Provider, error) {
	sub, err := fs.Sub(migrations, "migrations")
	if err != nil {
		return nil, err
	}
	locker, err := lock.NewPostgresSessionLocker()
	if err != nil {
		return nil, fmt.Errorf("migrating the store: %w", err)
	}
	p, err := goose.NewProvider(goose.DialectPostgres, db, sub,
		goose.WithTableName(versionTable), goose.WithSessionLocker(locker), goose.WithDisableGlobalRegistry(true))
	if err != nil {
		return nil, fmt.Errorf("migrating the store: %w", err)
	}
	return p, nil
}

// dbVersion is the database's schema version; 0 when it has none.
func dbVersion(ctx context.Context, pool *pgxpool.Pool, where string) (int64, error) {
	var v *int64
	err := pool.QueryRow(ctx, `SELECT CASE WHEN to_regclass($1) IS NULL THEN NULL ELSE -1 END`, versionTable).Scan(&v)
	if err != nil {
		return 0, describe("reading the store's schema version at "+where, "", err)
	}
	if v == nil {
		return 0, nil
	}
	var n int64
	if err := pool.QueryRow(ctx, `SELECT coalesce(max(version_id), 0) FROM `+versionTable+` WHERE is_applied`).Scan(&n); err != nil {
		return 0, describe("reading the store's schema version at "+where, "", err)
	}
	return n, nil
}

func checkNotNewer(ctx context.Context, pool *pgxpool.Pool, where string) error {
	v, err := dbVersion(ctx, pool, where)
	if err != nil {
		return err
	}
	if mine := SchemaVersion(); v > mine {
		return fmt.Errorf("opening the store at %s: its schema (version %d) was written by a newer capabilities; this build reads up to version %d: upgrade capabilities, or point the store URL at another database", where, v, mine)
	}
	return nil
}
