package egress_test

import (
	"net/netip"
	"testing"

	"github.com/capabilities-sh/capabilities/engine/egress"
)

// FuzzParseRange: a range that parses is canonical, prints back to
// itself, and lets its own addresses through; anything else is an error
// that names the flag.
func FuzzParseRange(f *testing.F) {
	for _, s := range []string{"127.0.0.0/8", "10.1.2.3/16", "::1", "fe80::1%eth0", "", "0.0.0.0/0", "::ffff:10.0.0.0/104", "64:ff9b::/96", "1.2.3.4/33", " 10.0.0.0/8"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := egress.ParseRange(s)
		if err != nil {
			if p.IsValid() {
				t.Errorf("ParseRange(%q) failed but returned %v", s, p)
			}
			return
		}
		if !p.IsValid() || p != p.Masked() {
			t.Fatalf("ParseRange(%q) = %v, not a canonical range", s, p)
		}
		again, err := egress.ParseRange(p.String())
		if err != nil || again != p {
			t.Fatalf("ParseRange(%q) = %v, which reads back as %v, %v", s, p, again, err)
		}
		g := egress.New(p)
		if !g.Allows(p.Addr()) {
			t.Errorf("allowing %v does not let %v through", p, p.Addr())
		}
		if err := g.Check(netip.AddrPortFrom(p.Addr(), 443), "x"); err != nil {
			t.Errorf("allowing %v: %v", p, err)
		}
	})
}

// FuzzClassify: an IPv4 address and its IPv4-mapped form are refused
// alike, with the same range to allow; a refusal always names a reason
// and a range holding the address.
func FuzzClassify(f *testing.F) {
	f.Add([]byte{127, 0, 0, 1})
	f.Add([]byte{8, 8, 8, 8})
	f.Add(netip.MustParseAddr("fd00:ec2::254").AsSlice())
	f.Add(netip.MustParseAddr("64:ff9b::a9fe:a9fe").AsSlice())
	f.Add(netip.MustParseAddr("2002:a00:1::").AsSlice())
	f.Fuzz(func(t *testing.T, b []byte) {
		ip, ok := netip.AddrFromSlice(b)
		if !ok {
			return
		}
		c, refused := egress.Classify(ip)
		if refused && (c.Reason == "" || !c.Range.IsValid() || !egress.New(c.Range).Allows(ip)) {
			t.Errorf("Classify(%v) = %+v: no reason, or a range that does not let it through", ip, c)
		}
		if ip.Is4() {
			m, mRefused := egress.Classify(netip.AddrFrom16(ip.As16()))
			if mRefused != refused || m.Range != c.Range {
				t.Errorf("Classify(%v) = %+v, %v but its mapped form %+v, %v", ip, c, refused, m, mRefused)
			}
		}
	})
}
