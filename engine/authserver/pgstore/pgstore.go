// Package pgstore is a PostgreSQL authserver.Store: the hosted hub's OAuth
// clients, codes and tokens (only their SHA-256 hashes), shared by every
// replica. Single use is one conditional UPDATE, so of two concurrent uses
// exactly one wins. Its tables are made by the hub's migrations
// (store/postgres).
package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/capabilities-sh/capabilities/engine/authserver"
)

// Store is an authserver.Store on PostgreSQL.
type Store struct{ db *pgxpool.Pool }

// New returns a Store on db, a database whose schema is the hub's
// (store/postgres.Migrate, `capabilities hub init`, makes its tables:
// migration 00003); the hosted hub passes postgres.Store.Pool.
func New(db *pgxpool.Pool) *Store { return &Store{db: db} }

var _ authserver.Store = (*Store)(nil)

func (s *Store) CreateClient(ctx context.Context, c authserver.Client) error {
	_, err := s.db.Exec(ctx, `INSERT INTO oauth_clients (id, secret_hash, auth_method, name, redirect_uris, scope, created)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`, c.ID, c.SecretHash, c.AuthMethod, c.Name, c.RedirectURIs, c.Scope, c.Created)
	if isUnique(err) {
		return fmt.Errorf("creating oauth client: id taken: %w", err)
	}
	if err != nil {
		return fmt.Errorf("creating oauth client: %w", err)
	}
	return nil
}

func (s *Store) Client(ctx context.Context, id string) (authserver.Client, error) {
	var c authserver.Client
	err := s.db.QueryRow(ctx, `SELECT id, secret_hash, auth_method, name, redirect_uris, scope, created
		FROM oauth_clients WHERE id = $1`, id).Scan(&c.ID, &c.SecretHash, &c.AuthMethod, &c.Name, &c.RedirectURIs, &c.Scope, &c.Created)
	if errors.Is(err, pgx.ErrNoRows) {
		return c, authserver.ErrNotFound
	}
	if err != nil {
		return c, fmt.Errorf("reading oauth client: %w", err)
	}
	return c, nil
}

func (s *Store) CreateCode(ctx context.Context, c authserver.Code) error {
	_, err := s.db.Exec(ctx, `INSERT INTO oauth_codes (hash, client_id, tenant, redirect_uri, resource, scope, challenge, family, expires, used)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
		c.Hash, c.ClientID, c.Tenant, c.RedirectURI, c.Resource, c.Scope, c.Challenge, c.Family, c.Expires, c.Used)
	if err != nil {
		return fmt.Errorf("creating oauth code: %w", err)
	}
	return nil
}

const codeCols = `hash, client_id, tenant, redirect_uri, resource, scope, challenge, family, expires, used`

func scanCode(row pgx.Row) (authserver.Code, error) {
	var c authserver.Code
	err := row.Scan(&c.Hash, &c.ClientID, &c.Tenant, &c.RedirectURI, &c.Resource, &c.Scope, &c.Challenge, &c.Family, &c.Expires, &c.Used)
	return c, err
}

func (s *Store) UseCode(ctx context.Context, hash string) (authserver.Code, error) {
	c, err := scanCode(s.db.QueryRow(ctx, `UPDATE oauth_codes SET used = true WHERE hash = $1 AND NOT used RETURNING `+codeCols, hash))
	if err == nil {
		return c, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return c, fmt.Errorf("using oauth code: %w", err)
	}
	c, err = scanCode(s.db.QueryRow(ctx, `SELECT `+codeCols+` FROM oauth_codes WHERE hash = $1`, hash))
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return c, authserver.ErrNotFound
	case err != nil:
		return c, fmt.Errorf("reading oauth code: %w", err)
	}
	return c, authserver.ErrUsed
}

func (s *Store) CreateTokens(ctx context.Context, ts ...authserver.Token) error {
	b := &pgx.Batch{}
	for _, t := range ts {
		// A family revoked before its token was written: the token is born revoked.
		b.Queue(`INSERT INTO oauth_tokens (hash, kind, client_id, tenant, resource, scope, family, expires, used, revoked)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10 OR EXISTS (SELECT 1 FROM oauth_revoked_families WHERE family = $7))`,
			t.Hash, string(t.Kind), t.ClientID, t.Tenant, t.Resource, t.Scope, t.Family, t.Expires, t.Used, t.Revoked)
	}
	if err := s.db.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("creating oauth tokens: %w", err)
	}
	return nil
}

const tokenCols = `hash, kind, client_id, tenant, resource, scope, family, expires, used,
	revoked OR EXISTS (SELECT 1 FROM oauth_revoked_families f WHERE f.family = oauth_tokens.family)`

func scanToken(row pgx.Row) (authserver.Token, error) {
	var t authserver.Token
	var kind string
	err := row.Scan(&t.Hash, &kind, &t.ClientID, &t.Tenant, &t.Resource, &t.Scope, &t.Family, &t.Expires, &t.Used, &t.Revoked)
	t.Kind = authserver.Kind(kind)
	return t, err
}

func (s *Store) Token(ctx context.Context, hash string) (authserver.Token, error) {
	t, err := scanToken(s.db.QueryRow(ctx, `SELECT `+tokenCols+` FROM oauth_tokens WHERE hash = $1`, hash))
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return t, authserver.ErrNotFound
	case err != nil:
		return t, fmt.Errorf("reading oauth token: %w", err)
	}
	return t, nil
}

func (s *Store) UseRefresh(ctx context.Context, hash string) (authserver.Token, error) {
	t, err := scanToken(s.db.QueryRow(ctx, `UPDATE oauth_tokens SET used = true
		WHERE hash = $1 AND kind = 'refresh' AND NOT used RETURNING `+tokenCols, hash))
	if err == nil {
		return t, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return t, fmt.Errorf("using refresh token: %w", err)
	}
	t, err = scanToken(s.db.QueryRow(ctx, `SELECT `+tokenCols+` FROM oauth_tokens WHERE hash = $1 AND kind = 'refresh'`, hash))
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return t, authserver.ErrNotFound
	case err != nil:
		return t, fmt.Errorf("reading refresh token: %w", err)
	}
	return t, authserver.ErrUsed
}

func (s *Store) RevokeToken(ctx context.Context, hash string) error {
	if _, err := s.db.Exec(ctx, `UPDATE oauth_tokens SET revoked = true WHERE hash = $1`, hash); err != nil {
		return fmt.Errorf("revoking oauth token: %w", err)
	}
	return nil
}

func (s *Store) RevokeFamily(ctx context.Context, family string) error {
	err := pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO oauth_revoked_families (family) VALUES ($1) ON CONFLICT DO NOTHING`, family); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE oauth_tokens SET revoked = true WHERE family = $1`, family)
		return err
	})
	if err != nil {
		return fmt.Errorf("revoking oauth grant: %w", err)
	}
	return nil
}

// isUnique reports a unique violation.
func isUnique(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505"
}
