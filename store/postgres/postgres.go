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
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
)

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

var (
	_ store.Store        = (*Store)(nil)
	_ store.Generationer = (*Store)(nil)
	_ store.Changer      = (*Store)(nil)
)

// Option changes how Open opens the store.
type Option func(*Store)

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
	ON CONFLICT (tenant, kind, id) DO UPDATE SET data = excluded.data, written_at = now()
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
