package mcpserver

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/google/go-cmp/cmp"
)

// remoteSession drives a Remote shim to srvURL over pipes: send writes a
// line, next reads the shim's next line; stop ends the session. The shim's
// Local counts its starts in local (a Remote shim must never start one).
func remoteSession(t *testing.T, srvURL, token string, local *atomic.Int32) (send func(string), next func() string, stop func()) {
	t.Helper()
	s := &Shim{
		Endpoint: Endpoint{URL: srvURL + "/mcp"},
		Token:    token,
		Remote:   true,
		Liveness: testenv.Timeout(20 * time.Second),
		Local: func(context.Context) (*Server, func(), error) {
			local.Add(1)
			return nil, nil, io.ErrUnexpectedEOF
		},
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- s.Serve(context.Background(), inR, outW) }()
	out := bufio.NewScanner(outR)
	send = func(line string) { _, _ = io.WriteString(inW, line+"\n") }
	next = func() string {
		t.Helper()
		got := make(chan string, 1)
		go func() {
			if out.Scan() {
				got <- out.Text()
			}
			close(got)
		}()
		select {
		case l := <-got:
			return l
		case <-time.After(testenv.Timeout(10 * time.Second)):
			t.Fatal("no answer from the shim")
			return ""
		}
	}
	stop = func() {
		inW.Close()
		go func() { _, _ = io.Copy(io.Discard, outR) }()
		<-done
	}
	return send, next, stop
}

const remoteInit = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// A Remote shim (serve --stdio --hub URL) sends no proof challenge, keeps
// its session with the hub through a refused token and a hub gone (each
// request answered with an error saying which, and whether it was sent),
// and never starts an engine of its own.
func TestRemoteShimAnswersErrorsAndNeverRunsLocally(t *testing.T) {
	f := &fakeHub{token: "t1"}
	srv := httptest.NewServer(f) // no proveHub: a remote hub is not asked for a proof
	var local atomic.Int32
	send, next, stop := remoteSession(t, srv.URL, "t1", &local)
	defer stop()
	send(remoteInit)
	if got := next(); !strings.Contains(got, `"serverInfo":{"name":"capabilities"`) {
		t.Fatalf("the answer to initialize: %s", got)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	call := func(id string) string {
		send(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"execute","arguments":{"code":"return 1"}}}`)
		return next()
	}
	// The fake hub forgets session s1 at the first call: the shim opens s2.
	if got, want := call("2"), `{"jsonrpc":"2.0","id":2,"result":{"content":[]}}`; got != want {
		t.Errorf("the first call: %s, want %s", got, want)
	}
	f.mu.Lock()
	f.token = "t2" // changed on the server
	f.mu.Unlock()
	got := call("3")
	for _, want := range []string{`"id":3`, "refuses this machine's bearer token (HTTP 401)", "was not sent to it", "capabilities hub http-token"} {
		if !strings.Contains(got, want) {
			t.Errorf("the call with a refused token:\n%s\nwant it to hold %q", got, want)
		}
	}
	f.mu.Lock()
	f.token = "t1"
	f.mu.Unlock()
	if got, want := call("4"), `{"jsonrpc":"2.0","id":4,"result":{"content":[]}}`; got != want {
		t.Errorf("the call once the token is taken again: %s, want %s (the session stays with the hub)", got, want)
	}
	srv.Close()
	// The first call after may find its kept connection cut (its outcome
	// then unknown); the next one finds nothing listening: not sent.
	for _, id := range []string{"5", "6"} {
		got = call(id)
		for _, want := range []string{`"id":` + id, "the capabilities hub at " + srv.URL + "/mcp could not be reached"} {
			if !strings.Contains(got, want) {
				t.Errorf("the call with the hub gone:\n%s\nwant it to hold %q", got, want)
			}
		}
	}
	if !strings.Contains(got, "nothing accepts connections at its address") || !strings.Contains(got, "was not sent to it") {
		t.Errorf("the second call with the hub gone:\n%s\nwant it to say the connection was refused and the call not sent", got)
	}
	if n := local.Load(); n != 0 {
		t.Errorf("the Remote shim started its own engine %d time(s)", n)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if d := cmp.Diff([]string{"s2 tools/call", "s2 tools/call"}, f.calls); d != "" {
		t.Errorf("calls the hub served (-want +got):\n%s", d)
	}
}

// Something else than a capabilities hub at the URL: the client's
// initialize is answered with an error, not with that server's answer.
func TestRemoteShimRelaysOnlyToAHub(t *testing.T) {
	srv := httptest.NewServer(&fakeHub{name: "mcp-servers/everything"})
	defer srv.Close()
	var local atomic.Int32
	send, next, stop := remoteSession(t, srv.URL, "t", &local)
	defer stop()
	send(remoteInit)
	got := next()
	if !strings.Contains(got, `"error"`) || !strings.Contains(got, `not a capabilities hub (it calls itself \"mcp-servers/everything\")`) {
		t.Errorf("the answer to initialize:\n%s\nwant an error naming the other server", got)
	}
	if n := local.Load(); n != 0 {
		t.Errorf("the Remote shim started its own engine %d time(s)", n)
	}
}

func TestCheckRemote(t *testing.T) {
	hub := httptest.NewServer(&fakeHub{token: "t"})
	defer hub.Close()
	other := httptest.NewServer(&fakeHub{name: "other"})
	defer other.Close()
	gone := httptest.NewServer(&fakeHub{})
	gone.Close()
	ctx := context.Background()
	if err := CheckRemote(ctx, hub.URL+"/mcp", "t"); err != nil {
		t.Errorf("CheckRemote(the hub, its token): %v", err)
	}
	if err := CheckRemote(ctx, hub.URL+"/mcp", "wrong"); !errors.Is(err, ErrRemoteToken) {
		t.Errorf("CheckRemote(the hub, a wrong token) = %v, want ErrRemoteToken", err)
	}
	if err := CheckRemote(ctx, other.URL+"/mcp", "t"); err == nil || !strings.Contains(err.Error(), `not a capabilities hub (it calls itself "other")`) {
		t.Errorf("CheckRemote(another server) = %v", err)
	}
	if err := CheckRemote(ctx, gone.URL+"/mcp", "t"); err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("CheckRemote(nothing there) = %v", err)
	}
}
