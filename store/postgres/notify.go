package postgres

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/capabilities-sh/capabilities/store"
	"github.com/jackc/pgx/v5"
)

// changesChannel is the channel of PostgreSQL's LISTEN/NOTIFY on which
// every write of a followed kind (store.Followed) is announced as
// "kind/id", by pg_notify in the statement (and so the transaction) of the
// write: a listener hears of it once it is committed, never before, and
// never of a write that rolled back.
const changesChannel = "capabilities_changes"

// listenerName is the application_name of a feed's connection (in
// pg_stat_activity).
const listenerName = "capabilities-changes"

// Changes follows every process's writes through LISTEN on a connection of
// its own (outside the pool, which it must not tie up). When that
// connection is lost (PostgreSQL restarted, a network cut, an
// administrator ended it), the feed connects again, with a growing pause up
// to 5 s between tries, and then reports a Change with Resync: whatever was
// written meanwhile was not heard.
func (s *Store) Changes(ctx context.Context) (<-chan store.Change, error) {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return nil, errors.New("following the store's changes: the store is closed")
	}
	ctx, cancel := context.WithCancel(ctx)
	c, err := s.listen(ctx)
	if err != nil {
		cancel()
		return nil, err
	}
	out := make(chan store.Change, 64)
	go func() {
		select {
		case <-s.stop:
		case <-ctx.Done():
		}
		cancel()
	}()
	go s.follow(ctx, c, out)
	return out, nil
}

// listen opens the feed's connection and listens on the channel.
func (s *Store) listen(ctx context.Context) (*pgx.Conn, error) {
	cfg := s.pool.Config().ConnConfig.Copy()
	cfg.RuntimeParams["application_name"] = listenerName
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, describe("following the store's changes in PostgreSQL at "+s.where, cfg.User, err)
	}
	if _, err := c.Exec(ctx, `LISTEN `+changesChannel); err != nil {
		_ = c.Close(context.Background())
		return nil, describe("following the store's changes in PostgreSQL at "+s.where, cfg.User, err)
	}
	return c, nil
}

func (s *Store) follow(ctx context.Context, c *pgx.Conn, out chan<- store.Change) {
	defer close(out)
	defer func() {
		if c != nil { // nil when ctx ended while connecting again
			_ = c.Close(context.Background())
		}
	}()
	send := func(ch store.Change) bool {
		select {
		case out <- ch:
			return true
		case <-ctx.Done():
			return false
		}
	}
	for {
		n, err := c.WaitForNotification(ctx)
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			kind, id, ok := strings.Cut(n.Payload, "/")
			if ok && store.IsFollowed(store.Kind(kind)) && store.ValidID(id) == nil {
				if !send(store.Change{Kind: store.Kind(kind), ID: id}) {
					return
				}
			}
			continue
		}
		slog.Warn("the connection that follows the store's changes was lost; connecting again", "where", s.where, "err", err)
		_ = c.Close(context.Background())
		if c = s.relisten(ctx); c == nil {
			return
		}
		slog.Info("following the store's changes again; what changed meanwhile is read anew", "where", s.where)
		if !send(store.Change{Resync: true}) {
			return
		}
	}
}

// relisten connects again until it can, or ctx is done (nil).
func (s *Store) relisten(ctx context.Context) *pgx.Conn {
	pause := 50 * time.Millisecond
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(pause):
		}
		tctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		c, err := s.listen(tctx)
		cancel()
		if err == nil {
			return c
		}
		if ctx.Err() != nil {
			return nil
		}
		slog.Debug("connecting again to follow the store's changes", "where", s.where, "err", err)
		pause = min(2*pause, 5*time.Second)
	}
}
