package mcpserver

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/capabilities-sh/capabilities/store"
	"github.com/google/go-cmp/cmp"
)

func TestPublicHostAndOrigin(t *testing.T) {
	pub, err := ParsePublicURL("https://Hub.Example.com")
	if err != nil {
		t.Fatal(err)
	}
	withPort, err := ParsePublicURL("http://hub.example.com:8080")
	if err != nil {
		t.Fatal(err)
	}
	type check struct{ host, origin bool }
	for _, tc := range []struct {
		name  string
		pub   string
		value string
		want  check
	}{
		{"the host", "https", "hub.example.com", check{true, false}},
		{"the host in other case", "https", "HUB.example.COM", check{true, false}},
		{"the host with the default port", "https", "hub.example.com:443", check{true, false}},
		{"the host on another port", "https", "hub.example.com:444", check{false, false}},
		{"a subdomain", "https", "evil.hub.example.com", check{false, false}},
		{"a suffix", "https", "hub.example.com.evil.example", check{false, false}},
		{"another host", "https", "evil.example", check{false, false}},
		{"the origin", "https", "https://hub.example.com", check{false, true}},
		{"the origin with the default port", "https", "https://hub.example.com:443", check{false, true}},
		{"the origin over http", "https", "http://hub.example.com", check{false, false}},
		{"another origin", "https", "https://evil.example", check{false, false}},
		{"the null origin", "https", "null", check{false, false}},
		{"a port named", "http", "hub.example.com:8080", check{true, false}},
		{"a port named, missing", "http", "hub.example.com", check{false, false}},
		{"a port named, origin", "http", "http://hub.example.com:8080", check{false, true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := pub
			if tc.pub == "http" {
				p = withPort
			}
			got := check{publicHost(p, tc.value), publicOrigin(p, tc.value)}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(check{})); diff != "" {
				t.Errorf("%q against %s (-want +got):\n%s", tc.value, p, diff)
			}
		})
	}
	if publicHost(nil, "hub.example.com") || publicOrigin(nil, "https://hub.example.com") {
		t.Error("with no public URL, a public host was accepted")
	}
}

func TestParsePublicURL(t *testing.T) {
	for _, tc := range []struct{ raw, wantErr string }{
		{"https://hub.example.com", ""},
		{"https://hub.example.com:8443/", ""},
		{"hub.example.com", "write an http(s) URL"},
		{"ftp://hub.example.com", "write an http(s) URL"},
		{"https://", "names no host"},
		{"https://user:pw@hub.example.com", "no user, query or fragment"},
		{"https://hub.example.com/?a=1", "no user, query or fragment"},
	} {
		_, err := ParsePublicURL(tc.raw)
		if (err == nil) != (tc.wantErr == "") || err != nil && !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("ParsePublicURL(%q) = %v, want %q", tc.raw, err, tc.wantErr)
		}
	}
}

// serveWith serves a hub with no sources on a loopback port as o says; the
// returned channel gives ServeHTTPWith's error.
func serveWith(t *testing.T, o Serving) (string, <-chan error) {
	t.Helper()
	h := hub.New(store.NewMem(), hub.Options{})
	t.Cleanup(func() { h.Close() })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- New(h, Options{}).ServeHTTPWith(ctx, ln, o) }()
	t.Cleanup(cancel)
	return ln.Addr().String(), done
}

func get(t *testing.T, url string, hdr map[string]string) (int, http.Header, string, error) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(req)
	if err != nil {
		return 0, nil, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b), nil
}

// The probes answer without the token and whatever the Host, say only ok
// or why not, and /readyz follows Ready.
func TestProbes(t *testing.T) {
	notReady := errors.New("the sandbox is starting")
	var ready error = notReady
	addr, _ := serveWith(t, Serving{Token: testToken, Ready: func(context.Context) error { return ready }})
	for _, tc := range []struct {
		name, path string
		hdr        map[string]string
		code       int
		body       string
	}{
		{"healthz", "/healthz", nil, 200, "ok\n"},
		{"healthz by a foreign Host", "/healthz", map[string]string{"Host": "10.0.0.5:4790"}, 200, "ok\n"},
		{"readyz, not ready", "/readyz", nil, 503, "not ready: the sandbox is starting\n"},
		{"the MCP endpoint still wants the token", "/mcp", nil, 401, "missing bearer token: send Authorization: Bearer <token>, the token `capabilities hub http-token` prints\n"},
	} {
		code, _, body, err := get(t, "http://"+addr+tc.path, tc.hdr)
		if err != nil || code != tc.code || body != tc.body {
			t.Errorf("%s: %d %q %v, want %d %q", tc.name, code, body, err, tc.code, tc.body)
		}
	}
	ready = nil
	if code, _, body, err := get(t, "http://"+addr+"/readyz", nil); err != nil || code != 200 || body != "ok\n" {
		t.Errorf("readyz, ready: %d %q %v", code, body, err)
	}
}

// A drain refuses new requests (503 with Retry-After) while one under way
// finishes; /readyz says draining; then the listener is closed and
// ServeHTTPWith returns nil.
func TestDrainFinishesRequestsUnderWay(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{})
	d := &drainer{idle: make(chan struct{})}
	slow := d.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-release
		_, _ = io.WriteString(w, "finished")
	}))
	hs := &http.Server{Handler: slow}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = hs.Serve(ln) }()
	defer hs.Close()
	url := "http://" + ln.Addr().String()
	answered := make(chan string, 1)
	go func() {
		resp, err := http.Post(url+"/mcp", "application/json", strings.NewReader("{}"))
		if err != nil {
			answered <- err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		answered <- string(b)
	}()
	<-started
	if n := d.begin(); n != 1 {
		t.Errorf("under way at the drain: %d, want 1", n)
	}
	resp, err := http.Post(url+"/mcp", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(b), "shutting down") {
		t.Errorf("a request during the drain: %d %q Retry-After %q", resp.StatusCode, b, resp.Header.Get("Retry-After"))
	}
	if code, _, body, _ := get(t, url+"/readyz", nil); code != 503 || !strings.Contains(body, "draining") {
		t.Errorf("readyz during the drain: %d %q", code, body)
	}
	select {
	case <-d.idle:
		t.Fatal("idle before the request under way finished")
	default:
	}
	close(release)
	if got := <-answered; got != "finished" {
		t.Errorf("the request under way got %q", got)
	}
	select {
	case <-d.idle:
	case <-time.After(testenv.Timeout(10 * time.Second)):
		t.Fatal("not idle once the request under way finished")
	}
}

func TestDrainClosesTheListenerAndReturns(t *testing.T) {
	drain := make(chan struct{})
	addr, done := serveWith(t, Serving{Token: testToken, Drain: drain, DrainTimeout: testenv.Timeout(10 * time.Second)})
	if code, _, _, err := get(t, "http://"+addr+"/healthz", nil); err != nil || code != 200 {
		t.Fatalf("healthz: %d %v", code, err)
	}
	close(drain)
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("ServeHTTPWith after a drain: %v", err)
		}
	case <-time.After(testenv.Timeout(10 * time.Second)):
		t.Fatal("ServeHTTPWith did not return after a drain with nothing under way")
	}
	if _, err := net.Dial("tcp", addr); err == nil {
		t.Error("the listener still accepts after the drain")
	}
}

// The public URL's Host is accepted at the MCP endpoint, a foreign one
// still refused.
func TestPublicURLAtTheEndpoint(t *testing.T) {
	pub, err := ParsePublicURL("https://hub.example.com")
	if err != nil {
		t.Fatal(err)
	}
	addr, _ := serveWith(t, Serving{Token: testToken, PublicURL: pub})
	auth := "Bearer " + testToken
	for _, tc := range []struct {
		name string
		hdr  map[string]string
		code int
		want string
	}{
		{"public Host", map[string]string{"Host": "hub.example.com", "Authorization": auth}, 200, `"pid"`},
		{"public Host and Origin", map[string]string{"Host": "hub.example.com", "Origin": "https://hub.example.com", "Authorization": auth}, 200, `"pid"`},
		{"foreign Host", map[string]string{"Host": "evil.example", "Authorization": auth}, 403, `Host "evil.example" is not a loopback address nor the public URL's host hub.example.com`},
		{"foreign Origin", map[string]string{"Host": "hub.example.com", "Origin": "https://evil.example", "Authorization": auth}, 403, `Origin "https://evil.example" is not a loopback origin nor the public URL's https://hub.example.com`},
		{"public Host, no token", map[string]string{"Host": "hub.example.com"}, 401, "missing bearer token"},
	} {
		code, _, body, err := get(t, "http://"+addr+AlivePath, tc.hdr)
		if err != nil || code != tc.code || !strings.Contains(body, tc.want) {
			t.Errorf("%s: %d %q %v, want %d %q", tc.name, code, body, err, tc.code, tc.want)
		}
	}
}

// A request still under way when the drain's time is up is cut, and the
// drain returns.
func TestDrainTimesOut(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	started := make(chan struct{})
	d := &drainer{idle: make(chan struct{})}
	hs := &http.Server{Handler: d.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = hs.Serve(ln) }()
	cut := make(chan error, 1)
	go func() {
		resp, err := http.Post("http://"+ln.Addr().String()+"/mcp", "application/json", strings.NewReader("{}"))
		if err == nil {
			resp.Body.Close()
		}
		cut <- err
	}()
	<-started
	timeout := 200 * time.Millisecond
	start := time.Now()
	drained := make(chan struct{})
	go func() {
		(&Server{opts: Options{}}).drain(context.Background(), hs, d, timeout)
		close(drained)
	}()
	select {
	case <-drained:
	case <-time.After(testenv.Timeout(10 * time.Second)):
		t.Fatal("the drain did not end after its timeout")
	}
	if took := time.Since(start); took < timeout {
		t.Errorf("the drain ended after %v, before its timeout %v with a request under way", took, timeout)
	}
	if err := <-cut; err == nil {
		t.Error("the request under way past the timeout was answered, not cut")
	}
}

// TestDrainDeliversTheLastAnswer: the drain closes the connections left
// once every request under way has returned; an answer its handler wrote
// but net/http had not flushed yet still reaches the client (it got EOF
// when the connections were closed the instant the handler returned).
func TestDrainDeliversTheLastAnswer(t *testing.T) {
	for i := range 5 {
		release := make(chan struct{})
		started := make(chan struct{})
		d := &drainer{idle: make(chan struct{})}
		counted := d.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			close(started)
			<-release
		}))
		// The answer goes out after the drainer counted the request out,
		// as net/http flushes a handler's answer after it returns: here
		// late enough that closing the connections at once cuts it.
		hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			counted.ServeHTTP(w, r)
			time.Sleep(20 * time.Millisecond)
			_, _ = io.WriteString(w, strings.Repeat("finished ", 200))
		})}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		go func() { _ = hs.Serve(ln) }()
		answered := make(chan string, 1)
		go func() {
			c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
			resp, err := c.Post("http://"+ln.Addr().String()+"/mcp", "application/json", strings.NewReader("{}"))
			if err != nil {
				answered <- err.Error()
				return
			}
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				answered <- err.Error()
				return
			}
			answered <- string(b)
		}()
		<-started
		drained := make(chan struct{})
		go func() {
			defer close(drained)
			(&Server{}).drain(context.Background(), hs, d, testenv.Timeout(10*time.Second))
		}()
		for d.inFlight() != 1 || !d.isDraining() {
			time.Sleep(time.Millisecond)
		}
		close(release)
		if got := <-answered; got != strings.Repeat("finished ", 200) {
			t.Fatalf("round %d: the request under way at the drain got %q", i, got)
		}
		<-drained
	}
}
