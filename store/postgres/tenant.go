package postgres

// Tenants: the view of the store that is one tenant's, and its closing.

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

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
