package hub_test

import (
	"context"
	"fmt"
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
