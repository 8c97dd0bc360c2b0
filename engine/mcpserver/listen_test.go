package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/store"

	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/google/go-cmp/cmp"
)

const testToken = "0123456789abcdef0123456789abcdef0123456789abcdef"

// serveHTTP serves a hub with no sources on a loopback port until the test ends.
func serveHTTP(t *testing.T, lim HTTPLimits) string {
	t.Helper()
	h := hub.New(store.NewMem(), hub.Options{})
	t.Cleanup(func() { h.Close() })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- New(h, Options{}).ServeHTTP(ctx, ln, testToken, lim) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("ServeHTTP: %v", err)
		}
	})
	return ln.Addr().String()
}

// initialize sends one real MCP initialize over HTTP and returns the status.
func initialize(ctx context.Context, addr string) (int, error) {
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	req, err := http.NewRequestWithContext(ctx, "POST", "http://"+addr+"/mcp", strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

// TestHTTPSlowlorisDoesNotStarveARealClient: 1,000 connections that send a
// request's headers one byte at a time and never finish hold the endpoint
// no longer than the connection cap allows: each is closed for a newcomer
// once it has held its place for SlowAfter. A real client, queued behind
// them all, is still served.
func TestHTTPSlowlorisDoesNotStarveARealClient(t *testing.T) {
	addr := serveHTTP(t, HTTPLimits{MaxConns: 64, SlowAfter: 50 * time.Millisecond})
	var slow []net.Conn
	defer func() {
		for _, c := range slow {
			c.Close()
		}
	}()
	for i := 0; i < 1000; i++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("dialing slow connection %d: %v", i, err)
		}
		slow = append(slow, c)
		fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: %s\r\nX-Slow: ", addr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(60*time.Second))
	defer cancel()
	code, err := initialize(ctx, addr)
	if err != nil {
		t.Fatalf("a real client was not served beside 1,000 slow connections: %v", err)
	}
	if code != http.StatusOK {
		t.Fatalf("initialize: HTTP %d, want 200", code)
	}
	// The slow connections before it were closed to make room.
	// (A closed one reads EOF or a reset at once; an open one times out.)
	results := make(chan bool, len(slow))
	for _, c := range slow {
		go func() {
			_ = c.SetReadDeadline(time.Now().Add(3 * time.Second))
			_, err := c.Read(make([]byte, 1))
			var ne net.Error
			results <- err != nil && !(errors.As(err, &ne) && ne.Timeout())
		}()
	}
	closed := 0
	for range slow {
		if <-results {
			closed++
		}
	}
	if closed < 1000-64 {
		t.Errorf("%d of 1,000 slow connections were closed, want at least %d (the cap is 64)", closed, 1000-64)
	}
}

// TestHTTPFloodIsQueuedNotRefused: 1,000 clients that connect at once, each
// on its own connection, are all served, with 16 times fewer connections
// allowed open: the ones past the cap wait for their turn (in the kernel's
// accept queue), none is reset. Before, each past the cap was closed at
// once (ECONNRESET).
func TestHTTPFloodIsQueuedNotRefused(t *testing.T) {
	// The clients run in this process: under -race on a loaded machine one
	// may send its request seconds after it connected, which a SlowAfter of
	// a second would take for a slow client (TestHTTPSlowloris…).
	addr := serveHTTP(t, HTTPLimits{MaxConns: 64, SlowAfter: time.Minute})
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(2*time.Minute))
	defer cancel()
	const n = 1000
	errs := make(chan error, n)
	start := make(chan struct{})
	for range n {
		go func() {
			<-start
			code, err := initialize(ctx, addr)
			if err == nil && code != http.StatusOK {
				err = fmt.Errorf("HTTP %d", code)
			}
			errs <- err
		}()
	}
	close(start)
	failed := map[string]int{}
	for range n {
		if err := <-errs; err != nil {
			failed[err.Error()]++
		}
	}
	if len(failed) > 0 {
		t.Errorf("of %d clients at once, some failed: %v", n, failed)
	}
}

// TestHTTPBusyHubAnswers503: with one request reading its body at a time
// and one more waiting for its turn, a third is answered 503 with
// Retry-After at once, unserved, never reset; the one waiting is served
// once the turn is free.
func TestHTTPBusyHubAnswers503(t *testing.T) {
	entered, gate := make(chan struct{}, 2), make(chan struct{})
	served := make(chan string, 3)
	adm := newAdmission(1, 1, nil)
	srv := httptest.NewServer(adm.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		one := make([]byte, 1)
		_, _ = r.Body.Read(one) // the turn is held until the body is read whole
		entered <- struct{}{}
		<-gate
		rest, _ := io.ReadAll(r.Body)
		served <- string(one) + string(rest)
	})))
	defer srv.Close()
	post := func(body string) (*http.Response, error) {
		return http.Post(srv.URL, "text/plain", strings.NewReader(body))
	}
	type result struct {
		resp *http.Response
		err  error
	}
	first, second := make(chan result, 1), make(chan result, 1)
	go func() { r, err := post("first"); first <- result{r, err} }()
	<-entered
	go func() { r, err := post("second"); second <- result{r, err} }()
	for adm.waiting.Load() != 1 {
		time.Sleep(time.Millisecond)
	}
	resp, err := post("third")
	if err != nil {
		t.Fatalf("a request past the queue: %v (want 503, never a reset)", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "1" || !strings.Contains(string(b), "nothing of this one was served") {
		t.Errorf("a request past the queue: HTTP %d, Retry-After %q, %q; want 503, 1", resp.StatusCode, resp.Header.Get("Retry-After"), b)
	}
	close(gate)
	for _, ch := range []chan result{first, second} {
		r := <-ch
		if r.err != nil || r.resp.StatusCode != http.StatusOK {
			t.Errorf("a request given its turn: %v %v, want 200", r.resp, r.err)
			continue
		}
		r.resp.Body.Close()
	}
	close(served)
	var got []string
	for s := range served {
		got = append(got, s)
	}
	if d := cmp.Diff([]string{"first", "second"}, got); d != "" {
		t.Errorf("served (-want +got):\n%s", d)
	}
}

// TestHTTPSlowBodyIsCut: an authenticated request whose body trickles in is
// cut off once its read deadline passes, instead of holding its connection.
func TestHTTPSlowBodyIsCut(t *testing.T) {
	addr := serveHTTP(t, HTTPLimits{ReadTimeout: 500 * time.Millisecond})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 100000\r\n\r\n{", addr, testToken)
	// Keep trickling; the server must close the connection on its own.
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		_, _ = io.Copy(io.Discard, c)
	}()
	deadline := time.After(testenv.Timeout(60 * time.Second))
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-closed:
			return
		case <-deadline:
			t.Fatal("a slow body held its connection for 60 s; the read deadline is 500 ms")
		case <-tick.C:
			if _, err := c.Write([]byte(" ")); err != nil {
				return // the server closed it
			}
		}
	}
}
