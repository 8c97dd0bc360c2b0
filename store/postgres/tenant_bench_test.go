package postgres_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/capabilities-sh/capabilities/engine/identity"
	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/capabilities-sh/capabilities/store"
	"github.com/capabilities-sh/capabilities/store/postgres"
)

// BenchmarkTenant compares a tenant's view with the local hub (tenant
// "") on one database that 8 tenants share (each 200 records of every
// kind measured): Put of a run record (committed without waiting for the
// drive, so the statement's cost shows), Put of a source (committed
// synchronously, and bumping the tenant's generation), Get, and the
// claim taken and released.
//
//	go test ./store/postgres -run '^$' -bench BenchmarkTenant -benchmem -count 6 > /tmp/t.txt
//	benchstat -col /view /tmp/t.txt
func BenchmarkTenant(b *testing.B) {
	pg := testenv.StartPostgres(b)
	ctx := context.Background()
	u := pg.NewDatabase(b)
	if err := postgres.Migrate(ctx, u); err != nil {
		b.Fatal(err)
	}
	root, err := postgres.Open(ctx, u)
	if err != nil {
		b.Fatal(err)
	}
	defer root.Close()
	type rec struct {
		Name  string `json:"name"`
		Count int    `json:"count"`
		Pad   string `json:"pad"`
	}
	pad := "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" +
		"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	views := []*postgres.Store{root}
	for i := range 7 {
		views = append(views, root.Tenant(identity.TenantID("https://idp.example", "user"+strconv.Itoa(i))))
	}
	for _, v := range views {
		for _, k := range []store.Kind{store.Runs, store.Sources} {
			for i := range 200 {
				if err := v.Put(ctx, k, "r"+strconv.Itoa(i), rec{Name: "seed", Pad: pad}); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	// Each op on the local hub, then on a tenant, so that a drift of this
	// machine's load falls on both alike; compare with
	// benchstat -col /view.
	views2 := []struct {
		name string
		s    *postgres.Store
	}{{"local", root}, {"tenant", views[3]}}
	for _, kind := range []store.Kind{store.Runs, store.Sources} {
		for _, c := range views2 {
			s := c.s
			b.Run("Put/kind="+string(kind)+"/view="+c.name, func(b *testing.B) {
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					if err := s.Put(ctx, kind, "r"+strconv.Itoa(i%200), rec{Name: "x", Count: i, Pad: pad}); err != nil {
						b.Fatal(err)
					}
					i++
				}
			})
		}
	}
	for _, c := range views2 {
		s := c.s
		b.Run("Get/view="+c.name, func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				var r rec
				if err := s.Get(ctx, store.Sources, "r"+strconv.Itoa(i%200), &r); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
	for _, c := range views2 {
		s := c.s
		b.Run("Hold/view="+c.name, func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				release, err := s.Hold(ctx, store.Runs, "h"+strconv.Itoa(i))
				if err != nil {
					b.Fatal(err)
				}
				release()
				i++
			}
		})
	}
}
