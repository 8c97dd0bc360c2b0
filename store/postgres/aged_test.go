package postgres_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/capabilities-sh/capabilities/store"
	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
)

// TestOldest: records by when they were last written, oldest first, page
// by page, each with its size (data and log lines); a write moves a record
// to the end; Size counts and sums by id prefix; both see their tenant's
// records only (I5: the neighbour tenant holds records under the same ids).
func TestOldest(t *testing.T) {
	pg := testenv.StartPostgres(t)
	ctx := context.Background()
	root, u := fresh(t, pg)
	a, b := root.Tenant(tenantA), root.Tenant(tenantB)
	for _, id := range []string{"r1", "r2", "r3", "r4"} {
		if err := b.Put(ctx, store.Runs, id, map[string]string{"the": "neighbour's, written first"}); err != nil {
			t.Fatal(err)
		}
	}
	for i, id := range []string{"r3", "r1", "r4", "r2"} {
		if err := a.Put(ctx, store.Runs, id, map[string]any{"n": i, "pad": strings.Repeat("x", 10*i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Append(ctx, store.Runs, "r1", []byte(`{"line":1}`)); err != nil {
		t.Fatal(err)
	}
	// Written days apart, as a prune sees them.
	for id, days := range map[string]int{"r3": 4, "r1": 3, "r4": 2, "r2": 1} {
		superuser(t, u, `UPDATE records SET written_at = now() - make_interval(days => $2) WHERE tenant = $3 AND kind = 'runs' AND id = $1`, id, days, tenantA)
	}
	ids := func(as []store.Aged) (out []string) {
		for _, x := range as {
			out = append(out, x.ID)
		}
		return out
	}
	now := time.Now()
	all, err := a.Oldest(ctx, store.Runs, now, store.Aged{}, 10)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"r3", "r1", "r4", "r2"}, ids(all)); diff != "" {
		t.Fatalf("oldest first (-want +got):\n%s", diff)
	}
	var r1 store.Aged
	for _, x := range all {
		if x.ID == "r1" {
			r1 = x
		}
	}
	var data int64
	c, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if err := c.QueryRow(ctx, `SELECT octet_length(data) FROM records WHERE tenant = $1 AND kind = 'runs' AND id = 'r1'`, tenantA).Scan(&data); err != nil {
		t.Fatal(err)
	}
	if want := data + int64(len(`{"line":1}`+"\n")); r1.Size != want {
		t.Errorf("r1's size %d; want %d (its record and its log line)", r1.Size, want)
	}
	// Pages of two, then written before 2.5 days ago.
	p1, _ := a.Oldest(ctx, store.Runs, now, store.Aged{}, 2)
	p2, _ := a.Oldest(ctx, store.Runs, now, p1[len(p1)-1], 2)
	p3, _ := a.Oldest(ctx, store.Runs, now, p2[len(p2)-1], 2)
	if got := append(append(ids(p1), ids(p2)...), ids(p3)...); !cmp.Equal(got, []string{"r3", "r1", "r4", "r2"}) {
		t.Errorf("paged: %v", got)
	}
	old, _ := a.Oldest(ctx, store.Runs, now.Add(-60*time.Hour), store.Aged{}, 10)
	if diff := cmp.Diff([]string{"r3", "r1"}, ids(old)); diff != "" {
		t.Errorf("written before 2.5 days ago (-want +got):\n%s", diff)
	}
	// A write is a new time: r3 goes last.
	if err := a.Put(ctx, store.Runs, "r3", map[string]int{"n": 9}); err != nil {
		t.Fatal(err)
	}
	all, _ = a.Oldest(ctx, store.Runs, time.Now().Add(time.Hour), store.Aged{}, 10)
	if diff := cmp.Diff([]string{"r1", "r4", "r2", "r3"}, ids(all)); diff != "" {
		t.Errorf("after r3 was written again (-want +got):\n%s", diff)
	}
	n, size, err := a.Size(ctx, store.Runs, "")
	var sum int64
	for _, x := range all {
		sum += x.Size
	}
	if err != nil || n != 4 || size != sum {
		t.Errorf("Size = %d records, %d bytes, %v; want 4 and %d", n, size, err, sum)
	}
	if n, _, err := a.Size(ctx, store.Runs, "r1"); err != nil || n != 1 {
		t.Errorf("Size of prefix r1 = %d, %v", n, err)
	}
	if n, _, err := root.Tenant("").Size(ctx, store.Runs, ""); err != nil || n != 0 {
		t.Errorf("the local tenant's Size = %d, %v; want none of the others'", n, err)
	}
}
