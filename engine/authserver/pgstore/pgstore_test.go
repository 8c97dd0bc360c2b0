package pgstore_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/capabilities-sh/capabilities/engine/authserver"
	"github.com/capabilities-sh/capabilities/engine/authserver/pgstore"
	"github.com/capabilities-sh/capabilities/engine/authserver/storetest"
	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/capabilities-sh/capabilities/store/postgres"
)

func TestStore(t *testing.T) {
	pg := testenv.StartPostgres(t)
	storetest.Run(t, func(t *testing.T) authserver.Store {
		return pgstore.New(migrated(t, pg))
	})
}

// migrated makes a database with the hub's schema (what `capabilities hub
// init` makes) and returns the pool of a store opened on it.
func migrated(t testing.TB, pg *testenv.Postgres) *pgxpool.Pool {
	t.Helper()
	ctx := context.Background()
	u := pg.NewDatabase(t)
	if err := postgres.Migrate(ctx, u); err != nil {
		t.Fatal(err)
	}
	st, err := postgres.Open(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st.Pool()
}

func newServer(t testing.TB) (*authserver.Server, *pgstore.Store) {
	pg := testenv.StartPostgres(t)
	s := pgstore.New(migrated(t, pg))
	as, err := authserver.New(authserver.Config{Issuer: "https://hub.example", Store: s,
		Person: func(*http.Request) (string, bool) { return "", false }})
	if err != nil {
		t.Fatal(err)
	}
	return as, s
}

// token stores an access token as the server would (by its SHA-256).
func token(t testing.TB, s *pgstore.Store, value, family string) {
	sum := sha256.Sum256([]byte(value))
	err := s.CreateTokens(context.Background(), authserver.Token{Hash: hex.EncodeToString(sum[:]), Kind: authserver.Access,
		ClientID: "c", Tenant: "alice", Resource: "https://hub.example/mcp", Family: family, Expires: time.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
}

func TestVerifyOnPostgres(t *testing.T) {
	as, s := newServer(t)
	ctx := context.Background()
	token(t, s, "cap_at_one", "f1")
	if g, err := as.Verify(ctx, "cap_at_one", "https://hub.example/mcp"); err != nil || g.Tenant != "alice" {
		t.Fatalf("Verify: %+v %v", g, err)
	}
	if _, err := as.Verify(ctx, "cap_at_one", "https://other.example/mcp"); !errors.Is(err, authserver.ErrInvalidToken) {
		t.Errorf("another resource: %v", err)
	}
	if err := s.RevokeFamily(ctx, "f1"); err != nil {
		t.Fatal(err)
	}
	if _, err := as.Verify(ctx, "cap_at_one", "https://hub.example/mcp"); !errors.Is(err, authserver.ErrInvalidToken) {
		t.Errorf("revoked: %v", err)
	}
}

// BenchmarkVerify is the per-request token check on PostgreSQL (one
// indexed read over a local TCP connection).
func BenchmarkVerify(b *testing.B) {
	as, s := newServer(b)
	token(b, s, "cap_at_bench", "f")
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := as.Verify(ctx, "cap_at_bench", "https://hub.example/mcp"); err != nil {
			b.Fatal(err)
		}
	}
}
