package hub_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/capabilities-sh/capabilities/store"
)

// hubWith20 makes a file store holding 20 sources whose manifests are the
// corpus's real ones (19 servers, one of them twice): 501+ tools.
func hubWith20(b *testing.B) string {
	b.Helper()
	dir := filepath.Join(b.TempDir(), "hub")
	st, _, err := store.Init(dir)
	if err != nil {
		b.Fatal(err)
	}
	ms := testenv.CorpusManifests(b)
	ctx := context.Background()
	for i := 0; i < 20; i++ {
		m := ms[i%len(ms)]
		ns := m.Namespace
		if i >= len(ms) {
			ns = fmt.Sprintf("%s%d", ns, i)
		}
		src := model.Source{Namespace: ns, Kind: model.KindStdio, Command: "node", Args: []string{"server.js"}}
		if err := st.Put(ctx, store.Sources, ns, src); err != nil {
			b.Fatal(err)
		}
		m.Namespace = ns
		rec := hub.Manifest{Manifest: m, Health: "ok", CheckedAt: time.Now()}
		if err := st.Put(ctx, store.Manifests, ns, rec); err != nil {
			b.Fatal(err)
		}
	}
	return dir
}

// BenchmarkListSources20 is `hub list` on an open hub: read 20 sources and
// their cached manifests from the file store.
func BenchmarkListSources20(b *testing.B) {
	dir := hubWith20(b)
	st, err := store.Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	h := hub.New(st, hub.Options{})
	defer h.Close()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		recs, err := h.Sources(ctx)
		if err != nil || len(recs) != 20 {
			b.Fatalf("Sources = %d, %v", len(recs), err)
		}
	}
}

// BenchmarkStartToListed is a fresh process's path to a listed state: open
// the store, build the engine, read every source and tool. No upstream is
// started.
func BenchmarkStartToListed(b *testing.B) {
	dir := hubWith20(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		st, err := store.Open(dir)
		if err != nil {
			b.Fatal(err)
		}
		h := hub.New(st, hub.Options{})
		tools, err := h.Tools(ctx)
		if err != nil || len(tools) < 500 {
			b.Fatalf("Tools = %d, %v", len(tools), err)
		}
		h.Close()
	}
}
