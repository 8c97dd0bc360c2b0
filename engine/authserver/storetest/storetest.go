// Package storetest checks that an authserver.Store keeps its contract, so
// the in-memory store and a PostgreSQL one are held to the same tests.
package storetest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/capabilities-sh/capabilities/engine/authserver"
)

// Run runs the contract tests on stores from newStore (a fresh, empty
// store each call).
func Run(t *testing.T, newStore func(t *testing.T) authserver.Store) {
	ctx := context.Background()
	exp := time.Now().Add(time.Hour).Truncate(time.Microsecond)

	t.Run("clients", func(t *testing.T) {
		s := newStore(t)
		c := authserver.Client{ID: "c1", SecretHash: "ab", AuthMethod: "client_secret_basic", Name: "n",
			RedirectURIs: []string{"https://a.example/cb", "http://127.0.0.1/cb"}, Scope: "mcp", Created: exp}
		if err := s.CreateClient(ctx, c); err != nil {
			t.Fatal(err)
		}
		got, err := s.Client(ctx, "c1")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(c, got, cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })); diff != "" {
			t.Errorf("client (-want +got):\n%s", diff)
		}
		if err := s.CreateClient(ctx, c); err == nil {
			t.Errorf("a second client with the same id was created")
		}
		if _, err := s.Client(ctx, "nope"); !errors.Is(err, authserver.ErrNotFound) {
			t.Errorf("unknown client: %v", err)
		}
	})

	t.Run("codes are single-use", func(t *testing.T) {
		s := newStore(t)
		code := authserver.Code{Hash: "h1", ClientID: "c1", Tenant: "t1", RedirectURI: "https://a.example/cb",
			Resource: "https://hub.example/mcp", Scope: "mcp", Challenge: "ch", Family: "f1", Expires: exp}
		if err := s.CreateCode(ctx, code); err != nil {
			t.Fatal(err)
		}
		got, err := s.UseCode(ctx, "h1")
		if err != nil {
			t.Fatal(err)
		}
		if got.Tenant != "t1" || got.Family != "f1" || got.Challenge != "ch" || !got.Expires.Equal(exp) {
			t.Errorf("code = %+v", got)
		}
		got, err = s.UseCode(ctx, "h1")
		if !errors.Is(err, authserver.ErrUsed) || got.Family != "f1" {
			t.Errorf("second use: %+v %v", got, err)
		}
		if _, err := s.UseCode(ctx, "nope"); !errors.Is(err, authserver.ErrNotFound) {
			t.Errorf("unknown code: %v", err)
		}
	})

	t.Run("concurrent uses: exactly one wins", func(t *testing.T) {
		s := newStore(t)
		if err := s.CreateCode(ctx, authserver.Code{Hash: "h", Family: "f", Expires: exp}); err != nil {
			t.Fatal(err)
		}
		if err := s.CreateTokens(ctx, authserver.Token{Hash: "r", Kind: authserver.Refresh, Family: "f", Expires: exp}); err != nil {
			t.Fatal(err)
		}
		for _, use := range []func() error{
			func() error { _, err := s.UseCode(ctx, "h"); return err },
			func() error { _, err := s.UseRefresh(ctx, "r"); return err },
		} {
			var wg sync.WaitGroup
			errs := make([]error, 8)
			for i := range errs {
				wg.Go(func() { errs[i] = use() })
			}
			wg.Wait()
			won := 0
			for _, err := range errs {
				switch {
				case err == nil:
					won++
				case !errors.Is(err, authserver.ErrUsed):
					t.Errorf("use: %v", err)
				}
			}
			if won != 1 {
				t.Errorf("%d concurrent uses won", won)
			}
		}
	})

	t.Run("tokens, rotation and revocation", func(t *testing.T) {
		s := newStore(t)
		at := authserver.Token{Hash: "a1", Kind: authserver.Access, ClientID: "c1", Tenant: "t1", Resource: "https://hub.example/mcp", Scope: "mcp", Family: "f1", Expires: exp}
		rt := authserver.Token{Hash: "r1", Kind: authserver.Refresh, ClientID: "c1", Tenant: "t1", Resource: "https://hub.example/mcp", Scope: "mcp", Family: "f1", Expires: exp}
		other := authserver.Token{Hash: "a2", Kind: authserver.Access, Family: "f2", Expires: exp}
		if err := s.CreateTokens(ctx, at, rt, other); err != nil {
			t.Fatal(err)
		}
		got, err := s.Token(ctx, "a1")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(at, got, cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })); diff != "" {
			t.Errorf("token (-want +got):\n%s", diff)
		}
		if _, err := s.Token(ctx, "nope"); !errors.Is(err, authserver.ErrNotFound) {
			t.Errorf("unknown token: %v", err)
		}
		if _, err := s.UseRefresh(ctx, "a1"); !errors.Is(err, authserver.ErrNotFound) {
			t.Errorf("an access token used as a refresh token: %v", err)
		}
		if _, err := s.UseRefresh(ctx, "r1"); err != nil {
			t.Fatal(err)
		}
		if got, err := s.UseRefresh(ctx, "r1"); !errors.Is(err, authserver.ErrUsed) || got.Family != "f1" {
			t.Errorf("refresh reuse: %+v %v", got, err)
		}
		if err := s.RevokeToken(ctx, "a2"); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.Token(ctx, "a2"); !got.Revoked {
			t.Errorf("revoked token not revoked")
		}
		if err := s.RevokeFamily(ctx, "f1"); err != nil {
			t.Fatal(err)
		}
		// A token of the family created after the revocation is revoked too.
		if err := s.CreateTokens(ctx, authserver.Token{Hash: "a3", Kind: authserver.Access, Family: "f1", Expires: exp}); err != nil {
			t.Fatal(err)
		}
		for _, h := range []string{"a1", "r1", "a3"} {
			if got, err := s.Token(ctx, h); err != nil || !got.Revoked {
				t.Errorf("token %s after its family was revoked: %+v %v", h, got, err)
			}
		}
		if err := s.RevokeToken(ctx, "nope"); err != nil {
			t.Errorf("revoking an unknown token: %v", err)
		}
	})
}
