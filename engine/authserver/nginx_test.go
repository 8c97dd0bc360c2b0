package authserver_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/authserver"
	"github.com/capabilities-sh/capabilities/internal/testenv"
)

// TestRegisterRateLimitBehindNginx puts the authorization server behind a
// real nginx running deploy/hosted/nginx.conf (with a test CA's
// certificate; only its ports and file names changed), with the default
// trusted proxies (loopback). Clients connect to nginx from distinct
// loopback addresses (127.0.0.2, 127.0.0.3), while every request reaches
// the server from nginx at 127.0.0.1: the limit falls on the address nginx
// saw, X-Forwarded-For's last hop, and not on nginx (one client's burst
// spent, another still registers) nor on what the client put in the
// header (a new forged address each time does not escape).
func TestRegisterRateLimitBehindNginx(t *testing.T) {
	conf, err := os.ReadFile(filepath.Join("..", "..", "deploy", "hosted", "nginx.conf"))
	if err != nil {
		t.Fatal(err)
	}
	store := &countingStore{Store: authserver.NewMemory()}
	t0 := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	as, err := authserver.New(authserver.Config{
		Issuer: "https://hub.example.com",
		Scopes: []string{"mcp"},
		Store:  store,
		Person: func(*http.Request) (string, bool) { return "", false },
		Logger: slog.New(slog.DiscardHandler),
		Now:    func() time.Time { return t0 }, // no refill during the test
	})
	if err != nil {
		t.Fatal(err)
	}
	backend := httptest.NewServer(as.Handler())
	t.Cleanup(backend.Close)
	hub := strings.TrimPrefix(backend.URL, "http://")

	ca := testenv.ProcessCA(t)
	certs := ca.Issue(t, "hub.example.com").Dir
	n := testenv.StartNginx(t, func(port int) string {
		s := string(conf)
		s = regexp.MustCompile(`(?s)server \{\s*listen 80;.*?\n\}\n`).ReplaceAllString(s, "")
		for _, r := range []struct{ old, new string }{
			{"    listen 443 ssl http2;\n", "    listen 127.0.0.1:" + strconv.Itoa(port) + " ssl http2;\n"},
			{"    listen [::]:443 ssl http2;\n", ""},
			{"/etc/ssl/hub.example.com.crt", filepath.Join(certs, "hub.crt")},
			{"/etc/ssl/hub.example.com.key", filepath.Join(certs, "hub.key")},
			{"127.0.0.1:8790", hub},
			{"127.0.0.1:8791", hub},
		} {
			if !strings.Contains(s, r.old) {
				t.Fatalf("deploy/hosted/nginx.conf has no %q, which this test changes", r.old)
			}
			s = strings.ReplaceAll(s, r.old, r.new)
		}
		return s
	})
	nginx := net.JoinHostPort("127.0.0.1", strconv.Itoa(n.Port))
	// from is a client connecting to nginx from the loopback address src.
	from := func(src string) *http.Client {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
		return &http.Client{Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: ca.Pool()},
			DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
				return d.DialContext(ctx, network, nginx)
			},
		}}
	}
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(30*time.Second))
	defer cancel()
	register := func(c *http.Client, forged string) (int, string, string) {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, "POST", "https://hub.example.com/register",
			strings.NewReader(`{"redirect_uris":["`+redirect+`"],"token_endpoint_auth_method":"none"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Forwarded-For", forged)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("POST /register through nginx: %v\n%s", err, n.Logs())
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("Retry-After"), string(b)
	}

	a := from("127.0.0.2")
	for i := range authserver.DefaultRegisterLimit.PerAddressBurst {
		if code, _, body := register(a, fmt.Sprintf("198.51.100.%d", i)); code != http.StatusCreated {
			t.Fatalf("registration %d from 127.0.0.2, within the burst: %d %s\n%s", i+1, code, body, n.AccessLog())
		}
	}
	code, retry, body := register(a, "198.51.100.250")
	if code != http.StatusTooManyRequests || retry != "6" || !strings.Contains(body, "from your address") {
		t.Errorf("registration past the burst from 127.0.0.2 (claiming another address): %d, Retry-After %q, %s; want 429, 6, the address's limit", code, retry, body)
	}
	if code, _, body := register(from("127.0.0.3"), "198.51.100.1"); code != http.StatusCreated {
		t.Errorf("registration from 127.0.0.3 after 127.0.0.2 spent its burst: %d %s; want 201 (nginx is not the client)", code, body)
	}
	if got, want := store.clients.Load(), int64(authserver.DefaultRegisterLimit.PerAddressBurst+1); got != want {
		t.Errorf("the store has %d clients; want %d", got, want)
	}
}
