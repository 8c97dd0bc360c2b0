package postgres

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/capabilities-sh/capabilities/store"
	"github.com/jackc/pgx/v5"
)

// changesChannel is the channel of PostgreSQL's LISTEN/NOTIFY on which
// every write of a followed kind (store.Followed) is announced as
// "kind/id" (tenant "") or "tenant@kind/id", by pg_notify in the statement
// (and so the transaction) of the write: a listener hears of it once it is
// committed, never before, and never of a write that rolled back.
const changesChannel = "capabilities_changes"

// listenerName is the application_name of a feed's connection (in
// pg_stat_activity).
const listenerName = "capabilities-changes"

// feed is the one LISTEN connection of an Open and its views, and the
// subscribers it hands each notification to: those of the notification's
// tenant only.
type feed struct {
	mu      sync.Mutex
	started bool
	subs    map[*sub]struct{}
	done    chan struct{} // closed when the listening goroutine ends
}

// feedQueue is how many changes a feed may fall behind the others before
// it drops them and says Resync instead.
var feedQueue = 10000

// sub is one Changes call's subscription. The listening goroutine never
// waits for a subscriber: it queues the change (notifications come in
// bursts, which a feed's reader takes a moment to catch up with); when
// the queue holds feedQueue it marks the subscription lost instead, and
// the feed says Resync once its reader has caught up.
type sub struct {
	tenant string
	max    int           // feedQueue when it subscribed
	wake   chan struct{} // poked when queue or lost changes

	mu    sync.Mutex
	queue []store.Change
	lost  bool
}

// put queues ch (or marks the subscription lost) and wakes its reader.
func (sb *sub) put(ch store.Change) {
	sb.mu.Lock()
	switch {
	case ch.Resync:
		sb.lost = true
	case len(sb.queue) < sb.max:
		sb.queue = append(sb.queue, ch)
	default:
		sb.lost = true
	}
	sb.mu.Unlock()
	select {
	case sb.wake <- struct{}{}:
	default:
	}
}

// take returns what is queued and whether changes were lost since the
// last take.
func (sb *sub) take() ([]store.Change, bool) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	q, lost := sb.queue, sb.lost
	sb.queue, sb.lost = nil, false
	return q, lost
}

// wait waits for the listening goroutine, if any, to end (after sh.stop).
func (f *feed) wait() {
	f.mu.Lock()
	started, done := f.started, f.done
	f.mu.Unlock()
	if started {
		<-done
	}
}

// Changes follows every process's writes of this view's tenant. One
// connection of its own (outside the pool, which it must not tie up)
// listens for an Open's Store and all its views, made by the first call.
// When that connection is lost (PostgreSQL restarted, a network cut, an
// administrator ended it), it connects again, with a growing pause up to
// 5 s between tries, and every feed then reports a Change with Resync:
// whatever was written meanwhile was not heard. A feed that falls behind
// the others by more than 10,000 changes reports Resync rather than hold
// them up. The feed ends when ctx does or the view is closed.
func (s *Store) Changes(ctx context.Context) (<-chan store.Change, error) {
	if err := s.usable("following the store's changes"); err != nil {
		return nil, err
	}
	sh := s.sh
	f := &sh.feed
	f.mu.Lock()
	if !f.started {
		c, err := sh.listen(ctx)
		if err != nil {
			f.mu.Unlock()
			return nil, err
		}
		f.started = true
		f.done = make(chan struct{})
		f.subs = map[*sub]struct{}{}
		go sh.dispatch(c)
	}
	sb := &sub{tenant: s.tenant, max: feedQueue, wake: make(chan struct{}, 1)}
	f.subs[sb] = struct{}{}
	f.mu.Unlock()

	ctx, cancel := context.WithCancel(ctx)
	out := make(chan store.Change, 64)
	go func() {
		select {
		case <-s.stopc:
		case <-sh.stop:
		case <-ctx.Done():
		}
		cancel()
	}()
	go func() {
		defer close(out)
		defer func() {
			f.mu.Lock()
			delete(f.subs, sb)
			f.mu.Unlock()
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
			select {
			case <-sb.wake:
			case <-ctx.Done():
				return
			}
			q, lost := sb.take()
			for _, ch := range q {
				if !send(ch) {
					return
				}
			}
			if lost && !send(store.Change{Resync: true}) {
				return
			}
		}
	}()
	return out, nil
}

// listen opens the feed's connection and listens on the channel.
func (sh *shared) listen(ctx context.Context) (*pgx.Conn, error) {
	cfg := sh.pool.Config().ConnConfig.Copy()
	cfg.RuntimeParams["application_name"] = listenerName
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, describe("following the store's changes in PostgreSQL at "+sh.where, cfg.User, err)
	}
	if _, err := c.Exec(ctx, `LISTEN `+changesChannel); err != nil {
		_ = c.Close(context.Background())
		return nil, describe("following the store's changes in PostgreSQL at "+sh.where, cfg.User, err)
	}
	return c, nil
}

// parseChange reads a notification's payload: [tenant "@"] kind "/" id.
func parseChange(payload string) (tenant string, ch store.Change, ok bool) {
	head, id, ok := strings.Cut(payload, "/")
	if !ok {
		return "", ch, false
	}
	tenant, kind, found := strings.Cut(head, "@")
	if !found {
		tenant, kind = "", head
	}
	if !store.IsFollowed(store.Kind(kind)) || store.ValidID(id) != nil || ValidTenant(tenant) != nil {
		return "", ch, false
	}
	return tenant, store.Change{Kind: store.Kind(kind), ID: id}, true
}

// broadcast hands ch to the subscribers of tenant (every subscriber, for
// a Resync), never waiting for one.
func (sh *shared) broadcast(tenant string, ch store.Change) {
	f := &sh.feed
	f.mu.Lock()
	defer f.mu.Unlock()
	for sb := range f.subs {
		if ch.Resync || sb.tenant == tenant {
			sb.put(ch)
		}
	}
}

// dispatch reads the notifications of c until the Store closes.
func (sh *shared) dispatch(c *pgx.Conn) {
	defer close(sh.feed.done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-sh.stop
		cancel()
	}()
	defer func() {
		if c != nil { // nil when the Store closed while connecting again
			_ = c.Close(context.Background())
		}
	}()
	for {
		n, err := c.WaitForNotification(ctx)
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			if tenant, ch, ok := parseChange(n.Payload); ok {
				sh.broadcast(tenant, ch)
			}
			continue
		}
		slog.Warn("the connection that follows the store's changes was lost; connecting again", "where", sh.where, "err", err)
		_ = c.Close(context.Background())
		if c = sh.relisten(ctx); c == nil {
			return
		}
		slog.Info("following the store's changes again; what changed meanwhile is read anew", "where", sh.where)
		sh.broadcast("", store.Change{Resync: true})
	}
}

// relisten connects again until it can, or ctx is done (nil).
func (sh *shared) relisten(ctx context.Context) *pgx.Conn {
	pause := 50 * time.Millisecond
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(pause):
		}
		tctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		c, err := sh.listen(tctx)
		cancel()
		if err == nil {
			return c
		}
		if ctx.Err() != nil {
			return nil
		}
		slog.Debug("connecting again to follow the store's changes", "where", sh.where, "err", err)
		pause = min(2*pause, 5*time.Second)
	}
}
