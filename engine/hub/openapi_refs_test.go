package hub_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/capabilities-sh/capabilities/engine/hub"
)

// TestOpenAPIRefsStayOnTheDocumentsOrigin: a document split over files of
// its origin is added (its schemas reach the tools); one that refers to
// another origin is refused at hub add with an error naming both origins,
// the other origin gets no request and nothing is stored.
func TestOpenAPIRefsStayOnTheDocumentsOrigin(t *testing.T) {
	var stolen atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		stolen.Add(1)
		w.Write([]byte(`{"type":"string"}`))
	}))
	defer other.Close()
	doc := func(ref string) string {
		return `{"openapi":"3.0.3","info":{"title":"Split","version":"1"},"servers":[{"url":"/v1"}],
"paths":{"/pets":{"post":{"operationId":"createPet","requestBody":{"content":{"application/json":{"schema":{"$ref":"` + ref + `"}}}},"responses":{"204":{"description":"ok"}}}}}}`
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/split/openapi.json":
			w.Write([]byte(doc("./schemas/pet.json")))
		case "/split/schemas/pet.json":
			w.Write([]byte(`{"type":"object","properties":{"nickname":{"type":"string"}}}`))
		case "/elsewhere/openapi.json":
			w.Write([]byte(doc(other.URL + "/pet.json")))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	h, _ := newOpenAPIHub(t)
	ctx := context.Background()

	_, err := h.Propose(ctx, hub.AddRequest{Document: srv.URL + "/elsewhere/openapi.json", Namespace: "elsewhere"})
	if err == nil || !strings.Contains(err.Error(), "refusing the reference to "+other.URL+"/pet.json") || !strings.Contains(err.Error(), "the hub reads only from "+srv.URL) {
		t.Errorf("a reference to another origin: %v", err)
	}
	if recs, err := h.Sources(ctx); err != nil || len(recs) != 0 {
		t.Errorf("after the refused add the hub holds %d sources (%v)", len(recs), err)
	}
	if stolen.Load() != 0 {
		t.Errorf("the other origin got %d requests", stolen.Load())
	}

	p := addReviewed(t, h, hub.AddRequest{Document: srv.URL + "/split/openapi.json", Namespace: "split"})[0]
	if len(p.Manifest.Tools) != 1 || !strings.Contains(string(p.Manifest.Tools[0].InputSchema), `"nickname"`) {
		t.Errorf("the split document's tool: %+v", p.Manifest.Tools)
	}
}
