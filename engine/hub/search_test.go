package hub_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/secret"
	"github.com/capabilities-sh/capabilities/internal/testenv"
)

// TestSearchNamesConnections: search's header line for a namespace names its
// connections, the default marked with *, once it has a choice of them (two
// or more) — and never a secret value. Storing a connection shows in the
// next search of the same hub.
func TestSearchNamesConnections(t *testing.T) {
	f := newFixture(t) // leaky, with its default connection
	ctx := context.Background()
	search := func() string { return f.search(t, ctx, "leak the token") }
	if got := search(); !strings.HasPrefix(got, "leaky\n") || strings.Contains(got, "connections") {
		t.Errorf("one connection: the header is not the bare namespace:\n%s", got)
	}
	if _, err := f.h.Auth(ctx, hub.AuthRequest{Namespace: "leaky", Connection: "work", Value: theSecret + "-work"}); err != nil {
		t.Fatal(err)
	}
	got := search()
	if !strings.HasPrefix(got, "leaky  (connections: default*, work)\n") {
		t.Errorf("two connections: no header naming them:\n%s", got)
	}
	assertNoSecret(t, "search", got)
	if strings.Contains(got, "leaky/") {
		t.Errorf("search shows a secret reference:\n%s", got)
	}
}

// TestSearchSeesConnectionsStoredElsewhere: `hub auth` in a terminal while
// `serve` runs — another hub on the same store — shows in the serving hub's
// next search (its store watcher rebuilds the catalog); also when the write
// comes after the catalog was built but before the watcher started (serve's
// start, where the catalog is prepared beside the watcher), when no event
// will ever come for it.
func TestSearchSeesConnectionsStoredElsewhere(t *testing.T) {
	for _, watchFirst := range []bool{true, false} {
		t.Run(map[bool]string{true: "watching", false: "before-the-watcher"}[watchFirst], func(t *testing.T) {
			f := newFixture(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			watched := make(chan error, 1)
			watch := func() {
				go func() { watched <- f.h.Watch(ctx) }()
				t.Cleanup(func() { cancel(); <-watched })
			}
			if watchFirst {
				watch()
			}
			search := func() string { return f.search(t, ctx, "leak the token") }
			search() // the catalog is built before the other hub writes

			other := hub.New(f.st, hub.Options{Secrets: secret.NewMemory(nil)})
			defer other.Close()
			if _, err := other.Auth(ctx, hub.AuthRequest{Namespace: "leaky", Connection: "work", Value: "another-value"}); err != nil {
				t.Fatal(err)
			}
			if !watchFirst {
				watch()
			}
			want := "leaky  (connections: default*, work)\n"
			var got string
			for deadline := time.Now().Add(testenv.Timeout(10 * time.Second)); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
				if got = search(); strings.HasPrefix(got, want) {
					return
				}
			}
			t.Errorf("a connection stored by another hub did not show in search in time:\n%s", got)
		})
	}
}

// search is the text of the hub's search for text.
func (f *fixture) search(t *testing.T, ctx context.Context, text string) string {
	t.Helper()
	res, err := f.h.Search(ctx, hub.SearchQuery{Text: text})
	if err != nil {
		t.Fatal(err)
	}
	return res.Text()
}
