// Package hub is the facade the CLI, the MCP surface and the desktop app
// use: it wires the store, the sources and (later) the index, sandbox,
// policy and secrets together.
package hub

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/run"
	"github.com/capabilities-sh/capabilities/engine/sandbox"
	"github.com/capabilities-sh/capabilities/engine/secret"
	"github.com/capabilities-sh/capabilities/engine/source"
	"github.com/capabilities-sh/capabilities/store"
	"golang.org/x/sync/errgroup"
)

// Options configure a Hub. The zero value is useful.
type Options struct {
	Logger *slog.Logger
	// Source configures connections to upstreams.
	Source source.Options
	// Run sets the limits of runs (execute).
	Run run.Limits
	// Sandbox sets the limits of each attempt (zero: sandbox's defaults).
	Sandbox sandbox.Limits
	// Driver, when set, is the sandbox the hub runs code in, shared with
	// other hubs (a hosted server's tenants); the hub does not close it.
	// Nil: the hub builds its own on first use.
	Driver *sandbox.Driver
	// Tenant is the hub's admission key on a shared Driver (its attempts'
	// sandbox.Request.Key): run slots and compute turns are served fairly
	// across tenants, each holding at most its cap of them.
	Tenant string
	// Secrets replaces the secret store (tests); nil opens the OS keychain
	// with a mode-600 file fallback beside the store.
	Secrets secret.Store
	// NoKeychain skips the OS keychain and uses the fallback file
	// (NO_KEYRING=1).
	NoKeychain bool
	// SkillsDir is where the hub's skills are kept; "" is skills/ in the
	// store's folder.
	SkillsDir string
	// OAuthSkew is how long before its expiry an OAuth access token is
	// refreshed (oauth.DefaultSkew, 60 s, when 0).
	OAuthSkew time.Duration
}

// Hub is one process's engine over a shared store.
type Hub struct {
	store       store.Store
	opts        Options
	log         *slog.Logger
	pool        *source.Pool
	runs        runs
	secrets     secrets
	oauth       oauthSources
	policyCache policyCache

	refreshes refreshes
	changes   changes // OnChange's subscribers
	// finishing holds, for each run FinishDecided is resuming here, a
	// channel closed when it is done: an agent's resume of it meanwhile
	// waits for it (Resume) instead of finding it held.
	finishing sync.Map
	draining  atomic.Bool // DrainDecided: FinishDecided takes no new run
	catalog   atomic.Pointer[catalog]
	catalogMu sync.Mutex // one catalog build at a time
	// catalogGen counts Invalidate calls: a build that began before one
	// does not keep its (maybe stale) catalog.
	catalogGen atomic.Uint64
	nscache    nsCache        // the set runs see, kept for the next start (nscache.go)
	gen        generation     // the store's generation the caches are current with (generation.go)
	preparing  sync.WaitGroup // Prepare's goroutines, waited for by Close
	quiet      quiet          // trims memory once the hub is idle (quiet.go)
	settingsMu sync.Mutex     // UpdateSettings, one at a time
}

// New returns a hub over st. Close it to reap upstream processes; it also
// closes st when st has a Close method.
func New(st store.Store, opts Options) *Hub {
	h := &Hub{store: st, opts: opts, log: opts.Logger}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	so := opts.Source
	if so.Logger == nil {
		so.Logger = h.log
	}
	so.OnToolsChanged = h.toolsChanged
	h.pool = source.NewPool(so)
	h.pool.OnConnect(h.noteHealth)
	// Nothing is cached yet: what is read from now on is at least as new
	// as this generation.
	if g, ok := h.storeGeneration(); ok {
		h.noteGeneration(g)
	}
	return h
}

// Store is the hub's store.
func (h *Hub) Store() store.Store { return h.store }

// Close stops every upstream the hub started. Refreshes announced from now
// on are refused and those under way are cancelled.
func (h *Hub) Close() {
	h.stopQuiet()
	h.runs.executedOnce.Do(func() { close(h.runs.executedChan()) }) // Prepare waits no more for an execute
	h.preparing.Wait()
	h.runEngine().Wait() // the records of the runs that just ended, the prune
	h.refreshes.close()
	h.pool.Close()
	if d := h.runs.driver.Load(); d != nil && h.opts.Driver == nil {
		_ = d.Close()
	}
	if c, ok := h.store.(io.Closer); ok {
		_ = c.Close()
	}
}

// SourceRecord is what the store keeps per source: the source and its
// cached manifest with health.
type SourceRecord struct {
	Source   model.Source
	Manifest *Manifest // nil when never fetched
}

// Manifest is the cached manifest plus the health of the last contact.
type Manifest struct {
	model.Manifest
	Health    string    `json:"health"` // "ok" or "error"
	LastError string    `json:"lastError,omitempty"`
	CheckedAt time.Time `json:"checkedAt"`
}

// ErrUnknownNamespace is returned for a namespace with no source.
var ErrUnknownNamespace = errors.New("unknown namespace")

// ErrUnknownTool is returned for an address that names no tool.
var ErrUnknownTool = errors.New("unknown tool")

// Source returns the source with the namespace.
func (h *Hub) Source(ctx context.Context, ns string) (*model.Source, error) {
	if model.ValidNamespace(ns) != nil {
		return nil, h.unknownNamespace(ctx, ns) // no source can have it
	}
	src, err := store.Get[model.Source](ctx, h.store, store.Sources, ns)
	if errors.Is(err, store.ErrNotFound) {
		return nil, h.unknownNamespace(ctx, ns)
	}
	return src, err
}

func (h *Hub) unknownNamespace(ctx context.Context, ns string) error {
	ids, _ := h.store.List(ctx, store.Sources)
	if len(ids) == 0 {
		return fmt.Errorf("%w %q: the hub has no sources yet; add one with `capabilities hub add`", ErrUnknownNamespace, ns)
	}
	return fmt.Errorf("%w %q: the hub's namespaces are %s (see `capabilities hub list`)", ErrUnknownNamespace, ns, strings.Join(ids, ", "))
}

// Manifest returns the cached manifest of a namespace (nil, nil if it was
// never fetched).
func (h *Hub) Manifest(ctx context.Context, ns string) (*Manifest, error) {
	m, err := store.Get[Manifest](ctx, h.store, store.Manifests, ns)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	return m, err
}

// Sources lists every source with its cached manifest, by namespace. A
// source whose record or manifest is corrupt is left out, so that the
// others serve; Unreadable reports it.
func (h *Hub) Sources(ctx context.Context) ([]SourceRecord, error) {
	recs, _, err := h.readSources(ctx)
	return recs, err
}

// UnreadableSource is a source Sources leaves out, and why.
type UnreadableSource struct {
	Namespace string
	Err       error // a *store.CorruptError
	// Manifest: the corrupt record is the cached tool list, which
	// `hub refresh` writes anew; else the source's own record.
	Manifest bool
}

// Fix says how to bring the source back.
func (u UnreadableSource) Fix() string {
	if u.Manifest {
		return fmt.Sprintf("`capabilities hub refresh %s` lists its tools anew", u.Namespace)
	}
	return fmt.Sprintf("`capabilities hub remove %s` removes it", u.Namespace)
}

// Unreadable lists the sources Sources leaves out: their record or manifest
// is corrupt. Fixing the file, or removing the source, brings them back.
func (h *Hub) Unreadable(ctx context.Context) ([]UnreadableSource, error) {
	_, bad, err := h.readSources(ctx)
	return bad, err
}

func (h *Hub) readSources(ctx context.Context) ([]SourceRecord, []UnreadableSource, error) {
	ids, err := h.store.List(ctx, store.Sources)
	if err != nil {
		return nil, nil, fmt.Errorf("listing sources: %w", err)
	}
	// Read on every CPU: a large hub's manifests are tens of MB of JSON.
	// The first error in the sources' order is reported, every time.
	recs := make([]SourceRecord, len(ids))
	errs := make([]error, len(ids))
	var g errgroup.Group
	g.SetLimit(runtime.GOMAXPROCS(0))
	for i, id := range ids {
		g.Go(func() error {
			recs[i], errs[i] = h.sourceRecord(ctx, id)
			return nil
		})
	}
	_ = g.Wait()
	out := recs[:0]
	var bad []UnreadableSource
	for i, err := range errs {
		var ce *store.CorruptError
		switch {
		case errors.As(err, &ce):
			bad = append(bad, UnreadableSource{Namespace: ids[i], Err: err, Manifest: strings.Contains("/"+filepath.ToSlash(ce.Path), "/manifests/")})
		case err != nil:
			return nil, nil, fmt.Errorf("listing sources: %w", err)
		default:
			out = append(out, recs[i])
		}
	}
	return out, bad, nil
}

// sourceRecord reads one source and its manifest.
func (h *Hub) sourceRecord(ctx context.Context, id string) (SourceRecord, error) {
	src, err := store.Get[model.Source](ctx, h.store, store.Sources, id)
	if err != nil {
		return SourceRecord{}, err
	}
	m, err := h.Manifest(ctx, id)
	if err != nil {
		return SourceRecord{}, err
	}
	return SourceRecord{Source: *src, Manifest: m}, nil
}

// Tools returns every cached tool of every source, by address.
func (h *Hub) Tools(ctx context.Context) ([]model.Tool, error) {
	recs, err := h.Sources(ctx)
	if err != nil {
		return nil, err
	}
	var tools []model.Tool
	for _, r := range recs {
		if r.Manifest != nil {
			tools = append(tools, r.Manifest.Tools...)
		}
	}
	sort.Slice(tools, func(i, j int) bool { return tools[i].Address < tools[j].Address })
	return tools, nil
}

// Tool finds a tool by address in the cached manifests.
func (h *Hub) Tool(ctx context.Context, address string) (*model.Source, *model.Tool, *Manifest, error) {
	ns, _, ok := model.SplitAddress(address)
	if !ok {
		return nil, nil, nil, fmt.Errorf("%w %q: a tool address is namespace.tool, e.g. everything.echo", ErrUnknownTool, address)
	}
	src, err := h.Source(ctx, ns)
	if err != nil {
		return nil, nil, nil, err
	}
	m, err := h.Manifest(ctx, ns)
	if err != nil {
		return nil, nil, nil, err
	}
	if m == nil {
		return nil, nil, nil, fmt.Errorf("%w %q: the tools of %s were never listed; run `capabilities hub refresh %s`", ErrUnknownTool, address, ns, ns)
	}
	t := m.Tool(address)
	if t == nil {
		return nil, nil, nil, fmt.Errorf("%w %q%s", ErrUnknownTool, address, closest(address, m.Tools))
	}
	return src, t, m, nil
}

// closest suggests up to three addresses near addr.
func closest(addr string, tools []model.Tool) string {
	cands := make([]string, len(tools))
	for i, t := range tools {
		cands[i] = t.Address
	}
	names := model.Closest(addr, cands, 3)
	if len(names) == 0 {
		return ""
	}
	return "; did you mean " + strings.Join(names, ", ") + "?"
}
