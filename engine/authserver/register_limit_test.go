package authserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/capabilities-sh/capabilities/engine/authserver"
)

// countingStore counts the clients written.
type countingStore struct {
	authserver.Store
	clients atomic.Int64
}

func (s *countingStore) CreateClient(ctx context.Context, c authserver.Client) error {
	s.clients.Add(1)
	return s.Store.CreateClient(ctx, c)
}

// TestRegisterRateLimit sends real registrations to a real server (the
// test's requests come from 127.0.0.1, a trusted proxy by default, so
// X-Forwarded-For names the client, as nginx would) on a clock the test
// moves, and checks each answer and what reached the store.
func TestRegisterRateLimit(t *testing.T) {
	type step struct {
		xff     string        // X-Forwarded-For, "" for none
		advance time.Duration // the clock moves first
		status  int
		retry   string // Retry-After
		desc    string // in error_description
	}
	ok := step{status: http.StatusCreated}
	from := func(xff string, s step) step { s.xff = xff; return s }
	burst := func(xff string, n int) []step {
		var s []step
		for range n {
			s = append(s, from(xff, ok))
		}
		return s
	}
	tests := []struct {
		name   string
		config func(*authserver.Config)
		steps  []step
	}{
		{"the defaults, behind a proxy on loopback", nil, concat(
			burst("198.51.100.7", 20),
			[]step{
				{xff: "198.51.100.7", status: 429, retry: "6", desc: "too many client registrations from your address (a burst of 20, then 1 every 6s); retry in 6 s"},
				// What the client sent before the proxy's last hop is its
				// own claim: it changes nothing.
				{xff: "203.0.113.1, 198.51.100.7", status: 429, retry: "6", desc: "retry in 6 s"},
				{xff: "198.51.100.8", status: http.StatusCreated},
				{xff: "198.51.100.7", advance: 2 * time.Second, status: 429, retry: "4", desc: "retry in 4 s"},
				{xff: "198.51.100.7", advance: 4 * time.Second, status: http.StatusCreated},
				{xff: "198.51.100.7", status: 429, retry: "6"},
			})},
		{"no trusted proxy: a forged X-Forwarded-For does not escape the limit", func(c *authserver.Config) {
			c.TrustedProxies = []netip.Prefix{}
		}, concat(
			// Each request claims another address; all are 127.0.0.1.
			func() []step {
				var s []step
				for i := range 20 {
					s = append(s, from(fmt.Sprintf("198.51.100.%d", i), ok))
				}
				return s
			}(),
			[]step{
				{xff: "198.51.100.200", status: 429, retry: "6", desc: "from your address"},
				{status: 429, retry: "6", desc: "from your address"},
			})},
		{"the overall limit", func(c *authserver.Config) {
			c.RegisterLimit = authserver.RegisterLimit{Overall: 0.5, OverallBurst: 3}
		}, []step{
			from("192.0.2.1", ok), from("192.0.2.2", ok), from("192.0.2.3", ok),
			{xff: "192.0.2.4", status: 429, retry: "2", desc: "too many client registrations on this server right now; retry in 2 s"},
			{xff: "192.0.2.4", advance: 1500 * time.Millisecond, status: 429, retry: "1", desc: "retry in 1 s"},
			{xff: "192.0.2.4", advance: 500 * time.Millisecond, status: http.StatusCreated},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var clock atomic.Int64
			t0 := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
			store := &countingStore{Store: authserver.NewMemory()}
			e := newEnv(t, func(c *authserver.Config) {
				c.Now = func() time.Time { return t0.Add(time.Duration(clock.Load())) }
				c.Store = store
				if tt.config != nil {
					tt.config(c)
				}
			})
			var got, want []string
			created := 0
			for i, s := range tt.steps {
				clock.Add(int64(s.advance))
				req, _ := http.NewRequest("POST", e.srv.URL+"/register", strings.NewReader(`{"redirect_uris":["`+redirect+`"],"token_endpoint_auth_method":"none"}`))
				req.Header.Set("Content-Type", "application/json")
				if s.xff != "" {
					req.Header.Set("X-Forwarded-For", s.xff)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				g := fmt.Sprintf("%d %q: %d", i, s.xff, resp.StatusCode)
				w := fmt.Sprintf("%d %q: %d", i, s.xff, s.status)
				if resp.StatusCode == http.StatusCreated {
					created++
				} else {
					var oe struct {
						Error       string `json:"error"`
						Description string `json:"error_description"`
					}
					if err := json.Unmarshal(body, &oe); err != nil {
						t.Errorf("step %d: the %d's body is no JSON error: %v\n%s", i, resp.StatusCode, err, body)
					}
					if !strings.Contains(oe.Description, s.desc) {
						t.Errorf("step %d: error_description %q; want it to contain %q", i, oe.Description, s.desc)
					}
					if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
						t.Errorf("step %d: Content-Type %q; want application/json", i, ct)
					}
					g += fmt.Sprintf(" %s Retry-After %q (exposed: %q)", oe.Error, resp.Header.Get("Retry-After"), resp.Header.Get("Access-Control-Expose-Headers"))
					w += fmt.Sprintf(" temporarily_unavailable Retry-After %q (exposed: \"Retry-After\")", s.retry)
				}
				got, want = append(got, g), append(want, w)
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("answers (-want +got):\n%s", d)
			}
			if n := store.clients.Load(); n != int64(created) {
				t.Errorf("the store has %d clients; want %d, one per 201 (nothing for a 429)", n, created)
			}
		})
	}
}

func concat[T any](s ...[]T) []T {
	var out []T
	for _, x := range s {
		out = append(out, x...)
	}
	return out
}
