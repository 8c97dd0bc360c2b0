package hub_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/approval"
	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/secret"
	"github.com/capabilities-sh/capabilities/engine/source"
	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/capabilities-sh/capabilities/store"
	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func newOpenAPIHub(t testing.TB) (*hub.Hub, *store.File) {
	t.Helper()
	st, _, err := store.Init(filepath.Join(t.TempDir(), "hub"))
	if err != nil {
		t.Fatal(err)
	}
	h := hub.New(st, hub.Options{Secrets: secret.NewMemory(nil)})
	t.Cleanup(h.Close)
	return h, st
}

// addPetstore adds the Petstore API by its document's URL, accepts the
// review's proposal (reads allowed, writes asking) and stores the API key.
func addPetstore(t *testing.T, h *hub.Hub, doc, key string) *hub.Proposal {
	t.Helper()
	ctx := context.Background()
	p := addReviewed(t, h, hub.AddRequest{Document: doc})[0]
	if key != "" {
		if _, err := h.Auth(ctx, hub.AuthRequest{Namespace: p.Source.Namespace, Value: key}); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// TestOpenAPISourceAgainstARealServer: a Node HTTP API serving its own
// OpenAPI document is added by URL (JSON and YAML give the same tools); its
// operations are tools with effects by method; through execute a GET runs
// at once, a POST and a DELETE wait for a person (the DELETE marked
// destructive) and go through once approved with the stored API key; error
// statuses are ToolErrors with the status and a hint; an HTML answer is
// text; refresh finds nothing changed.
func TestOpenAPISourceAgainstARealServer(t *testing.T) {
	base := testenv.PetstoreAPI(t)
	h, _ := newOpenAPIHub(t)
	ctx := context.Background()
	p := addPetstore(t, h, base+"/openapi.json", "test-key")

	ns := p.Source.Namespace
	if ns != "petstore" || p.Source.Kind != model.KindOpenAPI || p.Source.URL != base+"/api" || p.Source.AuthScheme != "apiKey header X-API-Key" {
		t.Fatalf("source %+v", p.Source)
	}
	effects := map[string]model.Effect{}
	for _, tl := range p.Manifest.Tools {
		effects[tl.Address] = tl.Effect()
	}
	want := map[string]model.Effect{
		"petstore.listPets": model.EffectRead, "petstore.showPetById": model.EffectRead, "petstore.createPet": model.EffectWrite,
		"petstore.updatePet": model.EffectWrite, "petstore.deletePet": model.EffectDestructive, "petstore.echo": model.EffectWrite,
		"petstore.page": model.EffectRead, "petstore.slow": model.EffectRead, "petstore.moved": model.EffectRead,
	}
	if d := cmp.Diff(want, effects); d != "" {
		t.Errorf("tools (-want +got):\n%s", d)
	}
	yp, err := h.Propose(ctx, hub.AddRequest{Document: base + "/openapi.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(contracts(p.Manifest.Tools), contracts(yp.Manifest.Tools)); d != "" {
		t.Errorf("the YAML document gives other tools (-json +yaml):\n%s", d)
	}

	// A read runs at once.
	env, err := h.Execute(ctx, `return await petstore.listPets({limit: 1, tags: ["dog", "cat"]})`)
	if err != nil || env.Status != "completed" {
		t.Fatalf("listPets: %v %+v", err, env)
	}
	if string(env.Result) != `[{"id":1,"name":"Rex","tag":"dog"}]` {
		t.Errorf("listPets: %s", env.Result)
	}

	// A write asks; approved once, it goes with the API key.
	env, err = h.Execute(ctx, `return await petstore.createPet({body: {name: "Kit", tag: "cat"}})`)
	if err != nil || env.Status != "awaiting_approval" || len(env.Pending) != 1 || env.Pending[0].Address != "petstore.createPet" {
		t.Fatalf("createPet: %v %+v", err, env)
	}
	env = approveOnce(t, h, env.RunID)
	if string(env.Result) != `{"id":3,"name":"Kit","tag":"cat"}` {
		t.Errorf("createPet: %s", env.Result)
	}

	// A delete asks too, and is destructive.
	env, err = h.Execute(ctx, `await petstore.deletePet({petId: 3}); return await petstore.listPets({})`)
	if err != nil || env.Status != "awaiting_approval" || len(env.Pending) != 1 || env.Pending[0].Address != "petstore.deletePet" {
		t.Fatalf("deletePet: %v %+v", err, env)
	}
	env = approveOnce(t, h, env.RunID)
	if !strings.Contains(string(env.Result), `"Tom"`) || strings.Contains(string(env.Result), `"Kit"`) {
		t.Errorf("after deletePet: %s", env.Result)
	}

	// Error statuses are ToolErrors with the status and a hint.
	env, err = h.Execute(ctx, `try { await petstore.showPetById({petId: 999}) } catch (e) { return {code: e.code, status: e.status, hint: e.hint, message: e.message} }`)
	if err != nil || env.Status != "completed" {
		t.Fatalf("showPetById 999: %v %+v", err, env)
	}
	var te struct {
		Code, Hint, Message string
		Status              int
	}
	_ = json.Unmarshal(env.Result, &te)
	if te.Code != "tool_error" || te.Status != 404 || !strings.Contains(te.Hint, "path parameters") || !strings.Contains(te.Message, "HTTP 404 Not Found") || !strings.Contains(te.Message, "no pet 999") {
		t.Errorf("a 404: %s", env.Result)
	}
	// A wrong key: 401 with the hint to store another.
	if _, err := h.Auth(ctx, hub.AuthRequest{Namespace: ns, Value: "wrong-key"}); err != nil {
		t.Fatal(err)
	}
	res, err := h.Call(ctx, "petstore.updatePet", json.RawMessage(`{"petId": 1, "body": {"name": "Max"}}`), "")
	b, _ := json.Marshal(res)
	if err != nil || !res.IsError || !strings.Contains(string(b), "HTTP 401") || !strings.Contains(string(b), "capabilities hub auth") {
		t.Errorf("a refused key: %v %s", err, b)
	}
	// An HTML answer is text.
	res, err = h.Call(ctx, "petstore.page", nil, "")
	b, _ = json.Marshal(res)
	if err != nil || res.IsError || len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != "<html><body>hello</body></html>" {
		t.Errorf("an HTML answer: %v %s", err, b)
	}
	// The request as the server saw it: the path value escaped whole, a
	// name two parameters share split by where it goes, a query array not
	// exploded, deepObject, header, cookie, a form body, and the API key,
	// which the echo carries back and the hub scrubs.
	if _, err := h.Auth(ctx, hub.AuthRequest{Namespace: ns, Value: "test-key"}); err != nil {
		t.Fatal(err)
	}
	res, err = h.Call(ctx, "petstore.echo", json.RawMessage(`{"path_id": "a/b c?", "query_id": "q", "ids": [1, 2], "filter": {"kind": "dog"}, "X-Trace": "t-1", "session": "s1", "body": {"a": "x y", "b": ["1", "2"]}}`), "")
	if err != nil || res.IsError {
		t.Fatalf("echo: %v %+v", err, res)
	}
	var echo struct {
		RawPath, Query, Body string
		Headers              map[string]string
	}
	if err := json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &echo); err != nil {
		t.Fatal(err)
	}
	gotEcho := []string{echo.RawPath, echo.Query, echo.Body, echo.Headers["x-trace"], echo.Headers["cookie"], echo.Headers["content-type"], echo.Headers["x-api-key"]}
	wantEcho := []string{"/api/echo/a%2Fb%20c%3F", "?filter%5Bkind%5D=dog&id=q&ids=1%2C2", "a=x+y&b=1&b=2", "t-1", "session=s1", "application/x-www-form-urlencoded", "[secret]"}
	if d := cmp.Diff(wantEcho, gotEcho); d != "" {
		t.Errorf("the request as the server saw it (-want +got):\n%s", d)
	}

	changes, err := h.Refresh(ctx, ns)
	if err != nil || len(changes) != 1 || changes[0].Error != "" || len(changes[0].Added)+len(changes[0].Removed)+len(changes[0].Changed) != 0 {
		t.Errorf("refresh: %v %+v", err, changes)
	}
}

func contracts(tools []model.Tool) map[string]string {
	m := map[string]string{}
	for _, t := range tools {
		m[t.Name] = t.Contract
	}
	return m
}

func approveOnce(t *testing.T, h *hub.Hub, runID string) *hub.Envelope {
	t.Helper()
	ctx := context.Background()
	if _, err := approval.Record(ctx, h.Store(), approval.Request{RunID: runID, Choice: model.ChoiceOnce, Channel: approval.ChannelCLI}); err != nil {
		t.Fatal(err)
	}
	env, err := h.Resume(ctx, runID)
	if err != nil || env.Status != "completed" {
		t.Fatalf("resume: %v %+v", err, env)
	}
	return env
}

// TestOpenAPIRefusals: a document URL answering HTML, one that does not
// parse, or one whose server never answers fails hub add with a clear error
// and stores nothing; a call whose server never answers ends at the
// source's call timeout; a redirect to another origin is refused and the
// other origin gets no request.
func TestOpenAPIRefusals(t *testing.T) {
	var stolen atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { stolen.Add(1) }))
	defer other.Close()
	base := testenv.PetstoreAPI(t, "REDIRECT_TO="+other.URL)
	h, _ := newOpenAPIHub(t)
	ctx := context.Background()
	for _, tc := range []struct{ doc, want string }{
		{base + "/docs", "HTML page"},
		{base + "/private/openapi.json", "401"},
		{base + "/slow/openapi.json", "did not answer in time"},
	} {
		pctx, cancel := context.WithTimeout(ctx, testenv.Timeout(time.Second))
		_, err := h.Propose(pctx, hub.AddRequest{Document: tc.doc})
		cancel()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.doc, err, tc.want)
		}
	}
	if recs, err := h.Sources(ctx); err != nil || len(recs) != 0 {
		t.Errorf("after refused adds the hub holds %d sources (%v)", len(recs), err)
	}
	p, err := h.Propose(ctx, hub.AddRequest{Document: base + "/openapi.json", CallTimeout: testenv.Timeout(time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Accept(ctx, p); err != nil {
		t.Fatal(err)
	}
	_, err = h.Call(ctx, "petstore.slow", nil, "")
	if !errors.Is(err, source.ErrCallTimeout) {
		t.Errorf("a server that never answers: %v, want a call timeout", err)
	}
	_, err = h.Call(ctx, "petstore.moved", nil, "")
	if err == nil || !strings.Contains(err.Error(), "outside") || stolen.Load() != 0 {
		t.Errorf("a redirect to another origin: %v; the other origin got %d requests", err, stolen.Load())
	}
	if !slices.ContainsFunc(p.Manifest.Tools, func(t model.Tool) bool { return t.Address == "petstore.moved" }) {
		t.Error("no moved tool")
	}
}

// TestOpenAPIServerChangeIsANewReview: a document that names another
// server after the source was reviewed (here called at a --server of its
// own, a session already up) is refused on refresh and on the calls after
// it (the stored manifest stays), with a message saying to add it again.
func TestOpenAPIServerChangeIsANewReview(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(testenv.Root(t), "testdata", "openapi", "petstore-oai-3.0.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	doc := filepath.Join(t.TempDir(), "petstore.yaml")
	if err := os.WriteFile(doc, data, 0o600); err != nil {
		t.Fatal(err)
	}
	h, _ := newOpenAPIHub(t)
	ctx := context.Background()
	local := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`[]`))
	}))
	defer local.Close()
	p, err := h.Propose(ctx, hub.AddRequest{Document: doc, Server: local.URL + "/v1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Accept(ctx, p); err != nil {
		t.Fatal(err)
	}
	// A session is up (a call answered) before the document changes.
	if res, err := h.Call(ctx, p.Source.Namespace+".listPets", nil, ""); err != nil || res.IsError {
		t.Fatalf("a call before the change: %v %+v", err, res)
	}
	if p.Source.DocumentServer != "http://petstore.swagger.io/v1" {
		t.Fatalf("document server %q", p.Source.DocumentServer)
	}
	moved := strings.Replace(string(data), "http://petstore.swagger.io/v1", "https://elsewhere.example/v1", 1)
	if err := os.WriteFile(doc, []byte(moved), 0o600); err != nil {
		t.Fatal(err)
	}
	changes, err := h.Refresh(ctx, p.Source.Namespace)
	if err != nil || len(changes) != 1 || !strings.Contains(changes[0].Error, "now names the server https://elsewhere.example/v1 (http://petstore.swagger.io/v1 when the source was reviewed)") {
		t.Fatalf("refresh: %v %+v", err, changes)
	}
	if _, err := h.Call(ctx, p.Source.Namespace+".listPets", nil, ""); err == nil || !strings.Contains(err.Error(), "remove the source and add it again") || !strings.Contains(err.Error(), "calls go only to "+local.URL+"/v1") {
		t.Errorf("a call: %v", err)
	}
	m, err := h.Manifest(ctx, p.Source.Namespace)
	if err != nil || len(m.Tools) != 3 {
		t.Errorf("the stored manifest: %v %+v", err, m)
	}
}

// TestOpenAPIOperationWaitsForItsCredential: with no credential stored, an
// operation the document leaves open runs, and one that requires the API
// key waits for a connection (awaiting_connection, naming hub auth) instead
// of going out without it; once the key is stored, the run resumes and the
// call goes with it.
func TestOpenAPIOperationWaitsForItsCredential(t *testing.T) {
	base := testenv.PetstoreAPI(t)
	h, _ := newOpenAPIHub(t)
	ctx := context.Background()
	addPetstore(t, h, base+"/openapi.json", "")
	env, err := h.Execute(ctx, `return (await petstore.listPets({})).length`)
	if err != nil || env.Status != "completed" || string(env.Result) != "2" {
		t.Fatalf("an open operation without a credential: %v %+v", err, env)
	}
	env, err = h.Execute(ctx, `return await petstore.createPet({body: {name: "Kit"}})`)
	if err != nil || env.Status != "awaiting_approval" {
		t.Fatalf("createPet: %v %+v", err, env)
	}
	if _, err := approval.Record(ctx, h.Store(), approval.Request{RunID: env.RunID, Choice: model.ChoiceOnce, Channel: approval.ChannelCLI}); err != nil {
		t.Fatal(err)
	}
	env, err = h.Resume(ctx, env.RunID)
	if err != nil || env.Status != "awaiting_connection" {
		t.Fatalf("createPet without its key: %v %+v", err, env)
	}
	b, _ := json.Marshal(env)
	if !strings.Contains(string(b), "capabilities hub auth petstore") {
		t.Errorf("the envelope does not say how to store the key: %s", b)
	}
	if _, err := h.Auth(ctx, hub.AuthRequest{Namespace: "petstore", Value: "test-key"}); err != nil {
		t.Fatal(err)
	}
	env, err = h.Resume(ctx, env.RunID)
	if err != nil || env.Status != "completed" || !strings.Contains(string(env.Result), `"name":"Kit"`) {
		t.Fatalf("createPet once the key is stored: %v %+v", err, env)
	}
}
