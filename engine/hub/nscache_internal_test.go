package hub

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/store"
	"github.com/google/go-cmp/cmp"
)

// TestExecuteBeforeTheCatalogUsesKeptNamespaces: a hub keeps the set of
// namespaces runs see once it has read its catalog from a store that had
// been quiet; at the next start an execute runs with that set without
// reading the catalog (the set is the catalog's, digest for digest). After a
// source is added the kept set is not used: the execute reads the catalog
// and sees the new namespace. A catalog read from a store that just changed
// is not kept.
func TestExecuteBeforeTheCatalogUsesKeptNamespaces(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "hub")
	st, _, err := store.Init(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	add := func(st store.Store, ns string, tools ...string) {
		t.Helper()
		m := Manifest{Manifest: model.Manifest{Namespace: ns}, Health: "ok", CheckedAt: time.Now()}
		for _, name := range tools {
			m.Tools = append(m.Tools, model.Tool{Address: ns + "." + name, Name: name, InputSchema: []byte(`{"type":"object"}`)})
		}
		if err := st.Put(ctx, store.Sources, ns, model.Source{Namespace: ns, Kind: model.KindStdio, Command: "node", Args: []string{"server.js"}}); err != nil {
			t.Fatal(err)
		}
		if err := st.Put(ctx, store.Manifests, ns, m); err != nil {
			t.Fatal(err)
		}
	}
	add(st, "alpha", "one", "two")
	add(st, "beta", "three")
	past := time.Now().Add(-time.Hour) // the store has been quiet
	for _, k := range []store.Kind{store.Sources, store.Manifests} {
		if err := os.Chtimes(filepath.Join(dir, string(k)), past, past); err != nil {
			t.Fatal(err)
		}
	}
	open := func() *Hub {
		t.Helper()
		st, err := store.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		return New(st, Options{})
	}
	result := func(h *Hub, code string) string {
		t.Helper()
		env, err := h.Execute(ctx, code)
		if err != nil || env.Status != "completed" {
			t.Fatalf("execute %q: %v %+v", code, err, env)
		}
		return string(env.Result)
	}

	h1 := New(st, Options{})
	h1.Prepare(ctx)
	h1.Close() // waits for Prepare: the catalog read and its set kept
	if _, err := os.Stat(filepath.Join(dir, "cache", "namespaces.json")); err != nil {
		t.Fatalf("no set kept after the catalog was read: %v", err)
	}

	h2 := open()
	if got := result(h2, `return [typeof alpha.one, typeof beta.three, typeof gamma]`); got != `["function","function","undefined"]` {
		t.Errorf("before the catalog: %s", got)
	}
	if h2.catalog.Load() != nil {
		t.Error("the execute read the catalog although the kept set matched the store")
	}
	kept := h2.quickNamespaces(ctx)
	c, err := h2.loadCatalog(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if kept == nil || kept.Digest() != c.namespaces().Digest() {
		t.Errorf("the kept set is not the catalog's: %v\n%s", kept, cmp.Diff(c.namespaces().Map(), kept.Map()))
	}
	h2.Close()

	st3, err := store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	add(st3, "gamma", "four")
	h3 := New(st3, Options{})
	defer h3.Close()
	if got := result(h3, `return typeof gamma.four`); got != `"function"` {
		t.Errorf("after a source was added: typeof gamma.four = %s", got)
	}
	if h3.catalog.Load() == nil {
		t.Error("the execute after a change used the kept set instead of reading the catalog")
	}
	h3.saveNamespaces(h3.catalog.Load())
	if h3.cachedNamespaces() != nil {
		t.Error("a catalog read from a store changed just before was kept")
	}
}
