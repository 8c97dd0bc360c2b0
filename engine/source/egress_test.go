package source_test

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/capabilities-sh/capabilities/engine/egress"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/source"
)

// TestEgressChecksOpenAPICalls: with an egress guard allowing only the
// document's address, an OpenAPI source whose document names a server
// elsewhere on this machine (127.0.0.2, routed here on Linux) is read, but
// its calls are refused before anything reaches that server.
func TestEgressChecksOpenAPICalls(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatalf("listening on 127.0.0.2 (loopback addresses other than 127.0.0.1 are routed to the machine on Linux): %v", err)
	}
	var hits atomic.Int64
	api := &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"pong":true}`)
	})}}
	api.Start()
	t.Cleanup(api.Close)
	doc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"openapi":"3.0.3","info":{"title":"Split","version":"1"},"servers":[{"url":"%s"}],
			"paths":{"/ping":{"get":{"operationId":"ping","responses":{"200":{"description":"ok"}}}}}}`, api.URL)
	}))
	t.Cleanup(doc.Close)
	src := model.Source{Namespace: "split", Kind: model.KindOpenAPI, Document: doc.URL + "/openapi.json", URL: api.URL}

	call := func(g *egress.Guard) (string, error) {
		s, err := source.Connect(t.Context(), src, source.Options{Egress: g})
		if err != nil {
			return "", err
		}
		defer s.Close()
		res, err := s.CallTool(t.Context(), "ping", nil)
		if err != nil {
			return "", err
		}
		return fmt.Sprint(res.StructuredContent), nil
	}
	_, err = call(egress.New(netip.MustParsePrefix("127.0.0.1/32")))
	want := fmt.Sprintf("refusing to connect to %s (loopback) for source split: a hosted hub reaches only public addresses; an operator may allow a range with --allow-egress 127.0.0.0/8", ln.Addr())
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("got %v, want an error saying\n%s", err, want)
	}
	if hits.Load() != 0 {
		t.Errorf("the refused server got %d requests", hits.Load())
	}
	got, err := call(egress.New(netip.MustParsePrefix("127.0.0.0/30")))
	if err != nil || got != "map[pong:true]" || hits.Load() != 1 {
		t.Errorf("allowed: got %q, %v (%d requests); want the pong", got, err, hits.Load())
	}
}
