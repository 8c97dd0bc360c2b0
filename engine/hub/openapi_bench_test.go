package hub_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/openapi"
)

const benchDoc = `{"openapi":"3.0.3","info":{"title":"Bench","version":"1"},"servers":[{"url":"/api"}],
"components":{"securitySchemes":{"key":{"type":"apiKey","in":"header","name":"X-Key"}}},"security":[{"key":[]}],
"paths":{"/items/{id}":{"get":{"operationId":"getItem","parameters":[{"name":"id","in":"path","required":true,"schema":{"type":"integer"}},{"name":"fields","in":"query","schema":{"type":"array","items":{"type":"string"}}}],
"responses":{"200":{"description":"ok","content":{"application/json":{"schema":{"type":"object","properties":{"id":{"type":"integer"},"name":{"type":"string"}}}}}}}}}}}`

// BenchmarkOpenAPICall: the same GET to a local server answering a small
// JSON object, sent directly with net/http (direct), through the API made
// of the document (openapi: request built from the arguments, the answer
// read as a tool result), and through the hub's Call, the path of `hub
// call` (argument validation, the source and manifest read from the store,
// the credential, scrubbing on top).
func BenchmarkOpenAPICall(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/openapi.json" {
			io.WriteString(w, benchDoc)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":1,"name":"first item","tags":["a","b"]}`)
	}))
	defer srv.Close()
	b.Run("direct", func(b *testing.B) {
		c := &http.Client{}
		for b.Loop() {
			req, _ := http.NewRequestWithContext(context.Background(), "GET", srv.URL+"/api/items/1?fields=a&fields=b", nil)
			req.Header.Set("X-Key", "bench-key")
			resp, err := c.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var v map[string]any
			if err := json.Unmarshal(body, &v); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("openapi", func(b *testing.B) {
		api, err := openapi.Load(context.Background(), http.DefaultClient, srv.URL+"/openapi.json", "")
		if err != nil {
			b.Fatal(err)
		}
		args := json.RawMessage(`{"id": 1, "fields": ["a", "b"]}`)
		for b.Loop() {
			res, err := api.Call(context.Background(), "getItem", args, "bench-key")
			if err != nil || res.IsError {
				b.Fatal(fmt.Sprint(err, res))
			}
		}
	})
	b.Run("hub", func(b *testing.B) {
		h, _ := newOpenAPIHub(b)
		ctx := context.Background()
		p, err := h.Propose(ctx, hub.AddRequest{Document: srv.URL + "/openapi.json"})
		if err != nil {
			b.Fatal(err)
		}
		if err := h.Accept(ctx, p); err != nil {
			b.Fatal(err)
		}
		if _, err := h.Auth(ctx, hub.AuthRequest{Namespace: "bench", Value: "bench-key"}); err != nil {
			b.Fatal(err)
		}
		args := json.RawMessage(`{"id": 1, "fields": ["a", "b"]}`)
		for b.Loop() {
			res, err := h.Call(ctx, "bench.getItem", args, "")
			if err != nil || res.IsError {
				b.Fatal(fmt.Sprint(err, res))
			}
		}
	})
}
