// Package egress keeps a hosted hub's outbound traffic on public addresses
// (I4 for hosted sources): loopback, private, link-local, cloud metadata,
// shared (CGNAT), multicast, broadcast and reserved addresses are refused
// when a connection is about to be made, on the IP address actually dialled
// after DNS resolution, so a name that resolves (or re-resolves) to one is
// refused too (no DNS rebinding window) and so is every redirect, which is
// a new dial. IPv4-mapped IPv6, NAT64 (64:ff9b::/96) and 6to4 (2002::/16)
// forms of a refused IPv4 address are refused as that address.
//
// An operator allowlist of CIDR ranges (--allow-egress) lets listed
// ranges through; nothing else changes what is refused.
//
// A Guard's Transport never uses a proxy from the environment: through a
// proxy the check would apply to the proxy's address, not the destination.
package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"syscall"
	"time"
)

// MaxRedirects is how many redirects a Guard's client follows.
const MaxRedirects = 5

// ErrRefused is matched (errors.Is) by a *RefusedError.
var ErrRefused = errors.New("egress refused")

// RefusedError is a connection the guard refused.
type RefusedError struct {
	Addr   netip.AddrPort
	Reason string       // "loopback", "private (RFC 1918)", …
	Range  netip.Prefix // the range an operator would allow to let it through
	Source string       // the source the connection was for ("" when unknown)
}

func (e *RefusedError) Error() string {
	for_ := ""
	if e.Source != "" {
		for_ = " for source " + e.Source
	}
	return fmt.Sprintf("refusing to connect to %s (%s)%s: a hosted hub reaches only public addresses; an operator may allow a range with --allow-egress %s",
		e.Addr, e.Reason, for_, e.Range)
}

// Is makes errors.Is(err, ErrRefused) true.
func (e *RefusedError) Is(target error) bool { return target == ErrRefused }

// Guard decides which addresses outbound connections may reach. The zero
// value and nil refuse every non-public address; New adds an allowlist.
type Guard struct {
	allow []netip.Prefix
}

// New returns a guard that lets the allow ranges through.
func New(allow ...netip.Prefix) *Guard {
	g := &Guard{}
	for _, p := range allow {
		g.allow = append(g.allow, p.Masked())
	}
	return g
}

// Parse returns a guard whose allowlist is specs, each a CIDR range
// ("10.1.0.0/16", "fd12::/64") or a single address ("127.0.0.1"), as given
// to --allow-egress.
func Parse(specs []string) (*Guard, error) {
	var ps []netip.Prefix
	for _, s := range specs {
		p, err := ParseRange(s)
		if err != nil {
			return nil, err
		}
		ps = append(ps, p)
	}
	return New(ps...), nil
}

// Ranges is the value of a repeatable --allow-egress flag (a pflag.Value
// and flag.Value): each Set adds ranges, separated by commas or spaces
// (the form of an environment variable such as
// CAPABILITIES_HOSTED_ALLOW_EGRESS).
type Ranges []netip.Prefix

// Set adds the ranges of s.
func (r *Ranges) Set(s string) error {
	ps, err := ParseRanges("--allow-egress", s)
	if err != nil {
		return err
	}
	*r = append(*r, ps...)
	return nil
}

// ParseRanges reads the ranges of s, separated by commas or spaces, as the
// value of flag (its name goes in the errors): the form of --allow-egress
// and --trusted-proxy, and of their environment variables.
func ParseRanges(flag, s string) ([]netip.Prefix, error) {
	fields := strings.FieldsFunc(s, func(c rune) bool { return c == ',' || c == ' ' || c == '\t' || c == '\n' })
	if len(fields) == 0 {
		fields = []string{""} // nothing but separators: the empty range's message
	}
	var out []netip.Prefix
	for _, f := range fields {
		p, err := parseRange(flag, f)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// String lists the ranges, comma-separated.
func (r *Ranges) String() string {
	if r == nil {
		return ""
	}
	ss := make([]string, len(*r))
	for i, p := range *r {
		ss[i] = p.String()
	}
	return strings.Join(ss, ",")
}

// Type names the flag's value in help.
func (r *Ranges) Type() string { return "CIDR" }

// Guard is a guard allowing the ranges.
func (r *Ranges) Guard() *Guard {
	if r == nil {
		return New()
	}
	return New(*r...)
}

// ParseRange reads one --allow-egress value: a CIDR range or a single
// address (a /32 or /128). A range with host bits set ("10.1.2.3/16") is
// refused, since it likely is a typo for another range.
func ParseRange(s string) (netip.Prefix, error) { return parseRange("--allow-egress", s) }

func parseRange(flag, s string) (netip.Prefix, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return netip.Prefix{}, fmt.Errorf("reading %s: the range is empty; give a CIDR range such as 10.0.0.0/8 or an address such as 127.0.0.1", flag)
	}
	if !strings.Contains(t, "/") {
		a, err := netip.ParseAddr(t)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("reading %s %q: not an IP address or CIDR range (such as 10.0.0.0/8 or 127.0.0.1)", flag, s)
		}
		if a.Zone() != "" {
			return netip.Prefix{}, fmt.Errorf("reading %s %q: an address with a zone cannot be allowed; give it without %%%s", flag, s, a.Zone())
		}
		return netip.PrefixFrom(a, a.BitLen()), nil
	}
	p, err := netip.ParsePrefix(t)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("reading %s %q: not a CIDR range (such as 10.0.0.0/8 or fd00::/8)", flag, s)
	}
	if p != p.Masked() {
		return netip.Prefix{}, fmt.Errorf("reading %s %q: the address has bits set past /%d; did you mean %s?", flag, s, p.Bits(), p.Masked())
	}
	return p, nil
}

// Allowed lists the guard's allowlist.
func (g *Guard) Allowed() []netip.Prefix {
	if g == nil {
		return nil
	}
	return append([]netip.Prefix(nil), g.allow...)
}

// Check returns a *RefusedError when addr may not be reached, nil when it
// may. source names what the connection is for, in the message.
func (g *Guard) Check(addr netip.AddrPort, source string) error {
	ip := addr.Addr().WithZone("")
	if g.allowed(ip) {
		return nil
	}
	c, refused := Classify(ip)
	if !refused {
		return nil
	}
	return &RefusedError{Addr: addr, Reason: c.Reason, Range: c.Range, Source: source}
}

// Allows reports whether the guard lets a connection to ip through.
func (g *Guard) Allows(ip netip.Addr) bool {
	ip = ip.WithZone("")
	if g.allowed(ip) {
		return true
	}
	_, refused := Classify(ip)
	return !refused
}

// allowed reports whether ip is on the allowlist (an IPv4-mapped address
// as its IPv4 address too).
func (g *Guard) allowed(ip netip.Addr) bool {
	if g == nil {
		return false
	}
	for _, p := range g.allow {
		if p.Contains(ip) || (ip.Is4In6() && p.Contains(ip.Unmap())) {
			return true
		}
	}
	return false
}

// Class is what Classify says of an address.
type Class struct {
	Reason string       // what kind of address it is, for a message
	Range  netip.Prefix // the range it belongs to, to name in --allow-egress
}

type block struct {
	prefix netip.Prefix
	reason string
}

func mustBlocks(pairs ...string) []block {
	bs := make([]block, 0, len(pairs)/2)
	for i := 0; i < len(pairs); i += 2 {
		bs = append(bs, block{netip.MustParsePrefix(pairs[i]), pairs[i+1]})
	}
	return bs
}

// The refused ranges, the most specific first (the first match names the
// reason).
var (
	blocks4 = mustBlocks(
		"169.254.169.254/32", "cloud metadata",
		"100.100.100.200/32", "cloud metadata",
		"0.0.0.0/32", "unspecified",
		"255.255.255.255/32", "broadcast",
		"0.0.0.0/8", "this network",
		"10.0.0.0/8", "private (RFC 1918)",
		"172.16.0.0/12", "private (RFC 1918)",
		"192.168.0.0/16", "private (RFC 1918)",
		"100.64.0.0/10", "shared address space (CGNAT)",
		"127.0.0.0/8", "loopback",
		"169.254.0.0/16", "link-local",
		"192.0.0.0/24", "IETF protocol assignments",
		"192.0.2.0/24", "documentation",
		"198.51.100.0/24", "documentation",
		"203.0.113.0/24", "documentation",
		"198.18.0.0/15", "benchmarking",
		"224.0.0.0/4", "multicast",
		"240.0.0.0/4", "reserved",
	)
	blocks6 = mustBlocks(
		"fd00:ec2::254/128", "cloud metadata",
		"::/128", "unspecified",
		"::1/128", "loopback",
		"::/96", "IPv4-compatible (deprecated)",
		"100::/64", "discard-only",
		"64:ff9b:1::/48", "local-use NAT64",
		"2001:db8::/32", "documentation",
		"fc00::/7", "private (unique local)",
		"fe80::/10", "link-local",
		"fec0::/10", "site-local (deprecated)",
		"ff00::/8", "multicast",
	)
	mapped = netip.MustParsePrefix("::ffff:0:0/96")
	nat64  = netip.MustParsePrefix("64:ff9b::/96")
	sixTo4 = netip.MustParsePrefix("2002::/16")
)

// Classify says whether ip is refused by default and why. An IPv4-mapped,
// NAT64 or 6to4 address is classified by the IPv4 address it carries.
func Classify(ip netip.Addr) (Class, bool) {
	ip = ip.WithZone("")
	switch {
	case !ip.IsValid():
		return Class{Reason: "invalid address"}, true
	case ip.Is4():
		for _, b := range blocks4 {
			if b.prefix.Contains(ip) {
				return Class{Reason: b.reason, Range: b.prefix}, true
			}
		}
		return Class{}, false
	case mapped.Contains(ip):
		c, refused := Classify(ip.Unmap())
		if refused {
			c.Reason = "IPv4-mapped " + c.Reason // the allowlist matches the IPv4 range
		}
		return c, refused
	case nat64.Contains(ip):
		b := ip.As16()
		v4 := netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
		c, refused := Classify(v4)
		if refused {
			c.Reason = "NAT64 of " + v4.String() + ", " + c.Reason
			c.Range = embed(c.Range, nat64, 96)
		}
		return c, refused
	case sixTo4.Contains(ip):
		b := ip.As16()
		v4 := netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]})
		c, refused := Classify(v4)
		if refused {
			c.Reason = "6to4 of " + v4.String() + ", " + c.Reason
			c.Range = embed(c.Range, sixTo4, 16)
		}
		return c, refused
	}
	for _, b := range blocks6 {
		if b.prefix.Contains(ip) {
			return Class{Reason: b.reason, Range: b.prefix}, true
		}
	}
	return Class{}, false
}

// embed writes the IPv4 range r into the IPv6 prefix outer at bit offset
// at: the IPv6 range of the addresses carrying an address of r.
func embed(r netip.Prefix, outer netip.Prefix, at int) netip.Prefix {
	b := outer.Addr().As16()
	v4 := r.Addr().As4()
	copy(b[at/8:at/8+4], v4[:])
	return netip.PrefixFrom(netip.AddrFrom16(b), at+r.Bits()).Masked()
}

// Control is a net.Dialer Control hook: it refuses a connection to an
// address the guard refuses, before the connection is made. address is
// the resolved "ip:port" being dialled; one that does not parse is refused.
func (g *Guard) Control(source string) func(network, address string, c syscall.RawConn) error {
	return func(network, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("refusing to connect to %q over %s for source %s: not an IP address and port", address, network, source)
		}
		return g.Check(ap, source)
	}
}

// Dialer is a net.Dialer whose connections the guard checks.
func (g *Guard) Dialer(source string) *net.Dialer {
	return &net.Dialer{
		Timeout:   30 * time.Second,
		KeepAlive: 30 * time.Second,
		Control:   g.Control(source),
	}
}

// Transport is an HTTP transport like http.DefaultTransport whose
// connections the guard checks, without a proxy.
func (g *Guard) Transport(source string) *http.Transport {
	t, ok := http.DefaultTransport.(*http.Transport)
	if ok {
		t = t.Clone()
	} else { // replaced by a program: start from a transport of our own
		t = &http.Transport{ForceAttemptHTTP2: true, MaxIdleConns: 100, IdleConnTimeout: 90 * time.Second, TLSHandshakeTimeout: 10 * time.Second, ExpectContinueTimeout: time.Second}
	}
	t.Proxy = nil
	d := g.Dialer(source)
	t.DialContext = d.DialContext // http.DefaultTransport has no other dial function
	return t
}

// Client is an HTTP client over Transport that follows at most
// MaxRedirects redirects, only to http and https URLs (each one's
// connection checked like the first).
func (g *Guard) Client(source string) *http.Client {
	return &http.Client{Transport: g.Transport(source), CheckRedirect: CheckRedirect}
}

// CheckRedirect is an http.Client CheckRedirect refusing a redirect to a
// scheme other than http or https and more than MaxRedirects redirects.
// Where a redirect may go is the dial check's to decide.
func CheckRedirect(req *http.Request, via []*http.Request) error {
	if s := req.URL.Scheme; s != "http" && s != "https" {
		return fmt.Errorf("refusing a redirect to a %s: URL: a hosted hub follows redirects only to http and https", s)
	}
	if len(via) > MaxRedirects {
		return fmt.Errorf("refusing to follow more than %d redirects (the last to %s)", MaxRedirects, req.URL.Redacted())
	}
	return nil
}

// DialContext dials like the guard's Dialer (for clients that take a dial
// function).
func (g *Guard) DialContext(source string) func(ctx context.Context, network, address string) (net.Conn, error) {
	return g.Dialer(source).DialContext
}
