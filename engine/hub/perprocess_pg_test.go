package hub

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/secret"
	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/capabilities-sh/capabilities/store"
	"github.com/capabilities-sh/capabilities/store/postgres"
)

// pgProcess is a hub process's store over the database, with its own
// machine's hub folder (as the CLI's).
type pgProcess struct {
	*postgres.Store
	dir string
}

func (p pgProcess) Dir() string { return p.dir }

// brokenSource is a stdio source whose command is missing on the machine
// that starts it, recorded as listed fine (by another machine).
func brokenSource(t *testing.T, st store.Store) {
	t.Helper()
	ctx := context.Background()
	src := model.Source{Namespace: "up", Kind: model.KindStdio, Command: "/nonexistent/capabilities-test-server", AddedAt: time.Now().UTC()}
	if err := st.Put(ctx, store.Sources, "up", src); err != nil {
		t.Fatal(err)
	}
	m := Manifest{Manifest: model.Manifest{Namespace: "up", Tools: []model.Tool{}}, Health: "ok", CheckedAt: time.Now().UTC()}
	if err := st.Put(ctx, store.Manifests, "up", m); err != nil {
		t.Fatal(err)
	}
}

// TestUpstreamsPerProcess: on a database store each process runs its own
// upstreams, so a source that fails to start or list on process A is not
// marked failed for process B; on the file store (one machine) the failure
// is the hub's, as before. And the hub's own bearer token, kept in the
// database, is refused as a source's credential (isOwnToken).
func TestUpstreamsPerProcess(t *testing.T) {
	pg := testenv.StartPostgres(t)
	ctx := context.Background()
	u := pg.NewDatabase(t)
	if err := postgres.Migrate(ctx, u); err != nil {
		t.Fatal(err)
	}
	open := func() *Hub {
		s, err := postgres.Open(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		h := New(pgProcess{s, t.TempDir()}, Options{Secrets: secret.NewMemory(nil)})
		t.Cleanup(h.Close)
		return h
	}
	a, b := open(), open()
	brokenSource(t, a.store)

	if !a.UpstreamsPerProcess() || !b.UpstreamsPerProcess() {
		t.Fatal("a hub on PostgreSQL does not run its upstreams per process")
	}
	ch, err := a.Refresh(ctx, "up")
	if err != nil || len(ch) != 1 || ch[0].Error == "" {
		t.Fatalf("Refresh of a source whose command is missing = %+v, %v; want its error", ch, err)
	}
	a.noteHealth("up", errors.New("starting up: exec: no such file"))
	m, err := b.Manifest(ctx, "up")
	if err != nil {
		t.Fatal(err)
	}
	if m.Health != "ok" || m.LastError != "" {
		t.Errorf("after failures on process A, process B reads health %q (%q); want ok, as listed", m.Health, m.LastError)
	}

	t.Run("FileStoreSharesHealth", func(t *testing.T) {
		st, _, err := store.Init(filepath.Join(t.TempDir(), "hub"))
		if err != nil {
			t.Fatal(err)
		}
		h := New(st, Options{Secrets: secret.NewMemory(nil)})
		t.Cleanup(h.Close)
		if h.UpstreamsPerProcess() {
			t.Error("the file store runs upstreams per process")
		}
		brokenSource(t, st)
		h.noteHealth("up", errors.New("starting up: exec: no such file"))
		m, err := h.Manifest(ctx, "up")
		if err != nil {
			t.Fatal(err)
		}
		if m.Health != "error" {
			t.Errorf("on the file store a failed start left health %q; want error", m.Health)
		}
	})

	t.Run("OwnToken", func(t *testing.T) {
		if a.isOwnToken("0123456789abcdef0123456789abcdef") {
			t.Error("a token matched before the hub made one")
		}
		tok, _, err := a.store.(pgProcess).HTTPToken(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range []string{tok, "Bearer " + tok, " bearer " + tok + " "} {
			if !b.isOwnToken(s) {
				t.Errorf("isOwnToken(%q) on another process = false; want true", s[:10])
			}
		}
		other := "0"
		if tok[len(tok)-1] == '0' {
			other = "1"
		}
		if b.isOwnToken(tok[:len(tok)-1] + other) {
			t.Error("another token was taken for the hub's own")
		}
	})
}
