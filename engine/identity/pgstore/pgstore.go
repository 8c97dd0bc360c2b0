// Package pgstore is a PostgreSQL identity.Store: the hosted hub's
// browser sessions and used sign-in states, shared by every replica. Its
// tables are made by the hub's migrations (store/postgres, migration
// 00003).
//
// A session is kept by the SHA-256 of its id, a state by the SHA-256 of
// its value: a copy of the table lets no one present a session cookie or
// replay a sign-in. A state is used once across every replica: the insert
// that succeeds uses it.
package pgstore

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/capabilities-sh/capabilities/engine/identity"
)

// Store is an identity.Store on PostgreSQL.
type Store struct{ db *pgxpool.Pool }

// New returns a Store on db, a database whose schema is the hub's
// (store/postgres.Migrate, `capabilities hub init`); the hosted hub passes
// postgres.Store.Pool.
func New(db *pgxpool.Pool) *Store { return &Store{db: db} }

var _ identity.Store = (*Store)(nil)

func hash(s string) []byte {
	h := sha256.Sum256([]byte(s))
	return h[:]
}

// sometimes is true about once in 32 calls: when expired rows are swept.
func sometimes() bool {
	var b [1]byte
	_, _ = rand.Read(b[:])
	return b[0]%32 == 0
}

// PutSession implements identity.Store: it writes the session (replacing
// one with the same id).
func (s *Store) PutSession(ctx context.Context, se identity.Session) error {
	if se.ID == "" {
		return errors.New("saving a session: it has no id")
	}
	a := se.Account
	_, err := s.db.Exec(ctx, `INSERT INTO identity_sessions (id_hash, tenant, issuer, subject, name, email, created_at, expires_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
ON CONFLICT (id_hash) DO UPDATE SET tenant = excluded.tenant, issuer = excluded.issuer, subject = excluded.subject,
	name = excluded.name, email = excluded.email, created_at = excluded.created_at, expires_at = excluded.expires_at`,
		hash(se.ID), a.Tenant, a.Issuer, a.Subject, a.Name, a.Email, se.Created.UTC(), se.Expires.UTC())
	if err != nil {
		return fmt.Errorf("saving a session: %w", err)
	}
	if sometimes() {
		// Sessions nobody came back for end here; sweeping is not part of
		// saving, so a failure leaves them for the next time.
		_ = s.Sweep(ctx)
	}
	return nil
}

// Sweep removes the sessions and used states that expired more than an
// hour ago (by the database's clock). PutSession and UseState call it now
// and then; a server may call it on a timer too.
func (s *Store) Sweep(ctx context.Context) error {
	b := &pgx.Batch{}
	b.Queue(`DELETE FROM identity_sessions WHERE expires_at < now() - interval '1 hour'`)
	b.Queue(`DELETE FROM identity_states WHERE expires_at < now() - interval '1 hour'`)
	if err := s.db.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("sweeping expired sessions: %w", err)
	}
	return nil
}

// GetSession implements identity.Store. It returns the session as saved,
// expired or not: the relying party compares its expiry with its clock
// (and deletes it).
func (s *Store) GetSession(ctx context.Context, id string) (identity.Session, bool, error) {
	if id == "" {
		return identity.Session{}, false, nil
	}
	se := identity.Session{ID: id}
	a := &se.Account
	err := s.db.QueryRow(ctx, `SELECT tenant, issuer, subject, name, email, created_at, expires_at
FROM identity_sessions WHERE id_hash = $1`, hash(id)).Scan(&a.Tenant, &a.Issuer, &a.Subject, &a.Name, &a.Email, &se.Created, &se.Expires)
	if errors.Is(err, pgx.ErrNoRows) {
		return identity.Session{}, false, nil
	}
	if err != nil {
		return identity.Session{}, false, fmt.Errorf("reading a session: %w", err)
	}
	return se, true, nil
}

// DeleteSession implements identity.Store; deleting a session that is not
// there is no error.
func (s *Store) DeleteSession(ctx context.Context, id string) error {
	if _, err := s.db.Exec(ctx, `DELETE FROM identity_sessions WHERE id_hash = $1`, hash(id)); err != nil {
		return fmt.Errorf("ending a session: %w", err)
	}
	return nil
}

// UseState implements identity.Store: true for the one call, across every
// replica, that uses the state first. A used state's row is kept until an
// hour after it expires (the relying party refuses an expired sign-in
// anyway).
func (s *Store) UseState(ctx context.Context, state string, expires time.Time) (bool, error) {
	if state == "" {
		return false, errors.New("using a sign-in state: it is empty")
	}
	tag, err := s.db.Exec(ctx, `INSERT INTO identity_states (state_hash, expires_at) VALUES ($1, $2) ON CONFLICT (state_hash) DO NOTHING`,
		hash(state), expires.UTC())
	if err != nil {
		return false, fmt.Errorf("using a sign-in state: %w", err)
	}
	fresh := tag.RowsAffected() == 1
	if fresh && sometimes() {
		_ = s.Sweep(ctx)
	}
	return fresh, nil
}
