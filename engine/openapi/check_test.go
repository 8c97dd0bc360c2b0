package openapi

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestCheckSeesTheRequest: a check set with WithCheck reads the request as
// built, after arguments are joined into it (two path parameters side by
// side, a header, the body), and a request it refuses is not sent.
func TestCheckSeesTheRequest(t *testing.T) {
	sent := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sent++
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"ok":true}`)
	}))
	defer srv.Close()
	doc := `{"openapi":"3.0.3","info":{"title":"t","version":"1"},"paths":{"/items/{a}{b}":{"post":{
  "operationId":"put","parameters":[
    {"name":"a","in":"path","required":true,"schema":{"type":"string"}},
    {"name":"b","in":"path","required":true,"schema":{"type":"string"}},
    {"name":"X-Note","in":"header","schema":{"type":"string"}}],
  "requestBody":{"content":{"application/json":{"schema":{"type":"object"}}}},
  "responses":{"200":{"description":"ok"}}}}}}`
	a, err := New(context.Background(), []byte(doc), "test.json", srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	refused := errors.New("refused")
	var seen []string
	ctx := WithCheck(context.Background(), func(parts ...string) error {
		seen = parts
		for _, p := range parts {
			if strings.Contains(p, "sk_live") {
				return refused
			}
		}
		return nil
	})
	for _, tc := range []struct {
		name, args string
	}{
		{"joined in the path", `{"a":"sk_l","b":"ive","X-Note":"n","body":{}}`},
		{"in a header", `{"a":"x","b":"y","X-Note":"sk_live","body":{}}`},
		{"in the body", `{"a":"x","b":"y","body":{"k":"sk_live"}}`},
	} {
		_, err := a.Call(ctx, "put", []byte(tc.args), "")
		if !errors.Is(err, refused) {
			t.Errorf("%s: Call = %v, want the check's error (it saw %q)", tc.name, err, seen)
		}
	}
	if sent != 0 {
		t.Errorf("%d refused requests were sent", sent)
	}
	if res, err := a.Call(ctx, "put", []byte(`{"a":"x","b":"y","body":{}}`), ""); err != nil || res.IsError {
		t.Fatalf("a clean call: %v %+v", err, res)
	}
	if sent != 1 {
		t.Errorf("the clean call was not sent (%d)", sent)
	}
}
