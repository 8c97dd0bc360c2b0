package authserver

import (
	"cmp"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// RegisterLimit bounds dynamic client registration (POST /register), which
// anyone may call and which writes a client to the store: a token bucket
// per client address and one for the whole server. A refused request is
// answered 429 with Retry-After, and nothing is stored. The buckets live in
// the process: behind a proxy spreading requests over several processes,
// each one has its own.
type RegisterLimit struct {
	// PerAddress and PerAddressBurst are the bucket of one client address
	// (an IPv6 address counts as its /64, the block one host or home
	// usually gets): the requests it may make at once, then how many a
	// second after that.
	PerAddress      rate.Limit
	PerAddressBurst int
	// Overall and OverallBurst are the bucket of the whole server, which
	// bounds how fast a flood from many addresses can fill the store.
	Overall      rate.Limit
	OverallBurst int
	// MaxAddresses bounds the addresses remembered. Past it, those whose
	// bucket is full again (nothing to remember) are forgotten first,
	// then those closest to full.
	MaxAddresses int
}

// DefaultRegisterLimit is what a zero field of Config.RegisterLimit takes.
//
// Per address: a burst of 20, then one every 6 seconds (10 a minute). A
// person registers a connector once per app, and a few more on a retry;
// 20 at once leaves room for an office or a carrier NAT sharing one
// address, and one gets through every 6 seconds even while a script from
// the same address tries to flood.
//
// Overall: a burst of 200, then 5 a second (18,000 an hour): far above the
// rate real people add connectors, even on a launch day, while a flood from
// many addresses adds at most 432,000 clients a day (well under a GB in
// PostgreSQL) instead of as many as the database can write.
//
// MaxAddresses: 10,000 (about 2.5 MB). With the defaults it is never reached
// by remembered addresses: an address is remembered only once a
// registration from it passed, which the overall bucket allows to at most
// 200 + 5/s × 120 s (the time a drained address takes to fill again) =
// 800 addresses at a time.
var DefaultRegisterLimit = RegisterLimit{
	PerAddress: rate.Every(6 * time.Second), PerAddressBurst: 20,
	Overall: 5, OverallBurst: 200,
	MaxAddresses: 10000,
}

// DefaultTrustedProxies are the peers whose X-Forwarded-For is believed
// when Config.TrustedProxies is nil: loopback, a proxy on the same host
// (deploy/hosted's nginx).
var DefaultTrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}

func (l *RegisterLimit) fill() error {
	d := DefaultRegisterLimit
	for _, f := range []struct {
		v   *rate.Limit
		def rate.Limit
	}{{&l.PerAddress, d.PerAddress}, {&l.Overall, d.Overall}} {
		if *f.v < 0 || math.IsNaN(float64(*f.v)) {
			return fmt.Errorf("configuring authserver: register limit rate %v: give a positive rate, rate.Inf for none, or 0 for the default", *f.v)
		}
		if *f.v == 0 {
			*f.v = f.def
		}
	}
	for _, f := range []struct {
		v   *int
		def int
	}{{&l.PerAddressBurst, d.PerAddressBurst}, {&l.OverallBurst, d.OverallBurst}, {&l.MaxAddresses, d.MaxAddresses}} {
		if *f.v < 0 {
			return fmt.Errorf("configuring authserver: register limit burst or size %d: give a positive number, or 0 for the default", *f.v)
		}
		if *f.v == 0 {
			*f.v = f.def
		}
	}
	return nil
}

// registerLimiter applies a RegisterLimit. One mutex guards it all: the
// check of both buckets and the take from both are one step, and
// registration is far from hot enough for it to matter.
type registerLimiter struct {
	cfg     RegisterLimit
	log     *slog.Logger
	mu      sync.Mutex
	overall *rate.Limiter
	addrs   map[netip.Prefix]*addrBucket
	// overallRefusing is set from the overall bucket's first refusal until
	// it lets one through, so a flood logs once, not once a request.
	overallRefusing bool
}

type addrBucket struct {
	lim      *rate.Limiter
	refusing bool // like overallRefusing, for this address
}

func newRegisterLimiter(cfg RegisterLimit, log *slog.Logger) *registerLimiter {
	return &registerLimiter{cfg: cfg, log: log, overall: rate.NewLimiter(cfg.Overall, cfg.OverallBurst),
		addrs: map[netip.Prefix]*addrBucket{}}
}

// refusal says which bucket refused a request and when to try again.
type refusal struct {
	perAddress bool
	retry      time.Duration
}

// take takes a token from addr's bucket and the overall one, at now, or
// neither: a request the overall bucket refuses costs its address nothing,
// and an address is remembered only once a request from it passed.
func (l *registerLimiter) take(addr netip.Addr, now time.Time) *refusal {
	key := addrKey(addr)
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.addrs[key]
	if b != nil {
		if d := wait(b.lim, now); d > 0 {
			if !b.refusing {
				b.refusing = true
				l.log.Warn("client registrations refused from an address over its rate limit", "addr", key.String(),
					"burst", l.cfg.PerAddressBurst, "per_second", float64(l.cfg.PerAddress))
			}
			return &refusal{perAddress: true, retry: d}
		}
	}
	if d := wait(l.overall, now); d > 0 {
		if !l.overallRefusing {
			l.overallRefusing = true
			l.log.Warn("client registrations refused: the server's overall rate limit is reached",
				"burst", l.cfg.OverallBurst, "per_second", float64(l.cfg.Overall))
		}
		return &refusal{retry: d}
	}
	if b == nil && l.cfg.PerAddress != rate.Inf {
		b = &addrBucket{lim: rate.NewLimiter(l.cfg.PerAddress, l.cfg.PerAddressBurst)}
		l.remember(key, b, now)
	}
	if b != nil {
		b.lim.AllowN(now, 1)
		b.refusing = false
	}
	l.overall.AllowN(now, 1)
	l.overallRefusing = false
	return nil
}

// remember adds b for key. When MaxAddresses are remembered, it first
// forgets every address whose bucket is full (it is as if new), and if that
// leaves more than 9/10 of MaxAddresses, the ones closest to full down to
// that: a flood of new addresses costs one sort per MaxAddresses/10 of
// them, not a scan each.
func (l *registerLimiter) remember(key netip.Prefix, b *addrBucket, now time.Time) {
	if len(l.addrs) >= l.cfg.MaxAddresses {
		full := float64(l.cfg.PerAddressBurst)
		type held struct {
			key    netip.Prefix
			tokens float64
		}
		var rest []held
		for k, v := range l.addrs {
			t := v.lim.TokensAt(now)
			if t >= full {
				delete(l.addrs, k)
				continue
			}
			rest = append(rest, held{k, t})
		}
		if keep := l.cfg.MaxAddresses * 9 / 10; len(rest) > keep {
			slices.SortFunc(rest, func(a, b held) int { return cmp.Compare(b.tokens, a.tokens) })
			for _, h := range rest[:len(rest)-keep] {
				delete(l.addrs, h.key)
			}
		}
	}
	l.addrs[key] = b
}

// remembered is how many addresses the limiter holds (for tests).
func (l *registerLimiter) remembered() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.addrs)
}

// wait is how long until lim has a token at now, 0 if it has one: the
// delay of a reservation, cancelled at once (the limiter's own arithmetic,
// the same AllowN then uses).
func wait(lim *rate.Limiter, now time.Time) time.Duration {
	r := lim.ReserveN(now, 1)
	defer r.CancelAt(now)
	return r.DelayFrom(now)
}

// addrKey is the bucket an address belongs to: itself for IPv4, its /64
// for IPv6 (one host or home usually gets a whole /64). An unknown address
// (a peer that is no IP address) gets the zero Prefix, one shared bucket.
func addrKey(a netip.Addr) netip.Prefix {
	a = a.Unmap().WithZone("")
	if !a.IsValid() {
		return netip.Prefix{}
	}
	if a.Is4() {
		return netip.PrefixFrom(a, 32)
	}
	p, _ := a.Prefix(64)
	return p
}

// clientAddr is the address r comes from: its TCP peer, unless the peer is
// one of trusted (a reverse proxy), in which case the last address of
// X-Forwarded-For, the one the proxy saw (nginx's
// $proxy_add_x_forwarded_for appends it; anything before it is what the
// client claimed and is ignored). A peer that is no IP address, or a
// trusted peer's header without a usable last address, gives the peer.
func clientAddr(r *http.Request, trusted []netip.Prefix) netip.Addr {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return netip.Addr{}
	}
	peer := ap.Addr().Unmap()
	if !trustedPeer(peer, trusted) {
		return peer
	}
	hs := r.Header.Values("X-Forwarded-For")
	if len(hs) == 0 {
		return peer
	}
	last := hs[len(hs)-1]
	if i := strings.LastIndexByte(last, ','); i >= 0 {
		last = last[i+1:]
	}
	a, err := netip.ParseAddr(strings.TrimSpace(last))
	if err != nil {
		return peer
	}
	return a.Unmap()
}

func trustedPeer(peer netip.Addr, trusted []netip.Prefix) bool {
	for _, p := range trusted {
		if p.Contains(peer) {
			return true
		}
	}
	return false
}

// limitRegister answers 429 and reports false when r is over the limit.
func (s *Server) limitRegister(w http.ResponseWriter, r *http.Request) bool {
	ref := s.regLimit.take(clientAddr(r, s.c.TrustedProxies), s.c.Now())
	if ref == nil {
		return true
	}
	secs := int64(math.Ceil(ref.retry.Seconds()))
	secs = max(secs, 1)
	w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
	// A browser-based client may read it (CORS exposes no other header).
	w.Header().Set("Access-Control-Expose-Headers", "Retry-After")
	desc := fmt.Sprintf("too many client registrations from your address (%s); retry in %d s", s.perAddressText(), secs)
	if !ref.perAddress {
		desc = fmt.Sprintf("too many client registrations on this server right now; retry in %d s", secs)
	}
	oauthError(w, http.StatusTooManyRequests, "temporarily_unavailable", desc)
	return false
}

func (s *Server) perAddressText() string {
	l := s.c.RegisterLimit
	every := time.Duration(float64(time.Second) / float64(l.PerAddress)).Round(time.Millisecond)
	return fmt.Sprintf("a burst of %d, then 1 every %s", l.PerAddressBurst, every)
}
