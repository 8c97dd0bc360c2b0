package pgstore_test

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/capabilities-sh/capabilities/engine/identity"
	"github.com/capabilities-sh/capabilities/engine/identity/pgstore"
	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/capabilities-sh/capabilities/store/postgres"
)

func TestMain(m *testing.M) { os.Exit(testenv.RunLeavingNothing(m)) }

// migrated makes a database with the hub's schema (`capabilities hub
// init`) and returns the pools of two stores opened on it, as two
// replicas of the hosted hub have.
func migrated(t *testing.T, pg *testenv.Postgres) (a, b *pgxpool.Pool) {
	t.Helper()
	ctx := context.Background()
	u := pg.NewDatabase(t)
	if err := postgres.Migrate(ctx, u); err != nil {
		t.Fatal(err)
	}
	var pools []*pgxpool.Pool
	for range 2 {
		st, err := postgres.Open(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		pools = append(pools, st.Pool())
	}
	return pools[0], pools[1]
}

func TestStore(t *testing.T) {
	pg := testenv.StartPostgres(t)
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Microsecond) // PostgreSQL's precision
	alice := identity.Account{Tenant: identity.TenantID("https://idp.example", "alice"), Issuer: "https://idp.example", Subject: "alice", Name: "Alice", Email: "alice@example.com"}
	bob := identity.Account{Tenant: identity.TenantID("https://idp.example", "bob"), Issuer: "https://idp.example", Subject: "bob"}

	t.Run("Sessions", func(t *testing.T) {
		a, b := migrated(t, pg)
		one, other := pgstore.New(a), pgstore.New(b)
		s1 := identity.Session{ID: "session-one", Account: alice, Created: now, Expires: now.Add(time.Hour)}
		s2 := identity.Session{ID: "session-two", Account: bob, Created: now, Expires: now.Add(2 * time.Hour)}
		for _, s := range []identity.Session{s1, s2} {
			if err := one.PutSession(ctx, s); err != nil {
				t.Fatal(err)
			}
		}
		// Read by the other replica.
		for _, want := range []identity.Session{s1, s2} {
			got, ok, err := other.GetSession(ctx, want.ID)
			if err != nil || !ok {
				t.Fatalf("GetSession(%s) = %v, %v", want.ID, ok, err)
			}
			if diff := cmp.Diff(want, got, cmp.Comparer(func(x, y time.Time) bool { return x.Equal(y) })); diff != "" {
				t.Errorf("GetSession(%s) (-want +got):\n%s", want.ID, diff)
			}
		}
		for _, id := range []string{"", "session-thr", "session-one ", "SESSION-ONE"} {
			if _, ok, err := other.GetSession(ctx, id); ok || err != nil {
				t.Errorf("GetSession(%q) of no session = %v, %v; want none", id, ok, err)
			}
		}
		// Saving again replaces it.
		s1.Expires = now.Add(3 * time.Hour)
		if err := other.PutSession(ctx, s1); err != nil {
			t.Fatal(err)
		}
		if got, _, _ := one.GetSession(ctx, s1.ID); !got.Expires.Equal(s1.Expires) {
			t.Errorf("after saving again, expires %v; want %v", got.Expires, s1.Expires)
		}
		if err := other.DeleteSession(ctx, s1.ID); err != nil {
			t.Fatal(err)
		}
		if _, ok, err := one.GetSession(ctx, s1.ID); ok || err != nil {
			t.Errorf("GetSession after DeleteSession = %v, %v; want none", ok, err)
		}
		if _, ok, _ := one.GetSession(ctx, s2.ID); !ok {
			t.Error("DeleteSession of one session ended another")
		}
		if err := one.DeleteSession(ctx, "never-was"); err != nil {
			t.Errorf("DeleteSession of no session: %v", err)
		}
		if err := one.PutSession(ctx, identity.Session{Account: alice, Expires: now}); err == nil {
			t.Error("PutSession of a session with no id: no error")
		}
	})

	t.Run("IDsNotStored", func(t *testing.T) {
		a, _ := migrated(t, pg)
		s := pgstore.New(a)
		const id = "the-secret-session-id-7f3a"
		if err := s.PutSession(ctx, identity.Session{ID: id, Account: alice, Created: now, Expires: now.Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.UseState(ctx, "the-secret-state-9c1d", now.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		var found bool
		err := a.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM identity_sessions s WHERE position(convert_to($1, 'UTF8') IN s.id_hash) > 0)
			OR EXISTS (SELECT 1 FROM identity_states WHERE position(convert_to($2, 'UTF8') IN state_hash) > 0)`, id, "the-secret-state-9c1d").Scan(&found)
		if err != nil {
			t.Fatal(err)
		}
		if found {
			t.Error("a session id or a state is stored as it is, not hashed")
		}
	})

	t.Run("ExpiredKeptForTheRP", func(t *testing.T) {
		// The relying party compares the expiry with its own clock; the
		// store gives the session back as saved until it is swept.
		a, _ := migrated(t, pg)
		s := pgstore.New(a)
		old := identity.Session{ID: "old", Account: alice, Created: now.Add(-3 * time.Hour), Expires: now.Add(-2 * time.Hour)}
		recent := identity.Session{ID: "recent", Account: alice, Created: now.Add(-time.Hour), Expires: now.Add(-time.Minute)}
		live := identity.Session{ID: "live", Account: alice, Created: now, Expires: now.Add(time.Hour)}
		for _, se := range []identity.Session{old, recent, live} {
			if err := s.PutSession(ctx, se); err != nil {
				t.Fatal(err)
			}
		}
		if _, ok, _ := s.GetSession(ctx, "recent"); !ok {
			t.Error("an expired session is gone before Sweep")
		}
		if _, err := s.UseState(ctx, "old-state", now.Add(-2*time.Hour)); err != nil {
			t.Fatal(err)
		}
		if err := s.Sweep(ctx); err != nil {
			t.Fatal(err)
		}
		for id, want := range map[string]bool{"old": false, "recent": true, "live": true} {
			if _, ok, err := s.GetSession(ctx, id); ok != want || err != nil {
				t.Errorf("after Sweep, GetSession(%s) = %v, %v; want %v", id, ok, err, want)
			}
		}
		// A state swept after its expiry may be used again (the relying
		// party refuses an expired sign-in itself).
		if fresh, err := s.UseState(ctx, "old-state", now.Add(-2*time.Hour)); !fresh || err != nil {
			t.Errorf("UseState of a swept state = %v, %v; want it forgotten", fresh, err)
		}
	})

	t.Run("StateUsedOnceAcrossReplicas", func(t *testing.T) {
		a, b := migrated(t, pg)
		stores := []*pgstore.Store{pgstore.New(a), pgstore.New(b)}
		const n = 32
		var wg sync.WaitGroup
		fresh := make([]bool, n)
		errs := make([]error, n)
		for i := range n {
			wg.Go(func() { fresh[i], errs[i] = stores[i%2].UseState(ctx, "state-1", now.Add(10*time.Minute)) })
		}
		wg.Wait()
		won := 0
		for i := range n {
			if errs[i] != nil {
				t.Fatal(errs[i])
			}
			if fresh[i] {
				won++
			}
		}
		if won != 1 {
			t.Errorf("%d of %d concurrent uses of one state succeeded; want exactly 1", won, n)
		}
		if ok, err := stores[0].UseState(ctx, "state-2", now.Add(10*time.Minute)); !ok || err != nil {
			t.Errorf("another state = %v, %v; want fresh", ok, err)
		}
		if _, err := stores[0].UseState(ctx, "", now); err == nil {
			t.Error("UseState of an empty state: no error")
		}
	})
}
