package postgres

// Claims (Hold): leases in the holds table, renewed by the process that
// holds them until it releases them, closes or dies.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/capabilities-sh/capabilities/store"
	"github.com/jackc/pgx/v5"
)

// DefaultLeaseTTL is how long a claim outlives the last renewal of its
// holder: the time a dead process's claims stay taken.
const DefaultLeaseTTL = 15 * time.Second

type claim struct {
	view *Store
	kind store.Kind
	id   string
}

// LeaseTTL sets how long a claim outlives its holder's last renewal
// (DefaultLeaseTTL); the holder renews it every third of that. Less than
// 300 ms is taken as 300 ms.
func LeaseTTL(d time.Duration) Option {
	return func(s *Store) { s.sh.leaseTTL = max(d, 300*time.Millisecond) }
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
