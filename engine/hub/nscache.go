package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/capabilities-sh/capabilities/engine/sandbox"
	"github.com/capabilities-sh/capabilities/store"
)

// A run needs only the names of the hub's namespaces and tools until its
// code calls a tool, while the catalog decodes every manifest (26 MB of
// JSON for 10,000 tools: ≈0.3 s). So the hub keeps the set a run sees in a
// small file beside the store (cache/namespaces.json, ≈200 KB for 10,000
// tools), written after a catalog is built, and an execute that comes
// before the catalog is ready runs with that set: its first tool call (or
// search, or describe) waits for the catalog as before, and the sandbox
// refuses a tool outside the set as before.
//
// The file holds the fingerprint of the store it was made from: the
// modification times and sizes of the sources and manifests directories.
// The store writes every record through a new file renamed over the old
// one (and removes a record's file to delete it), so any change of a
// source or manifest changes its directory's modification time. The
// filesystem's clock is coarse (a few ms), so a change in the same tick as
// the fingerprint would not show: the set is only written when both
// directories had been unchanged for nsQuiet before the catalog was read.
// A fingerprint that does not match, or a file that cannot be read, means
// no cached set: the execute waits for the catalog.
type nsCache struct {
	mu  sync.Mutex
	fp  string              // the fingerprint set was read for
	set *sandbox.Namespaces // nil: none
}

const nsQuiet = 2 * time.Second

// pather is a store on disk (store.File).
type pather interface {
	Path(kind store.Kind, id string) string
}

type nsCacheFile struct {
	Fingerprint string              `json:"fingerprint"`
	Namespaces  *sandbox.Namespaces `json:"namespaces"`
}

// nsCachePath is where the set is kept, or "" for a store not on disk.
func (h *Hub) nsCachePath() string {
	f, ok := h.store.(pather)
	if !ok {
		return ""
	}
	return filepath.Join(filepath.Dir(filepath.Dir(f.Path(store.Manifests, "x"))), "cache", "namespaces.json")
}

// nsFingerprint identifies the state of the sources and manifests; quiet
// reports whether both had been unchanged for nsQuiet.
func (h *Hub) nsFingerprint() (fp string, quiet bool, ok bool) {
	f, isFile := h.store.(pather)
	if !isFile {
		return "", false, false
	}
	quiet = true
	now := time.Now()
	for _, k := range []store.Kind{store.Sources, store.Manifests} {
		fi, err := os.Stat(filepath.Dir(f.Path(k, "x")))
		if err != nil {
			return "", false, false
		}
		fp += fmt.Sprintf("%s:%d:%d;", k, fi.ModTime().UnixNano(), fi.Size())
		quiet = quiet && now.Sub(fi.ModTime()) >= nsQuiet
	}
	return fp, quiet, true
}

// cachedNamespaces is the set every run sees, from the cache file, when the
// file matches the store as it is now; nil otherwise.
func (h *Hub) cachedNamespaces() *sandbox.Namespaces {
	fp, _, ok := h.nsFingerprint()
	if !ok {
		return nil
	}
	h.nscache.mu.Lock()
	defer h.nscache.mu.Unlock()
	if h.nscache.fp == fp {
		return h.nscache.set
	}
	h.nscache.fp, h.nscache.set = fp, nil
	b, err := os.ReadFile(h.nsCachePath())
	if err != nil {
		return nil
	}
	var c nsCacheFile
	if err := json.Unmarshal(b, &c); err != nil || c.Fingerprint != fp || c.Namespaces == nil {
		return nil
	}
	h.nscache.set = c.Namespaces
	return c.Namespaces
}

// saveNamespaces writes the set of catalog c to the cache file, when c was
// read from a quiet store and the file does not hold it already.
func (h *Hub) saveNamespaces(c *catalog) {
	if c.nsFingerprint == "" || h.cachedNamespaces() != nil {
		return
	}
	path := h.nsCachePath()
	b, err := json.Marshal(nsCacheFile{Fingerprint: c.nsFingerprint, Namespaces: c.namespaces()})
	if err == nil {
		// The cache folder only, inside the hub's: a hub moved away or
		// deleted while this process serves is not made again here (the
		// person would find a hub folder where they moved theirs away).
		if err = os.Mkdir(filepath.Dir(path), 0o700); errors.Is(err, fs.ErrExist) {
			err = nil
		}
	}
	if errors.Is(err, fs.ErrNotExist) {
		return // the hub is gone (store.Gone says so to every call)
	}
	if err == nil {
		err = store.WriteFileAtomic(path, b)
	}
	if err != nil {
		h.log.Warn("keeping the namespaces for the next start", "err", err)
	}
}

// quickNamespaces is the set a run of ctx's profile sees when the catalog
// is not built yet and the cache file has it (the default view only); nil
// otherwise.
func (h *Hub) quickNamespaces(ctx context.Context) *sandbox.Namespaces {
	if h.catalog.Load() != nil {
		return nil
	}
	if name := profileName(ctx); name != "" {
		p, err := h.Profile(ctx, name)
		if err != nil || !p.All() {
			return nil
		}
	}
	return h.cachedNamespaces()
}
