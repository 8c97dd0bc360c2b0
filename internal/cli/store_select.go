package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/capabilities-sh/capabilities/store"
	"github.com/capabilities-sh/capabilities/store/postgres"
)

// hubStore is the hub's store as the commands see it: the records (in the
// hub folder, or in PostgreSQL with --store/CAPABILITIES_STORE) and the hub
// folder, $CAPABILITIES_HOME/hub, which keeps what belongs to this machine
// only (the endpoint and bearer token of a serve --http, the elicitation
// key, the paused flag, the fallback secrets file, skills, locks).
type hubStore interface {
	store.Store
	Dir() string    // the hub folder on this machine
	Hub() store.Hub // the hub's identity
	Close() error
}

var _ hubStore = (*store.File)(nil)

// pgStore is the store on PostgreSQL with this machine's hub folder.
type pgStore struct {
	*postgres.Store
	dir string
	hub store.Hub
}

func (p *pgStore) Dir() string    { return p.dir }
func (p *pgStore) Hub() store.Hub { return p.hub }

// hubIdentityID is the record (of kind policies, which nothing lists) that
// holds a database hub's identity, the file store's hub.json.
const hubIdentityID = "hub"

// storeURL is --store, else $CAPABILITIES_STORE: "" for the file store in
// the hub folder, or a postgres:// URL. Anything else is a usage error.
func (e *env) storeURL() (string, error) {
	u, from := e.store, "--store"
	if u == "" {
		u, from = os.Getenv("CAPABILITIES_STORE"), "CAPABILITIES_STORE"
	}
	if u == "" {
		return "", nil
	}
	if !strings.HasPrefix(u, "postgres://") && !strings.HasPrefix(u, "postgresql://") {
		return "", usagef("%s: the store must be a postgres:// URL (postgres://USER:PASSWORD@HOST:PORT/DATABASE); leave it unset for the hub folder (see docs/postgres.md)", from)
	}
	return u, nil
}

// openStore opens the chosen store: the hub folder's (store.Open), or the
// database's, refusing one that was never initialized.
func (e *env) openStore(ctx context.Context) (hubStore, error) {
	dir, err := hubDir()
	if err != nil {
		return nil, err
	}
	url, err := e.storeURL()
	if err != nil {
		return nil, err
	}
	if url == "" {
		return store.Open(dir)
	}
	return openPostgres(ctx, url, dir)
}

func openPostgres(ctx context.Context, url, dir string) (*pgStore, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	st, err := postgres.Open(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("opening the hub: %w", err)
	}
	id, err := store.Get[store.Hub](ctx, st, store.Policies, hubIdentityID)
	if errors.Is(err, store.ErrNotFound) {
		_ = st.Close()
		return nil, fmt.Errorf("opening the hub: the database at %s has no hub yet: run `capabilities hub init` to create it", st.Where())
	}
	if err != nil {
		_ = st.Close()
		return nil, fmt.Errorf("opening the hub: %w", err)
	}
	// This machine's part of the hub: made on first use, so a second
	// machine on the same database needs no hub init of its own.
	if err := os.MkdirAll(dir, 0o700); err != nil {
		_ = st.Close()
		return nil, fmt.Errorf("creating the hub folder: %w", err)
	}
	return &pgStore{Store: st, dir: dir, hub: *id}, nil
}

// initPostgres is hub init on a database: it applies the migrations,
// records the hub's identity when the database has none, makes this
// machine's hub folder and opens the store. created reports whether the
// hub is new.
func initPostgres(ctx context.Context, url, dir string) (st *pgStore, created bool, err error) {
	if err := postgres.Migrate(ctx, url); err != nil {
		return nil, false, err
	}
	db, err := postgres.Open(ctx, url)
	if err != nil {
		return nil, false, err
	}
	err = store.UpdateJSON(ctx, db, store.Policies, hubIdentityID, func(old *store.Hub) (*store.Hub, error) {
		if old != nil {
			return old, nil
		}
		created = true
		return &store.Hub{Schema: int(postgres.SchemaVersion()), ID: store.NewID(), CreatedAt: time.Now().UTC().Truncate(time.Second)}, nil
	})
	_ = db.Close()
	if err != nil {
		return nil, false, fmt.Errorf("recording the hub in the database: %w", err)
	}
	st, err = openPostgres(ctx, url, dir)
	return st, created, err
}

// storeInfo is what the doctors say of a database store (nil for the
// hub folder's): where it is (never the password), its schema, and
// whether it answers now.
type storeInfo struct {
	Kind      string `json:"kind"`     // "postgres"
	Database  string `json:"database"` // host:port/database
	Schema    int64  `json:"schema"`
	Hub       string `json:"hub"`
	Reachable bool   `json:"reachable"`
	Error     string `json:"error,omitempty"`
}

// describeStore checks a database store with one round trip; nil for the
// hub folder's store.
func describeStore(ctx context.Context, st hubStore) *storeInfo {
	p, ok := st.(*pgStore)
	if !ok {
		return nil
	}
	info := &storeInfo{Kind: "postgres", Database: p.Where(), Schema: postgres.SchemaVersion(), Hub: p.hub.ID}
	if _, err := store.Get[store.Hub](ctx, p, store.Policies, hubIdentityID); err != nil {
		info.Error = err.Error()
	} else {
		info.Reachable = true
	}
	return info
}

// String is the doctors' line for the store.
func (s *storeInfo) String() string {
	state := "reachable"
	if !s.Reachable {
		state = "NOT reachable: " + s.Error
	}
	return fmt.Sprintf("postgres %s, schema %d, hub %s, %s", s.Database, s.Schema, s.Hub, state)
}
