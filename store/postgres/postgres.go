// Package postgres is the hub's store on PostgreSQL: the same records,
// logs, claims and generation as the file store (store.File), with the same
// behaviour (the conformance suite store/storetest runs against all of
// them), shared by every process that opens the same database.
//
//   - A record is a row of records (kind, id, data); Put is one upsert,
//     Update a transaction that takes a transaction-scoped advisory lock on
//     the record (so updates of a record that does not exist yet are
//     serialized too), reads it FOR UPDATE and writes what fn returns.
//   - A log line is a row of log_lines, inserted in its own transaction:
//     committed, and so flushed to PostgreSQL's write-ahead log, before
//     Append returns (the file store's fdatasync); Log.Write commits it
//     without waiting for the flush (the file store's write alone), and
//     Log.Sync flushes.
//   - A claim (Hold) is a row of holds with an expiry that this process
//     renews while it holds it; a process that dies stops renewing and
//     loses its claims when they expire (LeaseTTL). Times are the
//     database's own clock, never a machine's.
//   - The generation is a counter row bumped in the same statement as the
//     write of a source, manifest, connection, policy or profile.
//   - Tenants (the hosted hub, one per account): every row names its
//     tenant, first in its primary key, and Tenant returns a view of the
//     store whose every statement is scoped to one. Open's Store is tenant
//     "" (the local or shared hub). The views share the pool, the renewal
//     of claims and the change feed's connection.
//
// The schema is versioned by migrations embedded in the binary
// (migrations/*.sql, applied by goose): Migrate applies them; Open refuses a
// database whose schema is older (run `capabilities hub init`) or newer (a
// newer capabilities wrote it) than this build's.
package postgres

import (
	"bytes"
	"context"
	"database/sql"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/capabilities-sh/capabilities/store"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

//go:embed migrations/*.sql
var migrations embed.FS

// versionTable is goose's table of applied migrations.
const versionTable = "capabilities_migrations"

// DefaultLeaseTTL is how long a claim outlives the last renewal of its
// holder: the time a dead process's claims stay taken.
const DefaultLeaseTTL = 15 * time.Second

// Store is the store on PostgreSQL. It is safe for concurrent use; every
// Store on the same database (in this process or another) sees the same
// records and claims.
//
// A Store is one tenant's view of the database: Open returns tenant "",
// Tenant another's. Every view of one Open shares its pool, its renewal of
// claims and its change feed's connection.
type Store struct {
	sh     *shared
	tenant string
	lock   string // prefix of the advisory lock keys: "" or tenant + "/"
	notify string // prefix of the change notifications: "" or tenant + "@"
	bad    error  // an invalid tenant: every call returns it
	root   bool   // Open's; closing it closes the pool

	stopc  chan struct{} // closed by Close: ends the view's feeds
	closed atomic.Bool   // set under sh.mu
}

// shared is what the views of one Open share.
type shared struct {
	pool     *pgxpool.Pool
	where    string // host:port/database, for messages (never the password)
	leaseTTL time.Duration

	mu     sync.Mutex
	claims map[string]claim // owner token → claim, renewed by renewLoop
	stop   chan struct{}
	done   chan struct{}
	closed atomic.Bool // set under mu

	feed feed // notify.go
}

type claim struct {
	view *Store
	kind store.Kind
	id   string
}

var (
	_ store.Store        = (*Store)(nil)
	_ store.Generationer = (*Store)(nil)
	_ store.Changer      = (*Store)(nil)
)

// Option changes how Open opens the store.
type Option func(*Store)

// LeaseTTL sets how long a claim outlives its holder's last renewal
// (DefaultLeaseTTL); the holder renews it every third of that. Less than
// 300 ms is taken as 300 ms.
func LeaseTTL(d time.Duration) Option {
	return func(s *Store) { s.sh.leaseTTL = max(d, 300*time.Millisecond) }
}

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

// connect parses url and opens a pool on it, checking that the database
// answers. Its errors say what to fix.
func connect(ctx context.Context, url string) (*pgxpool.Pool, string, error) {
	if !strings.HasPrefix(url, "postgres://") && !strings.HasPrefix(url, "postgresql://") {
		return nil, "", fmt.Errorf("reading the store URL: it must start with postgres:// (postgres://USER:PASSWORD@HOST:PORT/DATABASE)")
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		// pgconn's message leaves the password out.
		return nil, "", fmt.Errorf("reading the store URL: %w; write it as postgres://USER:PASSWORD@HOST:PORT/DATABASE (see docs/postgres.md)", err)
	}
	cc := cfg.ConnConfig
	where := net.JoinHostPort(cc.Host, strconv.Itoa(int(cc.Port))) + "/" + cc.Database
	if strings.HasPrefix(cc.Host, "/") {
		where = cc.Host + "/" + cc.Database
	}
	if cc.ConnectTimeout == 0 {
		cc.ConnectTimeout = 10 * time.Second
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, "", fmt.Errorf("connecting to PostgreSQL at %s: %w", where, err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, "", describe("connecting to PostgreSQL at "+where, cc.User, err)
	}
	return pool, where, nil
}

// describe wraps a connection error with what to fix.
func describe(doing, user string, err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "28P01", "28000": // invalid_password, invalid_authorization_specification
			return fmt.Errorf("%s: PostgreSQL refused user %q (%s): fix the user and password in the store URL: %w", doing, user, pe.Message, err)
		case "3D000": // invalid_catalog_name
			return fmt.Errorf("%s: %s: create the database (createdb) or fix its name in the store URL: %w", doing, pe.Message, err)
		case "57P01", "57P02": // admin_shutdown, crash_shutdown
			return fmt.Errorf("%s: PostgreSQL ended the connection (it is shutting down or restarting, or an administrator ended it); the next call connects again: %w", doing, err)
		case "57P03": // cannot_connect_now
			return fmt.Errorf("%s: PostgreSQL is starting or shutting down; try again once it is up: %w", doing, err)
		}
		return fmt.Errorf("%s: %w", doing, err)
	}
	if pgconn.SafeToRetry(err) || isConnError(err) {
		return fmt.Errorf("%s: PostgreSQL cannot be reached (is it running, and are the host and port in the store URL right?): %w", doing, err)
	}
	return fmt.Errorf("%s: %w", doing, err)
}

// lost reports whether err means the connection is gone.
func lost(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return strings.HasPrefix(pe.Code, "57P") || strings.HasPrefix(pe.Code, "08")
	}
	return isConnError(err) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

func isConnError(err error) bool {
	var ce *pgconn.ConnectError
	var ne net.Error
	return errors.As(err, &ce) || errors.As(err, &ne)
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

// Open connects to the store at url (postgres://USER:PASSWORD@HOST:PORT/DB).
// It refuses a database whose schema is not this build's: older (or none)
// asks for `capabilities hub init` (Migrate), newer for a newer
// capabilities. Close it when done.
func Open(ctx context.Context, url string, opts ...Option) (*Store, error) {
	pool, where, err := connect(ctx, url)
	if err != nil {
		return nil, err
	}
	if err := checkNotNewer(ctx, pool, where); err != nil {
		pool.Close()
		return nil, err
	}
	v, err := dbVersion(ctx, pool, where)
	if err != nil {
		pool.Close()
		return nil, err
	}
	if mine := SchemaVersion(); v < mine {
		pool.Close()
		if v == 0 {
			return nil, fmt.Errorf("opening the store at %s: the database has no hub yet: run `capabilities hub init` to create it", where)
		}
		return nil, fmt.Errorf("opening the store at %s: its schema (version %d) is older than this build's (%d): run `capabilities hub init` to upgrade it", where, v, mine)
	}
	sh := &shared{pool: pool, where: where, leaseTTL: DefaultLeaseTTL, claims: map[string]claim{}, stop: make(chan struct{}), done: make(chan struct{})}
	s := &Store{sh: sh, root: true, stopc: make(chan struct{})}
	for _, o := range opts {
		o(s)
	}
	go sh.renewLoop()
	return s, nil
}

// ValidTenant checks a tenant id: "" (the local or shared hub) or what
// identity.TenantID makes, "tn_" and 32 characters of lowercase base32.
func ValidTenant(id string) error {
	if id == "" {
		return nil
	}
	const prefix, n = "tn_", 32
	rest, ok := strings.CutPrefix(id, prefix)
	if !ok {
		return fmt.Errorf("tenant id %q must be empty (the local hub) or start with %q (as identity.TenantID makes it)", id, prefix)
	}
	if len(rest) != n {
		return fmt.Errorf("tenant id %q must be %q and %d characters, not %d (as identity.TenantID makes it)", id, prefix, n, len(rest))
	}
	for i, r := range rest {
		if !(r >= 'a' && r <= 'z' || r >= '2' && r <= '7') {
			return fmt.Errorf("tenant id %q has %q at position %d; after %q only lowercase base32 (a-z, 2-7) is allowed (as identity.TenantID makes it)", id, r, len(prefix)+i+1, prefix)
		}
	}
	return nil
}

// Tenant returns the view of the store that is tenant id's: its records,
// logs, claims, generation, hub keys, spent tokens and change feed, apart
// from every other tenant's (Tenant("") is Open's). The view shares this
// Store's pool, the renewal of its claims and its change feed's
// connection; closing it releases its own claims and ends its own feeds,
// never the pool, which closes with Open's Store. An id ValidTenant
// refuses makes a view whose every call returns that error.
func (s *Store) Tenant(id string) *Store {
	v := &Store{sh: s.sh, tenant: id, stopc: make(chan struct{})}
	if err := ValidTenant(id); err != nil {
		v.bad = fmt.Errorf("opening the store of a tenant: %w", err)
		return v
	}
	if id != "" {
		v.lock = id + "/"
		v.notify = id + "@"
	}
	return v
}

// TenantID is the tenant this view is scoped to ("" for Open's).
func (s *Store) TenantID() string { return s.tenant }

// Pool is the connection pool every view of this Store shares (the hosted
// hub's other tables use it too). It closes with Open's Store.
func (s *Store) Pool() *pgxpool.Pool { return s.sh.pool }

// Close releases this view's claims and ends its change feeds. On Open's
// Store it also releases every view's claims and closes the connections:
// every view of it is closed with it.
func (s *Store) Close() error {
	sh := s.sh
	sh.mu.Lock()
	if s.closed.Load() {
		sh.mu.Unlock()
		return nil
	}
	s.closed.Store(true)
	close(s.stopc)
	var owners []string
	for o, c := range sh.claims {
		if s.root || c.view == s {
			owners = append(owners, o)
			delete(sh.claims, o)
		}
	}
	if s.root {
		sh.closed.Store(true)
	}
	sh.mu.Unlock()
	if s.root {
		close(sh.stop)
		<-sh.done
		sh.feed.wait()
	}
	var err error
	if len(owners) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err = sh.pool.Exec(ctx, `DELETE FROM holds WHERE owner = ANY($1)`, owners)
		cancel()
		if err != nil {
			err = s.fail("releasing this process's claims", err)
		}
	}
	if s.root {
		sh.pool.Close()
	}
	return err
}

// Where names the database (host:port/database), for messages.
func (s *Store) Where() string { return s.sh.where }

func (s *Store) fail(doing string, err error) error {
	if lost(err) {
		// Every connection of the pool is likely gone with this one (a
		// restart, a network cut): drop them all, so that the next call
		// connects afresh instead of finding the next dead one.
		s.sh.pool.Reset()
	}
	return describe(doing+" in PostgreSQL at "+s.sh.where, "", err)
}

// usable refuses a call on a view of an invalid tenant or a closed one.
func (s *Store) usable(doing string) error {
	if s.bad != nil {
		return fmt.Errorf("%s: %w", doing, s.bad)
	}
	if s.closed.Load() || s.sh.closed.Load() {
		return fmt.Errorf("%s: the store is closed", doing)
	}
	return nil
}

// check checks a record's kind and id, and that the view is usable.
func (s *Store) check(kind store.Kind, id string) error {
	if s.bad != nil {
		return s.bad
	}
	if s.closed.Load() || s.sh.closed.Load() {
		return errors.New("the store is closed")
	}
	for _, k := range store.Kinds {
		if k == kind {
			return store.ValidID(id)
		}
	}
	return fmt.Errorf("unknown record kind %q", kind)
}

// bumps reports whether a write of the kind moves the generation on (as
// in the file store).
func bumps(kind store.Kind) bool {
	switch kind {
	case store.Sources, store.Manifests, store.Connections, store.Policies, store.Profiles:
		return true
	}
	return false
}

func marshal(v any) ([]byte, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encoding record: %w", err)
	}
	return append(b, '\n'), nil
}

func (s *Store) Get(ctx context.Context, kind store.Kind, id string, v any) error {
	if err := s.check(kind, id); err != nil {
		return err
	}
	var data []byte
	err := s.sh.pool.QueryRow(ctx, `SELECT data FROM records WHERE tenant = $1 AND kind = $2 AND id = $3`, s.tenant, string(kind), id).Scan(&data)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("reading %s/%s: %w", kind, id, store.ErrNotFound)
	}
	if err != nil {
		return s.fail(fmt.Sprintf("reading %s/%s", kind, id), err)
	}
	return store.DecodeRecord(string(kind)+"/"+id, data, v)
}

// upsert writes the tenant's ($6) record and, for the kinds that move it,
// bumps the tenant's generation (its row made by its first bump), in one
// statement; for the kinds change feeds follow, it notifies them ($5, with
// the notification's prefix $7, notify.go), sent when the write commits.
const upsert = `WITH w AS (
	INSERT INTO records (tenant, kind, id, data) VALUES ($6, $1, $2, $3)
	ON CONFLICT (tenant, kind, id) DO UPDATE SET data = excluded.data
), g AS (
	INSERT INTO generation (tenant, n) SELECT $6, 1 WHERE $4
	ON CONFLICT (tenant) DO UPDATE SET n = generation.n + 1
)
SELECT pg_notify('` + changesChannel + `', $7 || $1 || '/' || $2) WHERE $5`

func (s *Store) Put(ctx context.Context, kind store.Kind, id string, v any) error {
	if err := s.check(kind, id); err != nil {
		return err
	}
	b, err := marshal(v)
	if err != nil {
		return err
	}
	if kind == store.Runs {
		err = s.putRun(ctx, id, b)
	} else {
		_, err = s.sh.pool.Exec(ctx, upsert, string(kind), id, b, bumps(kind), store.IsFollowed(kind), s.tenant, s.notify)
	}
	if err != nil {
		return s.fail(fmt.Sprintf("writing %s/%s", kind, id), err)
	}
	return nil
}

// putRun writes a run record without waiting for its commit to reach the
// drive (synchronous_commit off for its transaction), in one round trip:
// the file store does not sync a run record either (store.File's
// writeRecord), since a run's durable truth is its journal, whose lines
// are committed synchronously, and a later synchronous commit flushes this
// one too. A crash of the hub's process loses nothing; a crash of the
// machine under PostgreSQL may lose the last run records, which resuming
// rebuilds from the journals.
func (s *Store) putRun(ctx context.Context, id string, b []byte) error {
	batch := &pgx.Batch{}
	batch.Queue(`BEGIN`)
	batch.Queue(`SELECT set_config('synchronous_commit', 'off', true)`)
	batch.Queue(upsert, string(store.Runs), id, b, false, true, s.tenant, s.notify)
	batch.Queue(`COMMIT`)
	return s.sh.pool.SendBatch(ctx, batch).Close()
}

func (s *Store) Update(ctx context.Context, kind store.Kind, id string, fn func([]byte) ([]byte, error)) error {
	if err := s.check(kind, id); err != nil {
		return err
	}
	doing := fmt.Sprintf("updating %s/%s", kind, id)
	// One transaction on one connection, in two round trips (pipelined
	// batches) rather than one a statement: BEGIN, the record's lock and
	// its row; then fn, and the write and COMMIT.
	conn, err := s.sh.pool.Acquire(ctx)
	if err != nil {
		return s.fail(doing, err)
	}
	defer conn.Release() // a connection left in a transaction is closed, not reused
	rollback := func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_, _ = conn.Exec(rctx, `ROLLBACK`)
	}
	var old []byte
	read := &pgx.Batch{}
	read.Queue(`BEGIN`)
	// The record's lock, taken whether the row exists or not; the row lock
	// (FOR UPDATE) also holds off a concurrent Put.
	read.Queue(`SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, s.lock+string(kind)+"/"+id)
	read.Queue(`SELECT data FROM records WHERE tenant = $1 AND kind = $2 AND id = $3 FOR UPDATE`, s.tenant, string(kind), id).QueryRow(func(row pgx.Row) error {
		if err := row.Scan(&old); err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		return nil
	})
	if err := conn.SendBatch(ctx, read).Close(); err != nil {
		rollback()
		return s.fail(doing, err)
	}
	next, err := fn(old)
	if err != nil {
		rollback()
		return err
	}
	if next == nil {
		next = []byte{}
	}
	write := &pgx.Batch{}
	if kind == store.Runs { // not synced, as putRun
		write.Queue(`SELECT set_config('synchronous_commit', 'off', true)`)
	}
	write.Queue(upsert, string(kind), id, next, bumps(kind), store.IsFollowed(kind), s.tenant, s.notify)
	write.Queue(`COMMIT`)
	if err := conn.SendBatch(ctx, write).Close(); err != nil {
		rollback()
		return s.fail(doing, err)
	}
	return nil
}

func (s *Store) Delete(ctx context.Context, kind store.Kind, id string) error {
	if err := s.check(kind, id); err != nil {
		return err
	}
	_, err := s.sh.pool.Exec(ctx, `WITH r AS (DELETE FROM records WHERE tenant = $5 AND kind = $1 AND id = $2),
	l AS (DELETE FROM log_lines WHERE tenant = $5 AND kind = $1 AND id = $2),
	g AS (
		INSERT INTO generation (tenant, n) SELECT $5, 1 WHERE $3
		ON CONFLICT (tenant) DO UPDATE SET n = generation.n + 1
	)
SELECT pg_notify('`+changesChannel+`', $6 || $1 || '/' || $2) WHERE $4`, string(kind), id, bumps(kind), store.IsFollowed(kind), s.tenant, s.notify)
	if err != nil {
		return s.fail(fmt.Sprintf("deleting %s/%s", kind, id), err)
	}
	return nil
}

func (s *Store) List(ctx context.Context, kind store.Kind) ([]string, error) {
	if err := s.check(kind, "x"); err != nil {
		return nil, err
	}
	rows, err := s.sh.pool.Query(ctx, `SELECT id FROM records WHERE tenant = $1 AND kind = $2`, s.tenant, string(kind))
	if err != nil {
		return nil, s.fail("listing "+string(kind), err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, s.fail("listing "+string(kind), err)
	}
	sort.Strings(ids) // byte order, as the file and memory stores, whatever the database's collation
	if ids == nil {
		ids = []string{}
	}
	return ids, nil
}

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

// Hold takes the claim as a lease: a row of holds that is free, or whose
// last holder stopped renewing it LeaseTTL ago. A lease, rather than a
// session advisory lock, because a claim must not tie up a connection of
// the pool for as long as it is held (a hub holds one per running run), and
// because it ends by itself, at a time the database's clock decides, when
// its process dies or loses the database.
func (s *Store) Hold(ctx context.Context, kind store.Kind, id string) (func(), error) {
	if err := s.check(kind, id); err != nil {
		return nil, err
	}
	sh := s.sh
	owner := store.NewID()
	var got string
	err := sh.pool.QueryRow(ctx, `INSERT INTO holds (tenant, kind, id, owner, expires_at)
VALUES ($5, $1, $2, $3, now() + $4 * interval '1 millisecond')
ON CONFLICT (tenant, kind, id) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at
	WHERE holds.expires_at < now()
RETURNING owner`, string(kind), id, owner, sh.leaseTTL.Milliseconds(), s.tenant).Scan(&got)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("claiming %s/%s: %w", kind, id, store.ErrBusy)
	}
	if err != nil {
		return nil, s.fail(fmt.Sprintf("claiming %s/%s", kind, id), err)
	}
	sh.mu.Lock()
	if s.closed.Load() {
		// Closed meanwhile: Close did not see this claim.
		sh.mu.Unlock()
		s.releaseNow(kind, id, owner)
		return nil, fmt.Errorf("claiming %s/%s: the store is closed", kind, id)
	}
	sh.claims[owner] = claim{s, kind, id}
	sh.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			sh.mu.Lock()
			_, mine := sh.claims[owner]
			delete(sh.claims, owner)
			sh.mu.Unlock()
			if !mine {
				return // released by Close (or lost to another)
			}
			s.releaseNow(kind, id, owner)
		})
	}, nil
}

// releaseNow removes the claim's row.
func (s *Store) releaseNow(kind store.Kind, id, owner string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// By the primary key (owner has no index, and a busy hub's
	// holds table has many dead rows between two vacuums), and
	// without waiting for the drive: a release lost in a crash of
	// PostgreSQL leaves the claim to expire (LeaseTTL), as when its
	// process dies.
	batch := &pgx.Batch{}
	batch.Queue(`BEGIN`)
	batch.Queue(`SELECT set_config('synchronous_commit', 'off', true)`)
	batch.Queue(`DELETE FROM holds WHERE tenant = $4 AND kind = $1 AND id = $2 AND owner = $3`, string(kind), id, owner, s.tenant)
	batch.Queue(`COMMIT`)
	if err := s.sh.pool.SendBatch(ctx, batch).Close(); err != nil {
		// The lease expires by itself.
		slog.Warn("releasing a claim in PostgreSQL (it ends when its lease expires)", "tenant", s.tenant, "record", string(kind)+"/"+id, "err", err)
	}
}

func (s *Store) Held(ctx context.Context, kind store.Kind, id string) (bool, error) {
	if err := s.check(kind, id); err != nil {
		return true, err
	}
	var held bool
	err := s.sh.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM holds WHERE tenant = $3 AND kind = $1 AND id = $2 AND expires_at >= now())`, string(kind), id, s.tenant).Scan(&held)
	if err != nil {
		return true, s.fail(fmt.Sprintf("checking the claim on %s/%s", kind, id), err)
	}
	return held, nil
}

func (s *shared) owners() []string {
	out := make([]string, 0, len(s.claims))
	for o := range s.claims {
		out = append(out, o)
	}
	return out
}

// renewLoop renews this Store's leases every third of LeaseTTL. A lease
// found taken by another (this process could not renew it in time) is
// logged and dropped.
func (s *shared) renewLoop() {
	defer close(s.done)
	t := time.NewTicker(s.leaseTTL / 3)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		s.mu.Lock()
		owners := s.owners()
		s.mu.Unlock()
		if len(owners) == 0 {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), s.leaseTTL/3)
		rows, err := s.pool.Query(ctx, `UPDATE holds SET expires_at = now() + $2 * interval '1 millisecond' WHERE owner = ANY($1) RETURNING owner`, owners, s.leaseTTL.Milliseconds())
		var renewed []string
		if err == nil {
			renewed, err = pgx.CollectRows(rows, pgx.RowTo[string])
		}
		cancel()
		if err != nil {
			slog.Warn("renewing this process's claims in PostgreSQL", "where", s.where, "err", err)
			continue
		}
		if len(renewed) == len(owners) {
			continue
		}
		have := map[string]bool{}
		for _, o := range renewed {
			have[o] = true
		}
		s.mu.Lock()
		for _, o := range owners {
			if c, ok := s.claims[o]; ok && !have[o] {
				slog.Warn("a claim expired before it could be renewed and is no longer held", "tenant", c.view.tenant, "record", string(c.kind)+"/"+c.id)
				delete(s.claims, o)
			}
		}
		s.mu.Unlock()
	}
}

// Generation reads the tenant's counter row (0 before its first bump).
func (s *Store) Generation() (store.Generation, error) {
	if err := s.usable("reading the store's generation"); err != nil {
		return store.Generation{}, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var n int64
	if err := s.sh.pool.QueryRow(ctx, `SELECT coalesce((SELECT n FROM generation WHERE tenant = $1), 0)`, s.tenant).Scan(&n); err != nil {
		return store.Generation{}, s.fail("reading the store's generation", err)
	}
	return store.CountedGeneration(n), nil
}
