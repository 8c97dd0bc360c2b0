package run_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/run"
	"github.com/capabilities-sh/capabilities/store"
)

// BenchmarkSelectEvery5000 lists every run of a hub of 5,000 finished
// runs (`hub runs --limit 0`, the approvals poll's first read), their
// records in files of their own (Put) or in shared files (PutFinal, as a
// run that calls nothing writes its record).
func BenchmarkSelectEvery5000(b *testing.B) {
	for _, final := range []bool{false, true} {
		name := "own-files"
		if final {
			name = "shared-files"
		}
		b.Run(name, func(b *testing.B) {
			st, _, err := store.Init(filepath.Join(b.TempDir(), "hub"))
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			for i := range 5000 {
				at := time.Now().Add(-time.Duration(i) * time.Second)
				r := model.Run{ID: fmt.Sprintf("r%020d", i), Status: model.RunCompleted, Code: "return 1", Result: json.RawMessage("1"), CreatedAt: at, UpdatedAt: at, Attempts: 1}
				put := st.Put
				if final {
					put = st.PutFinal
				}
				if err := put(ctx, store.Runs, r.ID, r); err != nil {
					b.Fatal(err)
				}
			}
			eng := run.New(st, nil, nil, run.Options{})
			b.ReportAllocs()
			for b.Loop() {
				if _, err := eng.Select(ctx, run.Selection{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
