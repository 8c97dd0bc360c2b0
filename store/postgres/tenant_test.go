package postgres_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/identity"
	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/capabilities-sh/capabilities/store"
	"github.com/capabilities-sh/capabilities/store/postgres"
	"github.com/capabilities-sh/capabilities/store/storetest"
	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
)

var (
	tenantA = identity.TenantID("https://idp.example", "alice")
	tenantB = identity.TenantID("https://idp.example", "mallory")
)

// suiteIDs are the ids the conformance suite (storetest) uses, and more:
// a neighbour tenant holds records, logs and claims under every one of
// them, so that a statement that forgets its tenant shows in the suite.
var suiteIDs = []string{"everything", "memory", "filesystem", "default", "p", "nope", "good", "bad", "r1", "r2", "r3", "r4", "u1", "b", "b1", "w-sources", "w-runs", "w-policies", "w-profiles", "w-connections", "w-manifests", "committed", "a", "x"}

// neighbour fills the tenant of s with a record of every kind under every
// suite id, a log line and a claim on each, and bumps its generation; the
// claims are held until the test ends.
func neighbour(t *testing.T, s *postgres.Store) {
	t.Helper()
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, len(store.Kinds))
	for _, k := range store.Kinds {
		wg.Go(func() {
			for _, id := range suiteIDs {
				if err := s.Put(ctx, k, id, map[string]string{"name": "the neighbour's", "tenant": s.TenantID()}); err != nil {
					errs <- err
					return
				}
				// The suite's logs and claims are of runs and blobs.
				if k != store.Runs && k != store.Blobs {
					continue
				}
				if err := s.Append(ctx, k, id, []byte(`{"neighbour":true}`)); err != nil {
					errs <- err
					return
				}
				release, err := s.Hold(ctx, k, id)
				if err != nil {
					errs <- err
					return
				}
				t.Cleanup(release)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, name := range []string{postgres.KeyElicit, postgres.KeyPage, postgres.KeyHTTPToken} {
		if _, _, err := s.Key(ctx, name, 32); err != nil {
			t.Fatal(err)
		}
	}
}

// TestTenantConformance runs the store's conformance suite on a tenant's
// view of a database whose other tenants ("" and another) have records,
// logs and claims under the very ids the suite uses: every check of the
// suite (a missing record, a List, a free claim, a generation) fails if a
// statement reads or takes another tenant's rows.
func TestTenantConformance(t *testing.T) {
	pg := testenv.StartPostgres(t)

	t.Run("Conformance", func(t *testing.T) {
		storetest.Run(t, func(t *testing.T) store.Store {
			root, _ := fresh(t, pg)
			neighbour(t, root)
			neighbour(t, root.Tenant(tenantB))
			return root.Tenant(tenantA)
		})
	})

	t.Run("Shared", func(t *testing.T) {
		// The same tenant through two Opens (two processes).
		storetest.RunShared(t, func(t *testing.T) (store.Store, store.Store) {
			a, u := fresh(t, pg)
			neighbour(t, a)
			neighbour(t, a.Tenant(tenantB))
			return a.Tenant(tenantA), open(t, u).Tenant(tenantA)
		})
	})
}

func TestValidTenant(t *testing.T) {
	for _, sub := range []string{"alice", "bob", "", "a@b.c", strings.Repeat("x", 1000)} {
		id := identity.TenantID("https://idp.example", sub)
		if err := postgres.ValidTenant(id); err != nil {
			t.Errorf("ValidTenant(TenantID(%q)) = %v; want nil", sub, err)
		}
	}
	good := tenantA[3:]
	for _, tc := range []struct{ id, want string }{
		{"", ""},
		{tenantA, ""},
		{"tn_A" + good[1:], `has 'A' at position 4; after "tn_" only lowercase base32 (a-z, 2-7) is allowed`},
		{"tn_" + good[:31] + "1", `has '1' at position 35`},
		{"tn_" + good[:31] + "/", `has '/' at position 35`},
		{"tn_" + good[:31] + "@", `has '@' at position 35`},
		{"tn_" + good[:31], `must be "tn_" and 32 characters, not 31`},
		{"tn_" + good + "a", `must be "tn_" and 32 characters, not 33`},
		{"TN_" + good, `must be empty (the local hub) or start with "tn_"`},
		{"alice", `must be empty (the local hub) or start with "tn_"`},
		{" " + tenantA, `must be empty (the local hub) or start with "tn_"`},
		{"tn_" + good[:30] + "é", `has 'é' at position 34`},
	} {
		err := postgres.ValidTenant(tc.id)
		if tc.want == "" {
			if err != nil {
				t.Errorf("ValidTenant(%q) = %v; want nil", tc.id, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ValidTenant(%q) = %v; want an error containing %q", tc.id, err, tc.want)
		}
	}
}

// TestTenantRefused: a view of an invalid tenant does nothing at all.
func TestTenantRefused(t *testing.T) {
	pg := testenv.StartPostgres(t)
	ctx := context.Background()
	root, _ := fresh(t, pg)
	if err := root.Put(ctx, store.Sources, "x", map[string]int{}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"TN_X", "tn_%", "tn_" + strings.Repeat("a", 31) + "'", "x' OR '1'='1"} {
		v := root.Tenant(id)
		calls := map[string]error{}
		calls["Get"] = v.Get(ctx, store.Sources, "x", &map[string]int{})
		calls["Put"] = v.Put(ctx, store.Sources, "x", map[string]int{})
		calls["Update"] = v.Update(ctx, store.Sources, "x", func(b []byte) ([]byte, error) { return b, nil })
		calls["Delete"] = v.Delete(ctx, store.Sources, "x")
		_, calls["List"] = v.List(ctx, store.Sources)
		calls["Append"] = v.Append(ctx, store.Runs, "x", []byte("l"))
		_, calls["OpenLog"] = v.OpenLog(ctx, store.Runs, "x")
		_, calls["ReadLog"] = v.ReadLog(ctx, store.Runs, "x")
		_, calls["Hold"] = v.Hold(ctx, store.Runs, "x")
		_, calls["Held"] = v.Held(ctx, store.Runs, "x")
		_, calls["Generation"] = v.Generation()
		_, _, calls["Key"] = v.Key(ctx, postgres.KeyPage, 32)
		_, calls["LookupKey"] = v.LookupKey(ctx, postgres.KeyPage)
		_, _, calls["HTTPToken"] = v.HTTPToken(ctx)
		_, calls["Spend"] = v.Spend(ctx, "page", "x", time.Now().Add(time.Hour))
		_, calls["Changes"] = v.Changes(ctx)
		for name, err := range calls {
			if err == nil || !strings.Contains(err.Error(), "tenant id") {
				t.Errorf("Tenant(%q).%s = %v; want the invalid tenant's error", id, name, err)
			}
		}
	}
	// The root's record is untouched.
	if err := root.Get(ctx, store.Sources, "x", &map[string]int{}); err != nil {
		t.Errorf("the root's record after the invalid views' calls: %v", err)
	}
}

// nextOn returns the feed's next change that is not a Resync.
func nextOn(t *testing.T, feed <-chan store.Change) store.Change {
	t.Helper()
	for {
		if c := next(t, feed); !c.Resync {
			return c
		}
	}
}

// TestTenantsApart is I5 on the store, as a second tenant would attack:
// two tenants (and the local hub, tenant "") on one database use the same
// kinds and ids, through one Open and through another (a second
// process), and nothing of one is visible, changed, held, spent or heard
// through the other.
func TestTenantsApart(t *testing.T) {
	pg := testenv.StartPostgres(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	root, u := fresh(t, pg)
	other := open(t, u) // another process on the same database
	a := root.Tenant(tenantA)
	b := other.Tenant(tenantB)
	bHere := root.Tenant(tenantB) // b's tenant through a's process
	local := root.Tenant("")

	type rec struct {
		Owner string `json:"owner"`
		N     int    `json:"n"`
	}
	views := map[string]*postgres.Store{"A": a, "B": b, "local": local}
	names := []string{"A", "B", "local"}

	// Feeds first: every write below is heard by its tenant only.
	feeds := map[string]<-chan store.Change{}
	for _, n := range names {
		f, err := views[n].Changes(ctx)
		if err != nil {
			t.Fatal(err)
		}
		feeds[n] = f
	}
	bHereFeed, err := bHere.Changes(ctx)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("Records", func(t *testing.T) {
		for _, n := range names {
			for _, k := range store.Kinds {
				if err := views[n].Put(ctx, k, "same", rec{Owner: n}); err != nil {
					t.Fatal(err)
				}
			}
		}
		for _, n := range names {
			for _, k := range store.Kinds {
				got, err := store.Get[rec](ctx, views[n], k, "same")
				if err != nil || got.Owner != n {
					t.Errorf("%s reads %s/same = %+v, %v; want its own", n, k, got, err)
				}
			}
		}
		// A record only A has is not found through B, here or there.
		if err := a.Put(ctx, store.Sources, "only-a", rec{Owner: "A"}); err != nil {
			t.Fatal(err)
		}
		for _, v := range []*postgres.Store{b, bHere, local} {
			if err := v.Get(ctx, store.Sources, "only-a", &rec{}); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("tenant %q reads A's sources/only-a: %v; want ErrNotFound", v.TenantID(), err)
			}
			ids, err := v.List(ctx, store.Sources)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]string{"same"}, ids); diff != "" {
				t.Errorf("tenant %q lists sources (-want +got):\n%s", v.TenantID(), diff)
			}
		}
		// B updating A's id sees no old record, and writes its own.
		err := b.Update(ctx, store.Sources, "only-a", func(old []byte) ([]byte, error) {
			if old != nil {
				t.Errorf("B's Update of sources/only-a was given A's record: %s", old)
			}
			return []byte(`{"owner":"B"}`), nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := store.Get[rec](ctx, a, store.Sources, "only-a"); got.Owner != "A" {
			t.Errorf("A's record after B's Update of the same id = %+v", got)
		}
		// B deleting its own "same" leaves A's and the local hub's.
		for _, k := range store.Kinds {
			if err := bHere.Delete(ctx, k, "same"); err != nil {
				t.Fatal(err)
			}
		}
		for _, n := range []string{"A", "local"} {
			for _, k := range store.Kinds {
				if got, err := store.Get[rec](ctx, views[n], k, "same"); err != nil || got.Owner != n {
					t.Errorf("%s's %s/same after B deleted its own: %+v, %v", n, k, got, err)
				}
			}
		}
		if err := b.Get(ctx, store.Runs, "same", &rec{}); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("B's runs/same after its Delete: %v", err)
		}
	})

	t.Run("Logs", func(t *testing.T) {
		for _, n := range names {
			for i := range 3 {
				if err := views[n].Append(ctx, store.Runs, "log", fmt.Appendf(nil, `{"owner":%q,"i":%d}`, n, i)); err != nil {
					t.Fatal(err)
				}
			}
		}
		l, err := b.OpenLog(ctx, store.Runs, "log")
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Write([]byte(`{"owner":"B","i":3}`)); err != nil {
			t.Fatal(err)
		}
		_ = l.Sync()
		for _, n := range names {
			lines, err := views[n].ReadLog(ctx, store.Runs, "log")
			if err != nil {
				t.Fatal(err)
			}
			want := 3
			if n == "B" {
				want = 4
			}
			if len(lines) != want {
				t.Errorf("%s's log has %d lines; want %d", n, len(lines), want)
			}
			for _, line := range lines {
				if !bytes.Contains(line, []byte(`"owner":"`+n+`"`)) {
					t.Errorf("%s's log has another's line %s", n, line)
				}
			}
		}
		// Deleting A's record takes A's log only.
		if err := a.Delete(ctx, store.Runs, "log"); err != nil {
			t.Fatal(err)
		}
		if lines, _ := a.ReadLog(ctx, store.Runs, "log"); len(lines) != 0 {
			t.Errorf("A's log after its Delete: %d lines", len(lines))
		}
		for _, n := range []string{"B", "local"} {
			if lines, _ := views[n].ReadLog(ctx, store.Runs, "log"); len(lines) == 0 {
				t.Errorf("%s's log went with A's Delete", n)
			}
		}
	})

	t.Run("Claims", func(t *testing.T) {
		releaseA, err := a.Hold(ctx, store.Runs, "r1")
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range []*postgres.Store{b, bHere, local} {
			if held, err := v.Held(ctx, store.Runs, "r1"); held || err != nil {
				t.Errorf("tenant %q: Held(runs/r1) while only A holds it = %v, %v", v.TenantID(), held, err)
			}
		}
		releaseB, err := b.Hold(ctx, store.Runs, "r1")
		if err != nil {
			t.Fatalf("B's Hold of runs/r1 while A holds its own: %v", err)
		}
		if _, err := bHere.Hold(ctx, store.Runs, "r1"); !errors.Is(err, store.ErrBusy) {
			t.Errorf("B's Hold of its own held runs/r1 from A's process = %v; want ErrBusy", err)
		}
		releaseA()
		if held, _ := b.Held(ctx, store.Runs, "r1"); !held {
			t.Error("A's release ended B's claim")
		}
		if _, err := a.Hold(ctx, store.Runs, "r1"); err != nil {
			t.Errorf("A's Hold again after its release, while B holds its own: %v", err)
		}
		releaseB()
	})

	t.Run("Generation", func(t *testing.T) {
		gens := map[string]store.Generation{}
		for _, n := range names {
			g, err := views[n].Generation()
			if err != nil {
				t.Fatal(err)
			}
			gens[n] = g
		}
		if err := a.Put(ctx, store.Policies, "bump", rec{Owner: "A"}); err != nil {
			t.Fatal(err)
		}
		if err := a.Delete(ctx, store.Sources, "only-a"); err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			g, err := views[n].Generation()
			if err != nil {
				t.Fatal(err)
			}
			if moved := g != gens[n]; moved != (n == "A") {
				t.Errorf("%s's generation moved = %v after A's writes; want %v", n, moved, n == "A")
			}
		}
	})

	t.Run("HubKeys", func(t *testing.T) {
		tokens := map[string]string{}
		seen := map[string]string{}
		for _, n := range names {
			tok, _, err := views[n].HTTPToken(ctx)
			if err != nil {
				t.Fatal(err)
			}
			page, _, err := views[n].Key(ctx, postgres.KeyPage, 32)
			if err != nil {
				t.Fatal(err)
			}
			for what, v := range map[string]string{"bearer token": tok, "page key": string(page)} {
				if prev, ok := seen[v]; ok {
					t.Errorf("%s's %s is %s's", n, what, prev)
				}
				seen[v] = n + "'s " + what
			}
			tokens[n] = tok
		}
		// The same tenant through either process: the same token.
		if tok, created, err := bHere.HTTPToken(ctx); err != nil || created || tok != tokens["B"] {
			t.Errorf("B's token through A's process: created %v, %v; equal %v", created, err, tok == tokens["B"])
		}
		if _, _, err := a.Key(ctx, "only-a-key", 32); err != nil {
			t.Fatal(err)
		}
		for _, v := range []*postgres.Store{b, bHere, local} {
			if _, err := v.LookupKey(ctx, "only-a-key"); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("tenant %q looks up A's key: %v; want ErrNotFound", v.TenantID(), err)
			}
		}
	})

	t.Run("Spent", func(t *testing.T) {
		exp := time.Now().Add(time.Hour)
		if ok, err := a.Spend(ctx, "page", "token-1", exp); !ok || err != nil {
			t.Fatalf("A's first Spend = %v, %v", ok, err)
		}
		for _, v := range []*postgres.Store{b, local} {
			if ok, err := v.Spend(ctx, "page", "token-1", exp); !ok || err != nil {
				t.Errorf("tenant %q's Spend of the id A spent = %v, %v; want its own first spend", v.TenantID(), ok, err)
			}
		}
		if ok, _ := bHere.Spend(ctx, "page", "token-1", exp); ok {
			t.Error("B's token spent through one process was spent again through the other")
		}
		if ok, _ := a.Spend(ctx, "page", "token-1", exp); ok {
			t.Error("A's token spent twice")
		}
	})

	t.Run("Changes", func(t *testing.T) {
		// Everything above was heard by its own tenant's feeds only: after
		// a last write of each tenant (a sentinel), the feed has heard
		// its own writes and the sentinel and nothing else. Notifications
		// come in the order of their commits.
		for _, n := range names {
			if err := views[n].Put(ctx, store.Runs, "sentinel-"+n, rec{Owner: n}); err != nil {
				t.Fatal(err)
			}
		}
		wantSeen := map[string][]store.Change{}
		for _, k := range store.Followed {
			for _, n := range names {
				wantSeen[n] = append(wantSeen[n], store.Change{Kind: k, ID: "same"})
			}
		}
		for _, n := range names {
			sentinel := store.Change{Kind: store.Runs, ID: "sentinel-" + n}
			var heard []store.Change
			for {
				c := nextOn(t, feeds[n])
				if c == sentinel {
					break
				}
				heard = append(heard, c)
			}
			ids := map[string]bool{}
			for _, c := range heard {
				ids[c.ID] = true
			}
			want := map[string]bool{"same": true}
			switch n {
			case "A":
				want["only-a"], want["bump"], want["log"] = true, true, true // "log": its Delete
			case "B":
				want["only-a"] = true // its own Update of that id
			}
			if diff := cmp.Diff(want, ids); diff != "" {
				t.Errorf("%s's feed heard the ids (-want +got):\n%s\n%v", n, diff, heard)
			}
		}
		// B through A's process heard B's writes, not A's.
		for {
			c := nextOn(t, bHereFeed)
			if c.ID == "sentinel-B" {
				break
			}
			if c.ID == "bump" || c.ID == "sentinel-A" || c.ID == "sentinel-local" {
				t.Errorf("B's feed in A's process heard %s/%s", c.Kind, c.ID)
			}
		}
	})

	t.Run("CloseAView", func(t *testing.T) {
		v := root.Tenant(tenantA)
		f, err := v.Changes(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := v.Hold(ctx, store.Runs, "closing"); err != nil {
			t.Fatal(err)
		}
		releaseB, err := bHere.Hold(ctx, store.Runs, "closing")
		if err != nil {
			t.Fatal(err)
		}
		defer releaseB()
		if err := v.Close(); err != nil {
			t.Fatal(err)
		}
		for range f { // the view's feed ends
		}
		if err := v.Put(ctx, store.Runs, "x", rec{}); err == nil || !strings.Contains(err.Error(), "closed") {
			t.Errorf("Put on a closed view = %v; want it refused", err)
		}
		// Its claim went, B's did not, and the pool serves the others.
		if held, err := a.Held(ctx, store.Runs, "closing"); held || err != nil {
			t.Errorf("A's claim after its view closed: held %v, %v", held, err)
		}
		if held, err := b.Held(ctx, store.Runs, "closing"); !held || err != nil {
			t.Errorf("B's claim after A's view closed: held %v, %v", held, err)
		}
		if err := a.Put(ctx, store.Runs, "after-close", rec{Owner: "A"}); err != nil {
			t.Errorf("another view of A after one closed: %v", err)
		}
		if c := nextOn(t, feeds["A"]); c.ID != "after-close" {
			t.Errorf("A's other feed after a view closed heard %+v", c)
		}
	})

	t.Run("RowsCarryTheirTenant", func(t *testing.T) {
		// In the tables themselves: A's rows are A's, nothing lost its tenant.
		c, err := pgx.Connect(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close(ctx)
		for _, table := range []string{"records", "log_lines", "hub_keys", "spent", "generation"} {
			var tenants []string
			rows, err := c.Query(ctx, `SELECT DISTINCT tenant FROM `+table+` ORDER BY tenant`)
			if err != nil {
				t.Fatal(err)
			}
			tenants, err = pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				t.Fatal(err)
			}
			for _, tn := range tenants {
				if tn != "" && tn != tenantA && tn != tenantB {
					t.Errorf("%s has rows of tenant %q", table, tn)
				}
			}
		}
		var n int
		if err := c.QueryRow(ctx, `SELECT count(*) FROM records WHERE tenant = $1 AND kind = 'sources' AND id = 'same' AND position('"owner": "A"' IN convert_from(data, 'UTF8')) > 0`, tenantA).Scan(&n); err != nil || n != 1 {
			t.Errorf("A's sources/same row: %d, %v", n, err)
		}
	})
}

// TestMigrateTenants: a database of schema 2 (before tenants) keeps every
// row as tenant "" through migration 00003, and the down migration keeps
// tenant "" (the others' rows go).
func TestMigrateTenants(t *testing.T) {
	pg := testenv.StartPostgres(t)
	ctx := context.Background()
	u := pg.NewDatabase(t)
	if err := postgres.MigrateTo(ctx, u, 2); err != nil {
		t.Fatal(err)
	}
	superuser(t, u, `INSERT INTO records (kind, id, data) VALUES ('sources', 'old', '{"n": 7}');
INSERT INTO log_lines (kind, id, line) VALUES ('runs', 'old', '{"l":1}');
UPDATE generation SET n = 41;
INSERT INTO hub_keys (name, value) VALUES ('page-key', '0123456789abcdef0123456789abcdef');
INSERT INTO spent (purpose, id, expires_at) VALUES ('page', 'old', now() + interval '1 hour')`)
	if err := postgres.Migrate(ctx, u); err != nil {
		t.Fatal(err)
	}
	root := open(t, u)
	check := func(t *testing.T, s *postgres.Store, want bool) {
		t.Helper()
		err := s.Get(ctx, store.Sources, "old", &map[string]int{})
		if (err == nil) != want {
			t.Errorf("tenant %q: Get(sources/old) = %v; want found %v", s.TenantID(), err, want)
		}
		lines, _ := s.ReadLog(ctx, store.Runs, "old")
		if (len(lines) == 1) != want {
			t.Errorf("tenant %q: the old log has %d lines", s.TenantID(), len(lines))
		}
		g, _ := s.Generation()
		if (g == store.CountedGeneration(41)) != want {
			t.Errorf("tenant %q: generation %v", s.TenantID(), g)
		}
		_, err = s.LookupKey(ctx, postgres.KeyPage)
		if (err == nil) != want {
			t.Errorf("tenant %q: LookupKey(page-key) = %v", s.TenantID(), err)
		}
		fresh, _ := s.Spend(ctx, "page", "old", time.Now().Add(time.Hour))
		if fresh == want {
			t.Errorf("tenant %q: Spend of the old token = %v", s.TenantID(), fresh)
		}
	}
	check(t, root, true)
	check(t, root.Tenant(tenantA), false)

	// Down again: the local hub's rows stay.
	if err := root.Tenant(tenantA).Put(ctx, store.Sources, "a-only", map[string]int{}); err != nil {
		t.Fatal(err)
	}
	_ = root.Close()
	if err := postgres.MigrateTo(ctx, u, 2); err != nil {
		t.Fatal(err)
	}
	var n, g int
	c, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if err := c.QueryRow(ctx, `SELECT (SELECT count(*) FROM records), (SELECT n FROM generation)`).Scan(&n, &g); err != nil {
		t.Fatal(err)
	}
	if n != 1 || g != 41 {
		t.Errorf("after the down migration: %d records (want the local hub's 1), generation %d (want 41)", n, g)
	}
	if err := postgres.Migrate(ctx, u); err != nil {
		t.Fatalf("up again after down: %v", err)
	}
}
