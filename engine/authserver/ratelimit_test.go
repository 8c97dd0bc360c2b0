package authserver

import (
	"fmt"
	"log/slog"
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/time/rate"
)

var t0 = time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)

// step is a request from addr at t0+at, and what take should answer: "ok",
// or "address" or "overall" (the bucket that refused) and the retry.
type step struct {
	addr string
	at   time.Duration
	want string
}

func TestRegisterLimiterTake(t *testing.T) {
	small := RegisterLimit{PerAddress: rate.Every(6 * time.Second), PerAddressBurst: 2, Overall: 1, OverallBurst: 3, MaxAddresses: 100}
	tests := []struct {
		name  string
		limit RegisterLimit
		steps []step
	}{
		{"burst then refused, refilled after 6s", small, []step{
			{"192.0.2.1", 0, "ok"},
			{"192.0.2.1", 0, "ok"},
			{"192.0.2.1", 0, "address 6s"},
			{"192.0.2.1", 2 * time.Second, "address 4s"},
			{"192.0.2.1", 6 * time.Second, "ok"},
			{"192.0.2.1", 6 * time.Second, "address 6s"},
		}},
		{"another address has its own bucket", small, []step{
			{"192.0.2.1", 0, "ok"},
			{"192.0.2.1", 0, "ok"},
			{"192.0.2.1", 0, "address 6s"},
			{"192.0.2.2", 0, "ok"},
		}},
		{"the overall bucket refuses a flood from many addresses", small, []step{
			{"192.0.2.1", 0, "ok"},
			{"192.0.2.2", 0, "ok"},
			{"192.0.2.3", 0, "ok"},
			{"192.0.2.4", 0, "overall 1s"},
			{"192.0.2.4", 500 * time.Millisecond, "overall 500ms"},
			{"192.0.2.4", time.Second, "ok"},
		}},
		{"a request the overall bucket refuses costs its address nothing", small, []step{
			{"192.0.2.1", 0, "ok"},
			{"192.0.2.2", 0, "ok"},
			{"192.0.2.3", 0, "ok"},
			{"192.0.2.1", 0, "overall 1s"},
			{"192.0.2.1", time.Second, "ok"},
			{"192.0.2.1", 3 * time.Second, "address 3s"}, // 1 token used at 0s and 1 at 1s; 2/6 refilled
		}},
		{"an IPv6 /64 is one address", small, []step{
			{"2001:db8:1:1::1", 0, "ok"},
			{"2001:db8:1:1::2", 0, "ok"},
			{"2001:db8:1:1:ffff::3", 0, "address 6s"},
			{"2001:db8:1:2::1", 0, "ok"},
		}},
		{"an IPv4-mapped IPv6 address is the IPv4 address", small, []step{
			{"192.0.2.1", 0, "ok"},
			{"::ffff:192.0.2.1", 0, "ok"},
			{"192.0.2.1", 0, "address 6s"},
		}},
		{"the defaults: a burst of 20 an address, then 1 every 6s", DefaultRegisterLimit, append(repeat(step{"192.0.2.1", 0, "ok"}, 20),
			step{"192.0.2.1", 0, "address 6s"},
			step{"192.0.2.1", 6 * time.Second, "ok"})},
		{"the defaults: 200 at once overall, then 5 a second", DefaultRegisterLimit, append(manyAddrs(200, "ok"),
			step{"198.51.100.1", 0, "overall 200ms"},
			step{"198.51.100.1", 200 * time.Millisecond, "ok"})},
		{"no overall limit", RegisterLimit{PerAddress: 1, PerAddressBurst: 1, Overall: rate.Inf, OverallBurst: 1, MaxAddresses: 1000}, append(manyAddrs(500, "ok"),
			step{"10.0.0.1", 0, "address 1s"})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newRegisterLimiter(tt.limit, slog.New(slog.DiscardHandler))
			var got, want []string
			for _, s := range tt.steps {
				r := l.take(netip.MustParseAddr(s.addr), t0.Add(s.at))
				g := "ok"
				if r != nil {
					g = fmt.Sprintf("overall %v", r.retry.Round(time.Millisecond))
					if r.perAddress {
						g = fmt.Sprintf("address %v", r.retry.Round(time.Millisecond))
					}
				}
				got = append(got, fmt.Sprintf("%s at %v: %s", s.addr, s.at, g))
				want = append(want, fmt.Sprintf("%s at %v: %s", s.addr, s.at, s.want))
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("take (-want +got):\n%s", d)
			}
		})
	}
}

func repeat[T any](v T, n int) []T {
	s := make([]T, n)
	for i := range s {
		s[i] = v
	}
	return s
}

// manyAddrs is n steps at t0, each from its own address in 10.0.0.0/8
// (10.0.0.1 is the first).
func manyAddrs(n int, want string) []step {
	s := make([]step, n)
	for i := range s {
		s[i].addr, s[i].want = nthAddr(i).String(), want
	}
	return s
}

func nthAddr(i int) netip.Addr {
	return netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i) + 1})
}

// TestRegisterLimiterMemory floods the limiter from many more addresses
// than it may remember: it never holds more than MaxAddresses, and an
// address it must remember (its bucket drained) stays limited through the
// flood, while addresses whose bucket is full again are forgotten first.
func TestRegisterLimiterMemory(t *testing.T) {
	const maxAddrs = 50
	l := newRegisterLimiter(RegisterLimit{PerAddress: rate.Every(6 * time.Second), PerAddressBurst: 2, Overall: rate.Inf, OverallBurst: 1,
		MaxAddresses: maxAddrs}, slog.New(slog.DiscardHandler))
	drained := netip.MustParseAddr("192.0.2.1")
	for range 2 {
		if r := l.take(drained, t0); r != nil {
			t.Fatalf("take from %v: refused (%+v) within the burst", drained, r)
		}
	}
	peak := 0
	for i := range 100_000 {
		// A flood of 100,000 a second, within which no bucket refills:
		// the limiter must forget addresses it has not seen refill.
		at := t0.Add(time.Duration(i) * 10 * time.Microsecond)
		if r := l.take(nthAddr(i), at); r != nil {
			t.Fatalf("take %d from %v: refused (%+v) on its first request", i, nthAddr(i), r)
		}
		peak = max(peak, l.remembered())
	}
	if peak > maxAddrs {
		t.Errorf("remembered at most %d addresses; want at most %d", peak, maxAddrs)
	}
	// The flood ended at t0+1s; the drained address, 1/6 refilled, is
	// still refused: it was kept, the flood's addresses forgotten.
	if r := l.take(drained, t0.Add(time.Second)); r == nil || !r.perAddress {
		t.Errorf("take from the drained %v after the flood: %+v; want refused by its address bucket (it was forgotten)", drained, r)
	}
}

func BenchmarkRegisterLimiterFlood(b *testing.B) {
	l := newRegisterLimiter(RegisterLimit{PerAddress: rate.Every(6 * time.Second), PerAddressBurst: 20, Overall: rate.Inf, OverallBurst: 1,
		MaxAddresses: 10000}, slog.New(slog.DiscardHandler))
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		l.take(nthAddr(i), t0.Add(time.Duration(i)*time.Microsecond))
	}
}

func TestClientAddr(t *testing.T) {
	loopback := DefaultTrustedProxies
	tests := []struct {
		name    string
		peer    string
		xff     []string
		trusted []netip.Prefix
		want    string
	}{
		{"no proxy", "203.0.113.5:4000", nil, loopback, "203.0.113.5"},
		{"an untrusted peer's X-Forwarded-For is ignored", "203.0.113.5:4000", []string{"198.51.100.9"}, loopback, "203.0.113.5"},
		{"a trusted proxy's last hop", "127.0.0.1:4000", []string{"198.51.100.9"}, loopback, "198.51.100.9"},
		{"what the client claimed before the last hop is ignored", "127.0.0.1:4000", []string{"10.0.0.1, 192.0.2.7,198.51.100.9"}, loopback, "198.51.100.9"},
		{"the last header's last hop", "127.0.0.1:4000", []string{"10.0.0.1", "192.0.2.7, 198.51.100.9"}, loopback, "198.51.100.9"},
		{"IPv6 loopback proxy, IPv6 client", "[::1]:4000", []string{"2001:db8::5"}, loopback, "2001:db8::5"},
		{"a trusted proxy without the header is the client", "127.0.0.1:4000", nil, loopback, "127.0.0.1"},
		{"a garbled last hop gives the proxy", "127.0.0.1:4000", []string{"198.51.100.9, unknown"}, loopback, "127.0.0.1"},
		{"an empty last hop gives the proxy", "127.0.0.1:4000", []string{"198.51.100.9,"}, loopback, "127.0.0.1"},
		{"no trusted proxy: loopback's header is ignored", "127.0.0.1:4000", []string{"198.51.100.9"}, []netip.Prefix{}, "127.0.0.1"},
		{"a private-network proxy", "10.1.2.3:4000", []string{"198.51.100.9"}, []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}, "198.51.100.9"},
		{"a peer outside the private-network proxies", "10.9.9.9:4000", []string{"198.51.100.9"}, []netip.Prefix{netip.MustParsePrefix("10.1.0.0/16")}, "10.9.9.9"},
		{"an IPv4-mapped peer is its IPv4 address", "[::ffff:127.0.0.1]:4000", []string{"198.51.100.9"}, loopback, "198.51.100.9"},
		{"a peer that is no IP address", "@", []string{"198.51.100.9"}, loopback, "invalid IP"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/register", nil)
			r.RemoteAddr = tt.peer
			for _, v := range tt.xff {
				r.Header.Add("X-Forwarded-For", v)
			}
			if got := clientAddr(r, tt.trusted).String(); got != tt.want {
				t.Errorf("clientAddr(peer %s, X-Forwarded-For %q) = %s; want %s", tt.peer, tt.xff, got, tt.want)
			}
		})
	}
}

func TestRegisterLimitFill(t *testing.T) {
	tests := []struct {
		name    string
		in      RegisterLimit
		want    RegisterLimit
		wantErr bool
	}{
		{"zero takes the defaults", RegisterLimit{}, DefaultRegisterLimit, false},
		{"given fields are kept", RegisterLimit{PerAddressBurst: 3, Overall: rate.Inf},
			RegisterLimit{PerAddress: DefaultRegisterLimit.PerAddress, PerAddressBurst: 3, Overall: rate.Inf,
				OverallBurst: DefaultRegisterLimit.OverallBurst, MaxAddresses: DefaultRegisterLimit.MaxAddresses}, false},
		{"a negative rate", RegisterLimit{PerAddress: -1}, RegisterLimit{}, true},
		{"a negative burst", RegisterLimit{OverallBurst: -1}, RegisterLimit{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.in
			err := got.fill()
			if (err != nil) != tt.wantErr {
				t.Fatalf("fill: %v; want error %v", err, tt.wantErr)
			}
			if err == nil && got != tt.want {
				t.Errorf("fill = %+v; want %+v", got, tt.want)
			}
		})
	}
}
