package hub_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestOpenAPIAgainstPrism: an API served by a real, independent server
// (Prism mocking testdata/openapi/petstore-prism.yaml and validating every
// request against it) is added by its document; the source is listed, its
// tools have the effects of their methods and describe says how to call
// them; through execute a GET runs at once, a POST asks, a DELETE asks and
// is destructive, and each approved one is accepted by the server (with the
// API key it requires); an error status (a 404, asked of Prism) is a ToolError with
// the status and a hint; a multipart upload (its file part required by the
// document) and an octet-stream body are accepted by the server's
// validation.
func TestOpenAPIAgainstPrism(t *testing.T) {
	doc := filepath.Join(testenv.Root(t), "testdata", "openapi", "petstore-prism.yaml")
	base := testenv.Prism(t, doc)
	h, _ := newOpenAPIHub(t)
	ctx := context.Background()
	p := addReviewed(t, h, hub.AddRequest{Document: doc, Server: base, Namespace: "pets"})[0]
	if _, err := h.Auth(ctx, hub.AuthRequest{Namespace: "pets", Value: "test-key"}); err != nil {
		t.Fatal(err)
	}

	recs, err := h.Sources(ctx)
	if err != nil || len(recs) != 1 || recs[0].Source.Kind != model.KindOpenAPI || recs[0].Source.URL != base {
		t.Fatalf("sources: %v %+v", err, recs)
	}
	effects := map[string]model.Effect{}
	for _, tl := range p.Manifest.Tools {
		effects[tl.Address] = tl.Effect()
	}
	want := map[string]model.Effect{
		"pets.listPets": model.EffectRead, "pets.showPetById": model.EffectRead, "pets.createPets": model.EffectWrite,
		"pets.deletePet": model.EffectDestructive, "pets.uploadPhoto": model.EffectWrite, "pets.putRecord": model.EffectWrite,
	}
	if d := cmp.Diff(want, effects); d != "" {
		t.Errorf("tools (-want +got):\n%s", d)
	}
	decl, err := h.Describe(ctx, []string{"pets.uploadPhoto"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"uploadPhoto(", "petId", "caption", "contentBase64", "HTTP POST /pets/{petId}/photo"} {
		if !strings.Contains(decl, w) {
			t.Errorf("describe pets.uploadPhoto lacks %q:\n%s", w, decl)
		}
	}

	// A read runs at once.
	env, err := h.Execute(ctx, `return await pets.showPetById({petId: "7"})`)
	if err != nil || env.Status != "completed" || !strings.Contains(string(env.Result), `"name"`) {
		t.Fatalf("showPetById: %v %+v", err, env)
	}
	// An error status: a ToolError with the status and a hint.
	env, err = h.Execute(ctx, `try { await pets.showPetById({petId: "999", Prefer: "code=404"}) } catch (e) { return {code: e.code, status: e.status, hint: e.hint, message: e.message} }`)
	if err != nil || env.Status != "completed" {
		t.Fatalf("showPetById 999: %v %+v", err, env)
	}
	var te struct {
		Code, Hint, Message string
		Status              int
	}
	_ = json.Unmarshal(env.Result, &te)
	if te.Code != "tool_error" || te.Status != 404 || !strings.Contains(te.Hint, "check the path parameters") || !strings.Contains(te.Message, "HTTP 404 Not Found") || !strings.Contains(te.Message, "no such pet") {
		t.Errorf("a 404: %s", env.Result)
	}
	// A write asks, and once approved the server takes it with the key.
	env, err = h.Execute(ctx, `return await pets.createPets({body: {id: 3, name: "Kit"}})`)
	if err != nil || env.Status != "awaiting_approval" || len(env.Pending) != 1 || env.Pending[0].Address != "pets.createPets" {
		t.Fatalf("createPets: %v %+v", err, env)
	}
	approveOnce(t, h, env.RunID)
	// A delete asks too (destructive, above), and goes through approved.
	env, err = h.Execute(ctx, `return await pets.deletePet({petId: "3"})`)
	if err != nil || env.Status != "awaiting_approval" || len(env.Pending) != 1 || env.Pending[0].Address != "pets.deletePet" {
		t.Fatalf("deletePet: %v %+v", err, env)
	}
	approveOnce(t, h, env.RunID)

	// Bodies the server validates: multipart with a file part, raw bytes.
	res, err := h.Call(ctx, "pets.uploadPhoto", json.RawMessage(`{"petId": "3", "body": {"caption": "a cat", "photo": {"name": "kit.png", "contentBase64": "iVBORw0KGgo=", "type": "image/png"}}}`), "")
	if err != nil || res.IsError || !strings.Contains(text(res), `"caption":"a cat"`) {
		t.Errorf("uploadPhoto: %v %s", err, text(res))
	}
	res, err = h.Call(ctx, "pets.putRecord", json.RawMessage(`{"petId": "3", "body": {"contentBase64": "AAECAw=="}}`), "")
	if err != nil || res.IsError {
		t.Errorf("putRecord: %v %s", err, text(res))
	}
}

func text(res *mcp.CallToolResult) string {
	if res == nil {
		return ""
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}
