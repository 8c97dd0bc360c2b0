package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/google/go-cmp/cmp"
)

// fakeHub is a stateful streamable-HTTP MCP endpoint that forgets its first
// session before the first tools/call, as serve --http does with a session
// unused for SessionIdle (or a hub restarted at the same address).
type fakeHub struct {
	reinit int    // HTTP status of every initialize after the first (0: 200)
	name   string // the serverInfo name it answers with ("": capabilities)
	token  string // the bearer token it takes ("": any)

	mu    sync.Mutex
	inits int
	calls []string // "session method" of each tools/call it served
}

func (f *fakeHub) currentToken() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.token
}

func (f *fakeHub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	var m shimMsg
	b, _ := io.ReadAll(r.Body)
	_ = json.Unmarshal(b, &m)
	sid := r.Header.Get("Mcp-Session-Id")
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.token != "" && r.Header.Get("Authorization") != "Bearer "+f.token {
		http.Error(w, "wrong bearer token", http.StatusUnauthorized)
		return
	}
	switch {
	case m.Method == "initialize":
		f.inits++
		if f.inits > 1 && f.reinit != 0 {
			http.Error(w, "wrong bearer token", f.reinit)
			return
		}
		name := f.name
		if name == "" {
			name = "capabilities"
		}
		w.Header().Set("Mcp-Session-Id", "s"+string(rune('0'+f.inits)))
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(m.ID)+`,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"`+name+`","version":"0"}}}`)
	case sid == "s1" && m.Method == "tools/call":
		http.Error(w, "session not found", http.StatusNotFound)
	case m.ID == nil:
		w.WriteHeader(http.StatusAccepted)
	default:
		f.calls = append(f.calls, sid+" "+m.Method)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":"+string(m.ID)+",\"result\":{\"content\":[]}}\n\n")
	}
}

// A relayed session the hub no longer knows (closed after an hour unused)
// is opened again with the client's initialize, and the request it refused
// is sent again: the agent sees its answer, and the shim goes on relaying
// instead of starting an engine of its own. When the hub refuses the new
// session, the request is answered saying it was not sent (the hub's 404
// served nothing of it), and the own engine takes over.
func TestShimRenewsASessionTheHubClosed(t *testing.T) {
	for _, tc := range []struct {
		name      string
		reinit    int
		wantReply string
		wantCalls []string
		wantLocal bool
	}{
		{"opened again", 0, `{"jsonrpc":"2.0","id":2,"result":{"content":[]}}`, []string{"s2 tools/call"}, false},
		{"refused", http.StatusUnauthorized, "was not sent to it, so nothing of it happened", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeHub{reinit: tc.reinit}
			srv := httptest.NewServer(proveHub(func() string { return "t" }, f))
			defer srv.Close()
			var mu sync.Mutex
			local := false
			s := &Shim{
				Endpoint: Endpoint{URL: srv.URL + "/mcp", PID: 1},
				Token:    "t",
				Local: func(context.Context) (*Server, func(), error) {
					mu.Lock()
					local = true
					mu.Unlock()
					return nil, nil, io.ErrUnexpectedEOF
				},
			}
			inR, inW := io.Pipe()
			outR, outW := io.Pipe()
			done := make(chan error, 1)
			go func() { done <- s.Serve(context.Background(), inR, outW) }()
			out := bufio.NewScanner(outR)
			send := func(line string) { _, _ = io.WriteString(inW, line+"\n") }
			next := func() string {
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
			send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
			next()
			send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"execute","arguments":{"code":"return 1"}}}`)
			if got := next(); !strings.Contains(got, tc.wantReply) {
				t.Errorf("the answer to the request the hub refused:\n%s\nwant it to hold %q", got, tc.wantReply)
			}
			inW.Close()
			go func() { _, _ = io.Copy(io.Discard, outR) }()
			<-done
			f.mu.Lock()
			defer f.mu.Unlock()
			if d := cmp.Diff(tc.wantCalls, f.calls); d != "" {
				t.Errorf("calls the hub served (-want +got):\n%s", d)
			}
			mu.Lock()
			defer mu.Unlock()
			if local != tc.wantLocal {
				t.Errorf("the shim started its own engine: %v, want %v", local, tc.wantLocal)
			}
		})
	}
}

// An announcement whose pid is alive and whose port answers MCP, but not as
// a hub (a hub killed -9, its pid and port since taken by other processes
// of this user, such as another MCP server): the client is not handed to
// that server; the session runs on this process's own engine from its
// initialize.
func TestShimRelaysOnlyToAHub(t *testing.T) {
	f := &fakeHub{name: "mcp-servers/everything"}
	srv := httptest.NewServer(proveHub(func() string { return "t" }, f))
	defer srv.Close()
	localStarted := make(chan struct{})
	s := &Shim{
		Endpoint: Endpoint{URL: srv.URL + "/mcp", PID: 1},
		Token:    "t",
		Local: func(context.Context) (*Server, func(), error) {
			close(localStarted)
			return nil, nil, io.ErrUnexpectedEOF
		},
	}
	inR, inW := io.Pipe()
	var out strings.Builder
	var mu sync.Mutex
	done := make(chan error, 1)
	go func() {
		done <- s.Serve(context.Background(), inR, writerFunc(func(p []byte) (int, error) {
			mu.Lock()
			defer mu.Unlock()
			return out.Write(p)
		}))
	}()
	_, _ = io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`+"\n")
	select {
	case <-localStarted:
	case <-time.After(testenv.Timeout(10 * time.Second)):
		t.Fatal("the shim did not turn to its own engine")
	}
	inW.Close()
	<-done
	mu.Lock()
	defer mu.Unlock()
	if strings.Contains(out.String(), `"result"`) {
		t.Errorf("the other server's answer reached the client:\n%s", out.String())
	}
	if !strings.Contains(out.String(), `not a capabilities hub (it calls itself \"mcp-servers/everything\")`) {
		t.Errorf("the client's answer does not say why:\n%s", out.String())
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// A hub restarted with a new token (hub/http-token removed, or rotated)
// refuses the session's token with 401 before serving anything: the shim
// reads the token again and goes on with the new hub. When the token read
// again is the refused one, the request is answered saying it was not
// sent, and the own engine takes over; before, every later request failed
// with the 401.
func TestShimReadsARotatedTokenAgain(t *testing.T) {
	for _, tc := range []struct {
		name      string
		rotate    bool // the token file holds the new token
		wantReply string
		wantLocal bool
	}{
		{"rotated", true, `{"jsonrpc":"2.0","id":2,"result":{"content":[]}}`, false},
		{"refused", false, "was not sent to it, so nothing of it happened", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeHub{token: "old"}
			srv := httptest.NewServer(proveHub(f.currentToken, f))
			defer srv.Close()
			tokenPath := filepath.Join(t.TempDir(), TokenFile)
			if err := os.WriteFile(tokenPath, []byte("old\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			local := false
			s := &Shim{
				Endpoint:  Endpoint{URL: srv.URL + "/mcp", PID: 1},
				Token:     "old",
				TokenPath: tokenPath,
				Local: func(context.Context) (*Server, func(), error) {
					mu.Lock()
					local = true
					mu.Unlock()
					return nil, nil, io.ErrUnexpectedEOF
				},
			}
			inR, inW := io.Pipe()
			outR, outW := io.Pipe()
			done := make(chan error, 1)
			go func() { done <- s.Serve(context.Background(), inR, outW) }()
			lines := make(chan string, 16)
			go func() {
				sc := bufio.NewScanner(outR)
				for sc.Scan() {
					lines <- sc.Text()
				}
				close(lines)
			}()
			next := func() string {
				t.Helper()
				select {
				case l := <-lines:
					return l
				case <-time.After(testenv.Timeout(10 * time.Second)):
					t.Fatal("no answer from the shim")
					return ""
				}
			}
			send := func(line string) { _, _ = io.WriteString(inW, line+"\n") }
			send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
			next()
			send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			// The hub restarts with another token: the session is gone too.
			// A hub writes its token before it serves (hub serve --http), so
			// the file changes first: a message in flight (the notification
			// above) refused meanwhile finds the new token there.
			if tc.rotate {
				if err := os.WriteFile(tokenPath, []byte("new\n"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			f.mu.Lock()
			f.token, f.inits = "new", 1
			f.mu.Unlock()
			send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"execute","arguments":{"code":"return 1"}}}`)
			if got := next(); !strings.Contains(got, tc.wantReply) {
				t.Errorf("the answer after the token changed:\n%s\nwant it to hold %q", got, tc.wantReply)
			}
			inW.Close()
			go func() {
				for range lines {
				}
			}()
			<-done
			mu.Lock()
			defer mu.Unlock()
			if local != tc.wantLocal {
				t.Errorf("the shim started its own engine: %v, want %v", local, tc.wantLocal)
			}
		})
	}
}
