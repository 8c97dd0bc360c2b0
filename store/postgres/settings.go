package postgres

// The hub's own keys (the elicitation signing key, the approval page's
// link key, the HTTP bearer token) and one-time things spent once, shared
// by every process on the database (migration 00002); each tenant has its
// own (migration 00003): a view's keys and spent tokens are its tenant's.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/capabilities-sh/capabilities/store"
	"github.com/jackc/pgx/v5"
)

// Key names of the hub's own keys.
const (
	KeyElicit    = "elicit-key" // signs elicitation states (engine/elicit)
	KeyPage      = "page-key"   // signs approval page links (engine/console)
	KeyHTTPToken = "http-token" // the bearer token of serve --http
)

// Key returns the hub's key called name, making it (size random bytes)
// when the database has none. Every process gets the same bytes: the first
// insert wins and the others read it. created says this call made it.
func (s *Store) Key(ctx context.Context, name string, size int) (key []byte, created bool, err error) {
	if name == "" || size < 16 {
		return nil, false, fmt.Errorf("reading the hub's key %q: a name and at least 16 bytes are needed", name)
	}
	if err := s.usable("reading the hub's key " + name); err != nil {
		return nil, false, err
	}
	fresh := make([]byte, size)
	if _, err := rand.Read(fresh); err != nil {
		return nil, false, fmt.Errorf("making the hub's key %s: %w", name, err)
	}
	err = s.sh.pool.QueryRow(ctx, `WITH ins AS (
	INSERT INTO hub_keys (tenant, name, value) VALUES ($3, $1, $2)
	ON CONFLICT (tenant, name) DO NOTHING
	RETURNING value
)
SELECT value, true FROM ins
UNION ALL
SELECT value, false FROM hub_keys WHERE tenant = $3 AND name = $1 AND NOT EXISTS (SELECT 1 FROM ins)`, name, fresh, s.tenant).Scan(&key, &created)
	if errors.Is(err, pgx.ErrNoRows) {
		// The row that won the insert is not visible to this statement's
		// snapshot yet (READ COMMITTED, a concurrent insert): read again.
		err = s.sh.pool.QueryRow(ctx, `SELECT value, false FROM hub_keys WHERE tenant = $2 AND name = $1`, name, s.tenant).Scan(&key, &created)
	}
	if err != nil {
		return nil, false, s.fail("reading the hub's key "+name, err)
	}
	if len(key) < 16 {
		return nil, false, fmt.Errorf("reading the hub's key %s in PostgreSQL at %s: it is %d bytes, too short; delete its row (DELETE FROM hub_keys WHERE tenant = '%s' AND name = '%s') and it is made again", name, s.sh.where, len(key), s.tenant, name)
	}
	return key, created, nil
}

// LookupKey returns the hub's key called name without making it: an
// error wrapping store.ErrNotFound when there is none.
func (s *Store) LookupKey(ctx context.Context, name string) ([]byte, error) {
	if err := s.usable("reading the hub's key " + name); err != nil {
		return nil, err
	}
	var key []byte
	err := s.sh.pool.QueryRow(ctx, `SELECT value FROM hub_keys WHERE tenant = $2 AND name = $1`, name, s.tenant).Scan(&key)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("reading the hub's key %s: %w", name, store.ErrNotFound)
	}
	if err != nil {
		return nil, s.fail("reading the hub's key "+name, err)
	}
	return key, nil
}

// DeleteKey removes the hub's key called name (the sealed keys adopt a
// key made before the hub's secrets were sealed, then delete it here); no
// key is no error.
func (s *Store) DeleteKey(ctx context.Context, name string) error {
	if err := s.usable("deleting the hub's key " + name); err != nil {
		return err
	}
	if _, err := s.sh.pool.Exec(ctx, `DELETE FROM hub_keys WHERE tenant = $2 AND name = $1`, name, s.tenant); err != nil {
		return s.fail("deleting the hub's key "+name, err)
	}
	return nil
}

// HTTPToken is the bearer token of every serve --http on this database
// (hex of 32 random bytes), made on first use; created says this call made
// it. The file store keeps it in the hub folder instead
// (mcpserver.HTTPToken).
func (s *Store) HTTPToken(ctx context.Context) (tok string, created bool, err error) {
	key, created, err := s.Key(ctx, KeyHTTPToken, 32)
	if err != nil {
		return "", false, fmt.Errorf("reading the HTTP token: %w", err)
	}
	return hex.EncodeToString(key), created, nil
}

// Spend spends the one-time thing id of purpose, valid until expires: true
// the first time, across every process on the database; false once spent.
// Rows past their expiry are removed now and then.
func (s *Store) Spend(ctx context.Context, purpose, id string, expires time.Time) (bool, error) {
	if purpose == "" || id == "" {
		return false, fmt.Errorf("spending a one-time token: a purpose and an id are needed")
	}
	if err := s.usable("spending a one-time " + purpose + " token"); err != nil {
		return false, err
	}
	tag, err := s.sh.pool.Exec(ctx, `INSERT INTO spent (tenant, purpose, id, expires_at) VALUES ($4, $1, $2, $3) ON CONFLICT (tenant, purpose, id) DO NOTHING`, purpose, id, expires.UTC(), s.tenant)
	if err != nil {
		return false, s.fail("spending a one-time "+purpose+" token", err)
	}
	if tag.RowsAffected() == 1 && cheapRand()%64 == 0 {
		// Pruning is not part of spending: a failure leaves rows for the
		// next time. Every tenant's expired rows go (nothing they spent
		// is valid any more).
		_, _ = s.sh.pool.Exec(ctx, `DELETE FROM spent WHERE expires_at < now() - interval '1 hour'`)
	}
	return tag.RowsAffected() == 1, nil
}

func cheapRand() byte {
	var b [1]byte
	_, _ = rand.Read(b[:])
	return b[0]
}
