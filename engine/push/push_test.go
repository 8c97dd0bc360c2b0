package push_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/identity"
	"github.com/capabilities-sh/capabilities/engine/policy"
	"github.com/capabilities-sh/capabilities/engine/push"
	"github.com/capabilities-sh/capabilities/engine/secret"
	"github.com/capabilities-sh/capabilities/engine/stack"
	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/capabilities-sh/capabilities/store"
	"github.com/capabilities-sh/capabilities/store/postgres"
	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/auth"
)

const secretValue = "sk-live-9f8e7d6c5b4a39281706"

// The tenants, as identity.TenantID makes them.
var (
	alice = identity.TenantID("https://idp.example", "alice")
	bob   = identity.TenantID("https://idp.example", "bob")
)

// hosted is a test hosted hub: one hub per tenant over its own memory
// store and secret store, push.Handler behind go-sdk's bearer middleware
// with tokens the test hands out.
type hosted struct {
	srv     *httptest.Server
	pg      *postgres.Store // nil: memory stores
	kek     *secret.KEK
	mu      sync.Mutex
	hubs    map[string]*hub.Hub
	secrets map[string]secret.Store
	tokens  map[string]*auth.TokenInfo
}

func newHosted(t testing.TB) *hosted { return newHostedOn(t, nil) }

// newHostedOn is newHosted with each tenant's hub over its view of the
// PostgreSQL store pg (its secrets sealed there), as `hosted serve` has it.
func newHostedOn(t testing.TB, pg *postgres.Store) *hosted {
	t.Helper()
	hs := &hosted{pg: pg, hubs: map[string]*hub.Hub{}, secrets: map[string]secret.Store{}, tokens: map[string]*auth.TokenInfo{}}
	if pg != nil {
		k, err := secret.NewKEK()
		if err != nil {
			t.Fatal(err)
		}
		hs.kek = k
	}
	verify := func(ctx context.Context, tok string, _ *http.Request) (*auth.TokenInfo, error) {
		hs.mu.Lock()
		defer hs.mu.Unlock()
		if ti, ok := hs.tokens[tok]; ok {
			return ti, nil
		}
		return nil, auth.ErrInvalidToken
	}
	h := push.Handler(func(ctx context.Context, tenant string) (*hub.Hub, error) { return hs.open(t, tenant) })
	hs.srv = httptest.NewServer(auth.RequireBearerToken(verify, nil)(h))
	t.Cleanup(hs.srv.Close)
	return hs
}

func (hs *hosted) hub(t testing.TB, tenant string) *hub.Hub {
	t.Helper()
	h, err := hs.open(t, tenant)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func (hs *hosted) open(t testing.TB, tenant string) (*hub.Hub, error) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	if h, ok := hs.hubs[tenant]; ok {
		return h, nil
	}
	var st store.Store = store.NewMem()
	var sec secret.Store = secret.NewMemory(nil)
	if hs.pg != nil {
		st = hs.pg.Tenant(tenant)
		sealed, err := secret.OpenSealed(context.Background(), st, tenant, hs.kek)
		if err != nil {
			return nil, err
		}
		sec = sealed
	}
	h := hub.New(st, hub.Options{Secrets: sec})
	t.Cleanup(h.Close)
	hs.hubs[tenant], hs.secrets[tenant] = h, sec
	return h, nil
}

// token hands out a bearer token for tenant with scopes.
func (hs *hosted) token(tenant string, scopes ...string) string {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	tok := "tok-" + tenant + "-" + strings.Join(scopes, "-")
	hs.tokens[tok] = &auth.TokenInfo{UserID: tenant, Scopes: scopes, Expiration: time.Now().Add(time.Hour)}
	return tok
}

type bearer struct{ tok string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.tok)
	return http.DefaultTransport.RoundTrip(r)
}

func (hs *hosted) client(tok string) *push.Client {
	return &push.Client{URL: hs.srv.URL, HTTP: &http.Client{Transport: bearer{tok}}}
}

// localHub is a hub with three remote sources on one server-everything
// (plain; with a team header; with a secret header and its secret), a
// rule and a profile.
func localHub(t testing.TB, ctx context.Context, mcpURL string) *hub.Hub {
	t.Helper()
	st, _, err := store.Init(filepath.Join(t.TempDir(), "hub"))
	if err != nil {
		t.Fatal(err)
	}
	h := hub.New(st, hub.Options{Secrets: secret.NewMemory(nil)})
	t.Cleanup(h.Close)
	add := func(req hub.AddRequest) {
		t.Helper()
		p, err := h.Propose(ctx, req)
		if err != nil {
			t.Fatalf("proposing %s: %v", req.Namespace, err)
		}
		if err := h.Accept(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	add(hub.AddRequest{Namespace: "everything", URL: mcpURL})
	add(hub.AddRequest{Namespace: "team", URL: mcpURL, Headers: map[string]string{"X-Team": "blue"}})
	add(hub.AddRequest{Namespace: "keyed", URL: mcpURL, SecretHeader: "X-Api-Key"})
	if _, err := h.Auth(ctx, hub.AuthRequest{Namespace: "keyed", Value: secretValue}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.SetRule(ctx, "team", policy.Deny, "", "cli"); err != nil {
		t.Fatal(err)
	}
	if err := h.PutProfile(ctx, hub.Profile{Name: "reader", Mode: hub.ModeCode, Namespaces: []string{"everything"}}, true); err != nil {
		t.Fatal(err)
	}
	return h
}

func keys(cs []push.Change) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Op+" "+c.Key())
	}
	return out
}

func TestPushPlanApplyStatus(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(2*time.Minute))
	defer cancel()
	mcpURL := testenv.EverythingHTTP(t)
	local := localHub(t, ctx, mcpURL)
	hs := newHosted(t)
	c := hs.client(hs.token(alice, "mcp", "hub"))

	b, left, err := push.Export(ctx, local)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Fatalf("left out: %v", left)
	}
	for p, data := range b.Files {
		if strings.Contains(string(data), secretValue) {
			t.Fatalf("%s carries the secret value", p)
		}
	}

	// Without secrets: the keyed connection stays out, said in a note.
	p, err := c.Plan(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"add source everything", "add source keyed", "add source team", "add rule team", "add profile reader"}
	if d := cmp.Diff(want, keys(p.Changes)); d != "" {
		t.Fatalf("plan without secrets (-want +got):\n%s", d)
	}
	if len(p.Notes) != 1 || !strings.Contains(p.Notes[0], "KEYED_TOKEN") || !strings.Contains(p.Notes[0], "--secrets") {
		t.Fatalf("notes: %q", p.Notes)
	}

	// With the secret.
	secs, err := push.Secrets(ctx, local, b)
	if err != nil {
		t.Fatal(err)
	}
	if len(secs) != 1 || secs[0].String() != "KEYED_TOKEN (keyed/default)" || secs[0].Value != secretValue {
		t.Fatalf("secrets: %v", secs)
	}
	b.Secrets = secs
	p, err = c.Plan(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	want = []string{"add source everything", "add source keyed", "add source team", "add secret KEYED_TOKEN (keyed/default)", "add rule team", "add profile reader"}
	if d := cmp.Diff(want, keys(p.Changes)); d != "" {
		t.Fatalf("plan (-want +got):\n%s", d)
	}
	res, err := c.Apply(ctx, b, p.Hash)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Failed) > 0 {
		t.Fatalf("failed: %+v", res.Failed)
	}
	if d := cmp.Diff(want, keys(res.Applied)); d != "" {
		t.Fatalf("applied (-want +got):\n%s", d)
	}
	// The secret is stored through the tenant hub's secret store.
	h := hs.hub(t, alice)
	conns, err := h.Connections(ctx, "keyed")
	if err != nil || len(conns.Items) != 1 {
		t.Fatalf("connections: %v %v", conns, err)
	}
	if v, err := hs.secrets[alice].Get(ctx, conns.Items[0].SecretRef); err != nil || v != secretValue {
		t.Fatalf("hosted secret: %q %v", v, err)
	}

	// A second push: nothing to change, and the same hash applied again
	// changes nothing.
	p2, err := c.Plan(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	if len(p2.Changes) != 0 || len(p2.Notes) != 0 {
		t.Fatalf("second plan: %+v", p2)
	}
	// Status: the sources, their tools, health.
	st, err := c.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Tenant != alice || len(st.Sources) != 3 {
		t.Fatalf("status: %+v", st)
	}
	for _, s := range st.Sources {
		if s.Tools == 0 || s.Health != "ok" {
			t.Fatalf("source %+v", s)
		}
	}
	if st.Unreviewed == 0 || len(st.Pending) != 0 || len(st.Runs) != 0 {
		t.Fatalf("status before a run: %d unreviewed, %d pending, %d runs", st.Unreviewed, len(st.Pending), len(st.Runs))
	}
	// A call of a tool no person reviewed asks: status lists it pending.
	env, err := h.Execute(ctx, `return await everything.echo({message: "from the hosted hub"})`)
	if err != nil {
		t.Fatal(err)
	}
	st, err = c.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Pending) != 1 || st.Pending[0].Address != "everything.echo" || len(st.Runs) != 1 || st.Runs[0].ID != st.Pending[0].Run {
		t.Fatalf("status with a pending call (run %s %s): %+v %+v", env.RunID, env.Status, st.Pending, st.Runs)
	}

	// The old hash no longer applies once the hosted state moved.
	if _, err := h.SetRule(ctx, "everything", policy.Ask, "", "cli"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Apply(ctx, b, p2.Hash); !errors.Is(err, push.ErrStale) {
		t.Fatalf("stale apply: %v", err)
	}
	p3, err := c.Plan(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"remove rule everything"}, keys(p3.Changes)); d != "" {
		t.Fatalf("plan after a hosted change (-want +got):\n%s", d)
	}

	// An apply under way elsewhere (another process of the hub holds the
	// claim): refused, nothing applied.
	release, err := h.Store().Hold(ctx, store.Policies, "push-apply")
	if err != nil {
		t.Fatal(err)
	}
	var ae *push.APIError
	if _, err := c.Apply(ctx, b, p3.Hash); !errors.As(err, &ae) || ae.Status != http.StatusServiceUnavailable {
		t.Fatalf("apply while another is under way: %v", err)
	}
	release()

	// Removing a source locally removes it on the hosted hub.
	if err := local.Remove(ctx, "team"); err != nil {
		t.Fatal(err)
	}
	b2, _, err := push.Export(ctx, local)
	if err != nil {
		t.Fatal(err)
	}
	p4, err := c.Plan(ctx, b2)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"remove rule team", "remove rule everything", "remove source team"}, keys(p4.Changes)); d != "" {
		t.Fatalf("plan after a removal (-want +got):\n%s", d)
	}
	if res, err := c.Apply(ctx, b2, p4.Hash); err != nil || len(res.Failed) > 0 {
		t.Fatalf("apply: %+v %v", res, err)
	}
	if p5, err := c.Plan(ctx, b2); err != nil || len(p5.Changes) != 0 {
		t.Fatalf("after the removal: %+v %v", p5, err)
	}
}

// TestPushRefusals is I5 and the scope, as another tenant would try, on
// memory stores and on PostgreSQL tenant views.
func TestPushRefusals(t *testing.T) {
	t.Run("memory", func(t *testing.T) { testPushRefusals(t, nil) })
	t.Run("postgres", func(t *testing.T) {
		ctx := context.Background()
		dbURL := testenv.StartPostgres(t).NewDatabase(t)
		if err := postgres.Migrate(ctx, dbURL); err != nil {
			t.Fatal(err)
		}
		root, err := postgres.Open(ctx, dbURL)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { root.Close() })
		testPushRefusals(t, root)
	})
}

func testPushRefusals(t *testing.T, pg *postgres.Store) {
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(2*time.Minute))
	defer cancel()
	mcpURL := testenv.EverythingHTTP(t)
	local := localHub(t, ctx, mcpURL)
	hs := newHostedOn(t, pg)
	aliceC := hs.client(hs.token(alice, "mcp", "hub"))
	b, _, err := push.Export(ctx, local)
	if err != nil {
		t.Fatal(err)
	}
	p, err := aliceC.Plan(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := aliceC.Apply(ctx, b, p.Hash); err != nil {
		t.Fatal(err)
	}
	aliceHub := hs.hub(t, alice)
	before, err := stack.FromHub(ctx, aliceHub)
	if err != nil {
		t.Fatal(err)
	}

	bobC := hs.client(hs.token(bob, "mcp", "hub"))
	mcpOnly := hs.client(hs.token(alice, "mcp"))
	none := &push.Client{URL: hs.srv.URL}
	forged := hs.client("tok-" + alice + "-mcp-hub-forged")
	empty := &push.Bundle{Files: map[string][]byte{}}

	rows := []struct {
		name string
		do   func() error
		code int // the refusal's HTTP status; 0: allowed, but sees only its own
	}{
		{"bob's status sees his own empty hub", func() error {
			st, err := bobC.Status(ctx)
			if err != nil {
				return err
			}
			if st.Tenant != bob || len(st.Sources) != 0 {
				t.Errorf("bob's status: %+v", st)
			}
			return nil
		}, 0},
		{"bob's plan is against his own hub", func() error {
			pb, err := bobC.Plan(ctx, b)
			if err != nil {
				return err
			}
			if len(pb.Changes) != 5 || pb.Changes[0].Op != stack.OpAdd {
				t.Errorf("bob's plan: %+v", keys(pb.Changes))
			}
			return nil
		}, 0},
		{"bob applying alice's plan hash", func() error { _, err := bobC.Apply(ctx, empty, p.Hash); return err }, http.StatusConflict},
		{"bob pushing an empty bundle with his own hash changes only his hub", func() error {
			pb, err := bobC.Plan(ctx, empty)
			if err != nil {
				return err
			}
			_, err = bobC.Apply(ctx, empty, pb.Hash)
			return err
		}, 0},
		{"a token without scope hub: status", func() error { _, err := mcpOnly.Status(ctx); return err }, http.StatusForbidden},
		{"a token without scope hub: plan", func() error { _, err := mcpOnly.Plan(ctx, empty); return err }, http.StatusForbidden},
		{"a token without scope hub: apply", func() error { _, err := mcpOnly.Apply(ctx, empty, p.Hash); return err }, http.StatusForbidden},
		{"no token", func() error { _, err := none.Status(ctx); return err }, http.StatusUnauthorized},
		{"an unknown token", func() error { _, err := forged.Apply(ctx, empty, p.Hash); return err }, http.StatusUnauthorized},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			err := r.do()
			var ae *push.APIError
			switch {
			case r.code == 0 && err != nil:
				t.Fatalf("refused: %v", err)
			case r.code != 0 && (!errors.As(err, &ae) || ae.Status != r.code):
				t.Fatalf("got %v, want a %d", err, r.code)
			}
		})
	}
	after, err := stack.FromHub(ctx, aliceHub)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(before, after); d != "" {
		t.Fatalf("alice's hub changed (-before +after):\n%s", d)
	}
}

func TestPushRefusesBadBundles(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(time.Minute))
	defer cancel()
	hs := newHosted(t)
	c := hs.client(hs.token(alice, "hub"))
	src := func(body string) *push.Bundle {
		return &push.Bundle{Files: map[string][]byte{"sources/gh.json": []byte(body)}}
	}
	rows := []struct {
		name string
		b    *push.Bundle
		want string
	}{
		{"a stdio source", src(`{"source":{"namespace":"gh","kind":"stdio","command":"gh-mcp"},"connections":[]}`), "runs a local command (stdio)"},
		{"an OpenAPI file", src(`{"source":{"namespace":"gh","kind":"openapi","document":"/home/me/api.yaml"},"connections":[]}`), "is a file on this machine"},
		{"a file push does not carry", &push.Bundle{Files: map[string][]byte{"capabilities.lock": []byte("{}")}}, "not one a push carries"},
		{"a malformed source", src(`{"source":{"namespace":"other","kind":"http","url":"https://x.example"},"connections":[]}`), "not \"gh\" as the file is called"},
		{"a secret for no connection", &push.Bundle{Files: map[string][]byte{}, Secrets: []push.Secret{{Namespace: "gh", Connection: "default", Name: "GH_TOKEN", Value: "x"}}}, "names no connection"},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			_, err := c.Plan(ctx, r.b)
			var ae *push.APIError
			if !errors.As(err, &ae) || ae.Status != http.StatusBadRequest || !strings.Contains(ae.Message, r.want) {
				t.Fatalf("got %v, want a 400 saying %q", err, r.want)
			}
		})
	}
	if st, err := c.Status(ctx); err != nil || len(st.Sources) != 0 {
		t.Fatalf("status after refusals: %+v %v", st, err)
	}
}

func TestSecretsOnlyOverTLS(t *testing.T) {
	c := &push.Client{URL: "http://hub.example.com"}
	b := &push.Bundle{Files: map[string][]byte{}, Secrets: []push.Secret{{Namespace: "a", Connection: "default", Name: "A_TOKEN", Value: "v"}}}
	if _, err := c.Plan(context.Background(), b); err == nil || !strings.Contains(err.Error(), "over TLS only") {
		t.Fatalf("got %v", err)
	}
	for _, u := range []string{"https://hub.example.com", "http://127.0.0.1:8080", "http://localhost:1"} {
		if err := push.SecureURL(u); err != nil {
			t.Errorf("%s: %v", u, err)
		}
	}
}

// TestExportLeavesLocalCommands: a source that runs a local command stays
// on this machine, with the rule and the profile that name it; a hosted
// hub would refuse it.
func TestExportLeavesLocalCommands(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(2*time.Minute))
	defer cancel()
	mcpURL := testenv.EverythingHTTP(t)
	h := localHub(t, ctx, mcpURL)
	p, err := h.Propose(ctx, hub.AddRequest{Namespace: "local", Command: testenv.Everything(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Accept(ctx, p); err != nil {
		t.Fatal(err)
	}
	if _, err := h.SetRule(ctx, "local", policy.Allow, "", "cli"); err != nil {
		t.Fatal(err)
	}
	if err := h.PutProfile(ctx, hub.Profile{Name: "mixed", Mode: hub.ModeCode, Namespaces: []string{"everything", "local"}}, true); err != nil {
		t.Fatal(err)
	}
	b, left, err := push.Export(ctx, h)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range left {
		got = append(got, l.Key)
	}
	if d := cmp.Diff([]string{"source local", "rule local", "profile mixed"}, got); d != "" {
		t.Fatalf("left out (-want +got):\n%s", d)
	}
	if !strings.Contains(left[0].Reason, "remote sources only") {
		t.Errorf("reason: %s", left[0].Reason)
	}
	for p := range b.Files {
		if strings.Contains(p, "local") || strings.Contains(p, "mixed") {
			t.Errorf("the bundle carries %s", p)
		}
	}
	hs := newHosted(t)
	c := hs.client(hs.token(alice, "hub"))
	if _, err := c.Plan(ctx, b); err != nil {
		t.Fatalf("the bundle without the local source: %v", err)
	}
}

// TestExportRefusesALeak: a secret value written into a source's config
// (a header) is found and nothing is sent.
func TestExportRefusesALeak(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(2*time.Minute))
	defer cancel()
	mcpURL := testenv.EverythingHTTP(t)
	h := localHub(t, ctx, mcpURL)
	p, err := h.Propose(ctx, hub.AddRequest{Namespace: "leaky", URL: mcpURL, Headers: map[string]string{"X-Trace": "t-" + secretValue}})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Accept(ctx, p); err != nil {
		t.Fatal(err)
	}
	_, _, err = push.Export(ctx, h)
	var le *push.LeakError
	if !errors.As(err, &le) || le.Path != "sources/leaky.json" || !strings.Contains(le.Whose, "keyed/default") {
		t.Fatalf("got %v, want a LeakError naming sources/leaky.json and keyed/default", err)
	}
	if strings.Contains(err.Error(), secretValue) {
		t.Fatal("the error shows the secret")
	}
}

// BenchmarkPlan is one plan of a three-source hub over HTTP, the hosted
// side reading its state and comparing (what `hub status` and every push
// costs the hosted hub).
func BenchmarkPlan(b *testing.B) {
	ctx := context.Background()
	mcpURL := testenv.EverythingHTTP(b)
	local := localHub(b, ctx, mcpURL)
	hs := newHosted(b)
	c := hs.client(hs.token(alice, "hub"))
	bundle, _, err := push.Export(ctx, local)
	if err != nil {
		b.Fatal(err)
	}
	p, err := c.Plan(ctx, bundle)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := c.Apply(ctx, bundle, p.Hash); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		p, err := c.Plan(ctx, bundle)
		if err != nil || len(p.Changes) != 0 {
			b.Fatalf("%+v %v", p, err)
		}
	}
}

// TestPushOpenAPISource: an OpenAPI source (its document at an URL) is
// pushed, its operations listed by the hosted hub, and a second push finds
// nothing to change.
func TestPushOpenAPISource(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(2*time.Minute))
	defer cancel()
	api := testenv.PetstoreAPI(t)
	st, _, err := store.Init(filepath.Join(t.TempDir(), "hub"))
	if err != nil {
		t.Fatal(err)
	}
	local := hub.New(st, hub.Options{Secrets: secret.NewMemory(nil)})
	t.Cleanup(local.Close)
	p, err := local.Propose(ctx, hub.AddRequest{Namespace: "pets", Document: api + "/openapi.json"})
	if err != nil {
		t.Fatal(err)
	}
	if err := local.Accept(ctx, p); err != nil {
		t.Fatal(err)
	}
	hs := newHosted(t)
	c := hs.client(hs.token(alice, "hub"))
	b, _, err := push.Export(ctx, local)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := c.Plan(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"add source pets"}, keys(plan.Changes)); d != "" {
		t.Fatalf("plan (-want +got):\n%s", d)
	}
	if res, err := c.Apply(ctx, b, plan.Hash); err != nil || len(res.Failed) != 0 {
		t.Fatalf("apply: %+v %v", res, err)
	}
	again, err := c.Plan(ctx, b)
	if err != nil || len(again.Changes) != 0 {
		t.Fatalf("a second push: %+v %v", again, err)
	}
	status, err := c.Status(ctx)
	if err != nil || len(status.Sources) != 1 || status.Sources[0].Tools == 0 || status.Sources[0].Kind != "openapi" {
		t.Fatalf("status: %+v %v", status, err)
	}
}
