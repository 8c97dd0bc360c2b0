package hub

import (
	"context"
	"fmt"
	"testing"

	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/store"
)

// BenchmarkRunViewSelection is what a profile adds to an execute that makes
// one call: choosing the run's namespace set and looking its tool up, over a
// hub of 20 sources × 50 tools, with no profile (the CLI), through default
// (every MCP request to /mcp) and through a narrowed profile. The first two
// must cost the same order as before profiles narrowed anything (a context
// lookup, a map read): an execute takes milliseconds.
func BenchmarkRunViewSelection(b *testing.B) {
	ctx := context.Background()
	st := store.NewMem()
	h := New(st, Options{})
	b.Cleanup(h.Close)
	for i := range 20 {
		ns := fmt.Sprintf("src%d", i)
		m := Manifest{Manifest: model.Manifest{Namespace: ns}}
		for j := range 50 {
			m.Tools = append(m.Tools, model.Tool{Address: fmt.Sprintf("%s.tool%d", ns, j), Name: fmt.Sprintf("tool%d", j)})
		}
		if err := st.Put(ctx, store.Sources, ns, model.Source{Namespace: ns, Kind: "stdio", Command: "true"}); err != nil {
			b.Fatal(err)
		}
		if err := st.Put(ctx, store.Manifests, ns, m); err != nil {
			b.Fatal(err)
		}
	}
	if err := h.PutProfile(ctx, Profile{Name: "two", Mode: ModeCode, Namespaces: []string{"src1", "src2"}}, true); err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		ctx  context.Context
	}{
		{"none", ctx},
		{"default", WithProfile(ctx, DefaultProfile)},
		{"narrowed", WithProfile(ctx, "two")},
	} {
		b.Run(tc.name, func(b *testing.B) {
			tl := tools{h}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := tl.Namespaces(tc.ctx); err != nil {
					b.Fatal(err)
				}
				if _, err := tl.Tool(tc.ctx, "src1.tool7"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
