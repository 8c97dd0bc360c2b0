package hub_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/sandbox"
	"github.com/capabilities-sh/capabilities/engine/secret"
	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/capabilities-sh/capabilities/store"
)

// tenantHub is a hub over a new file store, on the shared driver d as tenant.
func tenantHub(t testing.TB, d *sandbox.Driver, tenant string, lim sandbox.Limits) *hub.Hub {
	t.Helper()
	st, _, err := store.Init(filepath.Join(t.TempDir(), tenant))
	if err != nil {
		t.Fatal(err)
	}
	return hub.New(st, hub.Options{Driver: d, Tenant: tenant, Sandbox: lim, Secrets: secret.NewMemory(nil)})
}

// TestSharedDriverTenants: two hubs on one Driver (Options.Driver) are two
// admission keys (Options.Tenant): with one run slot per tenant, a
// tenant's second execute waits for its first and is refused as busy,
// saying it is the account's maximum, while the other tenant's execute
// runs; closing a hub leaves the shared Driver serving the other.
func TestSharedDriverTenants(t *testing.T) {
	d, err := sandbox.New(sandbox.Options{CacheDir: sandbox.DefaultCacheDir(), MaxRunning: 2, Warm: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	wall := int(testenv.Timeout(60 * time.Second).Milliseconds())
	a := tenantHub(t, d, "tn_a", sandbox.Limits{WallMs: wall, QueueMs: 100})
	b := tenantHub(t, d, "tn_b", sandbox.Limits{WallMs: wall})
	defer b.Close()

	ctx, cancel := context.WithCancel(context.Background())
	long := make(chan *hub.Envelope, 1)
	go func() {
		env, _ := a.Execute(ctx, "for (;;) await new Promise(r => setTimeout(r, 20000))")
		long <- env
	}()
	for deadline := time.Now().Add(testenv.Timeout(10 * time.Second)); d.Peak() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("tenant a's first execute never started")
		}
	}
	env, err := a.Execute(context.Background(), "let x = 1; return x + 1")
	if err != nil {
		t.Fatal(err)
	}
	select {
	case e := <-long:
		t.Fatalf("tenant a's first execute ended before its second: %s %+v", e.Status, e.Error)
	default:
	}
	if env.Status != "failed" || env.Error == nil || env.Error.Code != sandbox.CodeBusy || !strings.Contains(env.Error.Message, "this account is running its maximum of 1 executes") {
		t.Errorf("tenant a's second execute: status %s, error %+v; want failed as busy, at the account's maximum of 1", env.Status, env.Error)
	}
	env, err = b.Execute(context.Background(), "let x = 1; return x + 2")
	if err != nil || env.Status != "completed" || string(env.Result) != "3" {
		t.Errorf("tenant b's execute while a holds its slot: %+v, %v", env, err)
	}
	cancel()
	<-long
	a.Close()
	env, err = b.Execute(context.Background(), "let x = 1; return x + 3")
	if err != nil || env.Status != "completed" || string(env.Result) != "4" {
		t.Errorf("tenant b's execute after a's hub closed: %+v, %v", env, err)
	}
}
