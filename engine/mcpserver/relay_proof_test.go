package mcpserver

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// seen records every request a listener got, to tell whether the token
// reached it.
type seen struct {
	mu   sync.Mutex
	reqs []string
}

func (s *seen) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := httputil.DumpRequest(r, true)
		s.mu.Lock()
		s.reqs = append(s.reqs, string(b))
		s.mu.Unlock()
		next.ServeHTTP(w, r)
	})
}

func (s *seen) all() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.reqs, "\n")
}

// FindHub gives the token only to a listener that proves it holds it. The
// announcement is written by an attacker of the same user: its own port,
// this (live) process's pid. What listens there answers the challenge with
// another key, passes it on to the real hub (whose proof is bound to the
// hub's own address), or is no HTTP server at all; none is sent the token.
// The real hub, announced, proves itself.
func TestFindHubSendsTheTokenOnlyToTheHub(t *testing.T) {
	const token = "the-real-token-0123456789abcdef0123456789abcdef"
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })
	hub := httptest.NewServer(proveHub(func() string { return token }, ok))
	defer hub.Close()
	hubURL, _ := url.Parse(hub.URL)
	relay := httputil.NewSingleHostReverseProxy(hubURL)
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(io.Discard, c) }() // reads, never answers
		}
	}()
	for _, tc := range []struct {
		name    string
		handler http.Handler // nil: the silent listener
		real    bool
		why     string
	}{
		{"another key", proveHub(func() string { return "the-attackers-own-key" }, ok), false, "does not prove it is this hub"},
		{"passes the challenge to the hub", relay, false, "does not prove it is this hub"},
		{"not HTTP", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { panic(http.ErrAbortHandler) }), false, "does not prove it is this hub"},
		{"answers 404", http.NotFoundHandler(), false, "does not prove it is this hub"},
		{"says nothing", nil, false, "waiting for the proof"},
		{"the hub", nil, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var rec seen
			addr := silent.Addr().String()
			switch {
			case tc.real:
				addr = hubURL.Host
			case tc.handler != nil:
				srv := httptest.NewServer(rec.wrap(tc.handler))
				defer srv.Close()
				addr = strings.TrimPrefix(srv.URL, "http://")
			}
			dir := t.TempDir()
			ep, _ := json.Marshal(Endpoint{URL: "http://" + addr + "/mcp", PID: os.Getpid(), StartedAt: time.Now()})
			if err := os.WriteFile(filepath.Join(dir, endpointFile), ep, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, TokenFile), []byte(token+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			_, got, found, why := FindHub(ctx, dir)
			if tc.real {
				if !found || got != token {
					t.Errorf("FindHub of the real hub: found %v, %q", found, why)
				}
				return
			}
			if found || got != "" || !strings.Contains(why, tc.why) {
				t.Errorf("FindHub: found %v, token %q, why %q; want no hub (%q)", found, got, why, tc.why)
			}
			if strings.Contains(rec.all(), token) || strings.Contains(rec.all(), "Authorization") {
				t.Errorf("the token reached the listener:\n%s", rec.all())
			}
		})
	}
}
