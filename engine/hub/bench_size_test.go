package hub_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/capabilities-sh/capabilities/store"
)

// BenchmarkExecuteTrivialWarmBySize is BenchmarkExecuteTrivialWarm on hubs
// that also hold the corpus's 19 manifests (501 tools) once, or 20 times
// under renamed namespaces (380 namespaces, 10,020 tools): a run should cost
// the same whatever the hub holds.
//
//	go test ./engine/hub -run '^$' -bench ExecuteTrivialWarmBySize -benchtime 300x -count 3
func BenchmarkExecuteTrivialWarmBySize(b *testing.B) {
	for _, copies := range []int{0, 1, 20} {
		b.Run(fmt.Sprintf("corpus-x%d", copies), func(b *testing.B) {
			h := benchHub(b)
			addCorpus(b, h.Store(), copies)
			h.Invalidate()
			ctx := context.Background()
			if env, err := h.Execute(ctx, `return typeof github`); err != nil || env.Status != "completed" {
				b.Fatalf("%v %+v", err, env)
			}
			benchWarmOn(b, h, func(i int) string { return fmt.Sprintf("return %d + 1", i) })
		})
	}
}

// addCorpus stores the corpus's manifests copies times (the second copy's
// namespaces end in 1, …) as sources nothing starts.
func addCorpus(tb testing.TB, st store.Store, copies int) {
	tb.Helper()
	ctx := context.Background()
	for k := range copies {
		for _, m := range testenv.CorpusManifests(tb) {
			ns := m.Namespace
			if k > 0 {
				ns += strconv.Itoa(k)
			}
			src := model.Source{Namespace: ns, Kind: model.KindStdio, Command: "node", Args: []string{"server.js"}}
			if err := st.Put(ctx, store.Sources, ns, src); err != nil {
				tb.Fatal(err)
			}
			tools := make([]model.Tool, len(m.Tools))
			for i, t := range m.Tools {
				_, name, _ := model.SplitAddress(t.Address)
				t.Address = ns + "." + name
				tools[i] = t
			}
			m.Namespace, m.Tools = ns, tools
			if err := st.Put(ctx, store.Manifests, ns, hub.Manifest{Manifest: m, Health: "ok", CheckedAt: time.Now()}); err != nil {
				tb.Fatal(err)
			}
		}
	}
}

// BenchmarkFirstExecuteBySize is a start's first execute on a hub of the
// corpus once or 20 times (10,020 tools), as serve meets it: the store
// opened, Prepare started (the sandbox and the catalog, in the background)
// and trivial code executed at once. The store has been quiet for an hour
// and an earlier start kept its namespaces (nscache.go), so the execute
// does not wait for the catalog; "new-store" removes the kept namespaces
// before each start, as on a store no serve has read yet (the execute waits
// for the catalog). QuickJS is compiled once per process, so this leaves
// out loading it from the disk cache (≈30 ms).
//
//	go test ./engine/hub -run '^$' -bench FirstExecuteBySize -benchtime 20x
func BenchmarkFirstExecuteBySize(b *testing.B) {
	ctx := context.Background()
	for _, c := range []struct {
		name   string
		copies int
		kept   bool
		runs   int
	}{{"corpus-x1", 1, true, 0}, {"corpus-x1/runs-5000", 1, true, 5000}, {"corpus-x20", 20, true, 0}, {"corpus-x20/new-store", 20, false, 0}} {
		copies := c.copies
		b.Run(c.name, func(b *testing.B) {
			dir := filepath.Join(b.TempDir(), "hub")
			st, _, err := store.Init(dir)
			if err != nil {
				b.Fatal(err)
			}
			addCorpus(b, st, copies)
			testenv.PutFinishedRuns(b, st, c.runs)
			past := time.Now().Add(-time.Hour)
			for _, k := range []store.Kind{store.Sources, store.Manifests} {
				if err := os.Chtimes(filepath.Join(dir, string(k)), past, past); err != nil {
					b.Fatal(err)
				}
			}
			h := hub.New(st, hub.Options{})
			h.Prepare(ctx)
			h.Close() // the first start: keeps the namespaces
			var lat []time.Duration
			for b.Loop() {
				if !c.kept {
					if err := os.RemoveAll(filepath.Join(dir, "cache")); err != nil {
						b.Fatal(err)
					}
				}
				if err := os.Remove(filepath.Join(dir, "blobs", "runs-pruned.json")); err != nil && !errors.Is(err, fs.ErrNotExist) {
					b.Fatal(err)
				}
				st, err := store.Open(dir)
				if err != nil {
					b.Fatal(err)
				}
				start := time.Now()
				h := hub.New(st, hub.Options{})
				h.Prepare(ctx)
				env, err := h.Execute(ctx, `return typeof github`)
				lat = append(lat, time.Since(start))
				if err != nil || env.Status != "completed" || string(env.Result) != `"object"` {
					b.Fatalf("%v %+v", err, env)
				}
				b.StopTimer()
				h.Close()
				b.StartTimer()
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
		})
	}
}
