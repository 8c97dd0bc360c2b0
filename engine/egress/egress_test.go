package egress_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/capabilities-sh/capabilities/engine/egress"
	"github.com/google/go-cmp/cmp"
	"github.com/spf13/pflag"
)

var _ pflag.Value = (*egress.Ranges)(nil) // --allow-egress on a cobra command

func TestClassify(t *testing.T) {
	type row struct {
		Addr    string
		Refused bool
		Reason  string
		Range   string
	}
	rows := []row{
		// public
		{"8.8.8.8", false, "", ""},
		{"1.1.1.1", false, "", ""},
		{"172.32.0.1", false, "", ""},  // just past 172.16/12
		{"100.128.0.1", false, "", ""}, // just past 100.64/10
		{"169.255.0.1", false, "", ""}, // just past 169.254/16
		{"11.0.0.1", false, "", ""},    // just past 10/8
		{"223.255.255.255", false, "", ""},
		{"2606:4700:4700::1111", false, "", ""},
		{"2001:4860:4860::8888", false, "", ""},
		{"::ffff:8.8.8.8", false, "", ""},
		{"64:ff9b::808:808", false, "", ""}, // NAT64 of 8.8.8.8
		{"2002:808:808::1", false, "", ""},  // 6to4 of 8.8.8.8
		// IPv4
		{"127.0.0.1", true, "loopback", "127.0.0.0/8"},
		{"127.255.255.254", true, "loopback", "127.0.0.0/8"},
		{"10.0.0.1", true, "private (RFC 1918)", "10.0.0.0/8"},
		{"172.16.0.1", true, "private (RFC 1918)", "172.16.0.0/12"},
		{"172.31.255.255", true, "private (RFC 1918)", "172.16.0.0/12"},
		{"192.168.1.1", true, "private (RFC 1918)", "192.168.0.0/16"},
		{"169.254.1.1", true, "link-local", "169.254.0.0/16"},
		{"169.254.169.254", true, "cloud metadata", "169.254.169.254/32"},
		{"100.100.100.200", true, "cloud metadata", "100.100.100.200/32"},
		{"100.64.0.1", true, "shared address space (CGNAT)", "100.64.0.0/10"},
		{"100.127.255.255", true, "shared address space (CGNAT)", "100.64.0.0/10"},
		{"0.0.0.0", true, "unspecified", "0.0.0.0/32"},
		{"0.1.2.3", true, "this network", "0.0.0.0/8"},
		{"224.0.0.1", true, "multicast", "224.0.0.0/4"},
		{"239.255.255.250", true, "multicast", "224.0.0.0/4"},
		{"255.255.255.255", true, "broadcast", "255.255.255.255/32"},
		{"240.0.0.1", true, "reserved", "240.0.0.0/4"},
		{"192.0.2.1", true, "documentation", "192.0.2.0/24"},
		{"198.18.0.1", true, "benchmarking", "198.18.0.0/15"},
		// IPv6
		{"::1", true, "loopback", "::1/128"},
		{"::", true, "unspecified", "::/128"},
		{"fe80::1", true, "link-local", "fe80::/10"},
		{"fe80::1%eth0", true, "link-local", "fe80::/10"},
		{"fc00::1", true, "private (unique local)", "fc00::/7"},
		{"fd12:3456::1", true, "private (unique local)", "fc00::/7"},
		{"fd00:ec2::254", true, "cloud metadata", "fd00:ec2::254/128"},
		{"ff02::1", true, "multicast", "ff00::/8"},
		{"fec0::1", true, "site-local (deprecated)", "fec0::/10"},
		{"::7f00:1", true, "IPv4-compatible (deprecated)", "::/96"},
		{"64:ff9b:1::1", true, "local-use NAT64", "64:ff9b:1::/48"},
		// IPv4 forms in IPv6
		{"::ffff:127.0.0.1", true, "IPv4-mapped loopback", "127.0.0.0/8"},
		{"::ffff:169.254.169.254", true, "IPv4-mapped cloud metadata", "169.254.169.254/32"},
		{"::ffff:10.1.2.3", true, "IPv4-mapped private (RFC 1918)", "10.0.0.0/8"},
		{"::ffff:0.0.0.0", true, "IPv4-mapped unspecified", "0.0.0.0/32"},
		{"64:ff9b::7f00:1", true, "NAT64 of 127.0.0.1, loopback", "64:ff9b::7f00:0/104"},
		{"64:ff9b::a9fe:a9fe", true, "NAT64 of 169.254.169.254, cloud metadata", "64:ff9b::a9fe:a9fe/128"},
		{"64:ff9b::c0a8:101", true, "NAT64 of 192.168.1.1, private (RFC 1918)", "64:ff9b::c0a8:0/112"},
		{"2002:7f00:1::1", true, "6to4 of 127.0.0.1, loopback", "2002:7f00::/24"},
		{"2002:a9fe:a9fe::", true, "6to4 of 169.254.169.254, cloud metadata", "2002:a9fe:a9fe::/48"},
	}
	var got, want []row
	for _, r := range rows {
		want = append(want, r)
		c, refused := egress.Classify(netip.MustParseAddr(r.Addr))
		g := row{Addr: r.Addr, Refused: refused, Reason: c.Reason}
		if refused {
			g.Range = c.Range.String()
			// The range named in the message lets the address through.
			if !egress.New(c.Range).Allows(netip.MustParseAddr(r.Addr)) {
				t.Errorf("%s: allowing %s does not let it through", r.Addr, c.Range)
			}
		}
		got = append(got, g)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Classify (-want +got):\n%s", d)
	}
}

func TestCheckAllowlist(t *testing.T) {
	g, err := egress.Parse([]string{"127.0.0.0/8", "10.1.0.0/16", "fd00:ec2::254", "64:ff9b::7f00:0/104"})
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		Addr string
		Err  string
	}
	rows := []row{
		{"127.0.0.1:80", ""},
		{"[::ffff:127.0.0.1]:80", ""}, // the IPv4 range covers its mapped form
		{"10.1.2.3:443", ""},
		{"[fd00:ec2::254]:80", ""},
		{"[64:ff9b::7f00:1]:80", ""},
		{"8.8.8.8:443", ""},
		{"10.2.0.1:443", "refusing to connect to 10.2.0.1:443 (private (RFC 1918)) for source github: a hosted hub reaches only public addresses; an operator may allow a range with --allow-egress 10.0.0.0/8"},
		{"[::1]:8080", "refusing to connect to [::1]:8080 (loopback) for source github: a hosted hub reaches only public addresses; an operator may allow a range with --allow-egress ::1/128"},
		{"169.254.169.254:80", "refusing to connect to 169.254.169.254:80 (cloud metadata) for source github: a hosted hub reaches only public addresses; an operator may allow a range with --allow-egress 169.254.169.254/32"},
		{"[fd00:ec2::253]:80", "refusing to connect to [fd00:ec2::253]:80 (private (unique local)) for source github: a hosted hub reaches only public addresses; an operator may allow a range with --allow-egress fc00::/7"},
	}
	var got []row
	for _, r := range rows {
		err := g.Check(netip.MustParseAddrPort(r.Addr), "github")
		msg := ""
		if err != nil {
			msg = err.Error()
			if !errors.Is(err, egress.ErrRefused) {
				t.Errorf("%s: %v is not ErrRefused", r.Addr, err)
			}
		}
		got = append(got, row{r.Addr, msg})
	}
	if d := cmp.Diff(rows, got); d != "" {
		t.Errorf("Check (-want +got):\n%s", d)
	}
	// nil and the zero guard refuse by default.
	var none *egress.Guard
	for _, g := range []*egress.Guard{none, {}, egress.New()} {
		if err := g.Check(netip.MustParseAddrPort("127.0.0.1:1"), "x"); err == nil {
			t.Errorf("guard %v let loopback through", g)
		}
	}
}

func TestParseRange(t *testing.T) {
	type row struct {
		In   string
		Want string
		Err  string
	}
	rows := []row{
		{"127.0.0.0/8", "127.0.0.0/8", ""},
		{" 10.0.0.0/8 ", "10.0.0.0/8", ""},
		{"127.0.0.1", "127.0.0.1/32", ""},
		{"::1", "::1/128", ""},
		{"fd00::/8", "fd00::/8", ""},
		{"0.0.0.0/0", "0.0.0.0/0", ""},
		{"", "", "reading --allow-egress: the range is empty; give a CIDR range such as 10.0.0.0/8 or an address such as 127.0.0.1"},
		{"10.1.2.3/16", "", `reading --allow-egress "10.1.2.3/16": the address has bits set past /16; did you mean 10.1.0.0/16?`},
		{"10.0.0.0/33", "", `reading --allow-egress "10.0.0.0/33": not a CIDR range (such as 10.0.0.0/8 or fd00::/8)`},
		{"localhost", "", `reading --allow-egress "localhost": not an IP address or CIDR range (such as 10.0.0.0/8 or 127.0.0.1)`},
		{"fe80::1%eth0", "", `reading --allow-egress "fe80::1%eth0": an address with a zone cannot be allowed; give it without %eth0`},
		{"10.0.0.0/8,192.168.0.0/16", "", `reading --allow-egress "10.0.0.0/8,192.168.0.0/16": not a CIDR range (such as 10.0.0.0/8 or fd00::/8)`},
	}
	var got []row
	for _, r := range rows {
		p, err := egress.ParseRange(r.In)
		g := row{In: r.In}
		if err != nil {
			g.Err = err.Error()
		} else {
			g.Want = p.String()
		}
		got = append(got, g)
	}
	if d := cmp.Diff(rows, got); d != "" {
		t.Errorf("ParseRange (-want +got):\n%s", d)
	}
	if _, err := egress.Parse([]string{"10.0.0.0/8", "nope"}); err == nil {
		t.Error("Parse took a bad range")
	}
}

func TestRangesFlag(t *testing.T) {
	var r egress.Ranges
	for _, s := range []string{"10.0.0.0/8", "127.0.0.1, fd00::/8", " 192.168.0.0/16\t100.64.0.0/10 "} {
		if err := r.Set(s); err != nil {
			t.Fatalf("Set(%q): %v", s, err)
		}
	}
	want := "10.0.0.0/8,127.0.0.1/32,fd00::/8,192.168.0.0/16,100.64.0.0/10"
	if d := cmp.Diff(want, r.String()); d != "" {
		t.Errorf("ranges (-want +got):\n%s", d)
	}
	if !r.Guard().Allows(netip.MustParseAddr("100.64.1.1")) || r.Guard().Allows(netip.MustParseAddr("172.16.0.1")) {
		t.Error("the guard does not follow the ranges")
	}
	for _, bad := range []string{"", " , ", "10.0.0.0/8,nope"} {
		if err := new(egress.Ranges).Set(bad); err == nil || !strings.HasPrefix(err.Error(), "reading --allow-egress") {
			t.Errorf("Set(%q): got %v, want an error about --allow-egress", bad, err)
		}
	}
}

// counting is a test server that counts the requests it got.
func counting(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int64) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		if h != nil {
			h(w, r)
			return
		}
		_, _ = io.WriteString(w, "hello")
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func get(ctx context.Context, c *http.Client, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

func TestLocalServerRefusedUnlessAllowed(t *testing.T) {
	srv, n := counting(t, nil)
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	_, err := get(t.Context(), egress.New().Client("demo"), srv.URL)
	var re *egress.RefusedError
	if !errors.As(err, &re) {
		t.Fatalf("default guard: got %v, want a *RefusedError", err)
	}
	want := fmt.Sprintf("refusing to connect to 127.0.0.1:%d (loopback) for source demo: a hosted hub reaches only public addresses; an operator may allow a range with --allow-egress 127.0.0.0/8", port)
	if !strings.Contains(err.Error(), want) {
		t.Errorf("error\n%v\ndoes not say\n%s", err, want)
	}
	if n.Load() != 0 {
		t.Errorf("the refused server got %d requests", n.Load())
	}

	allowed, err := egress.Parse([]string{"127.0.0.0/8"})
	if err != nil {
		t.Fatal(err)
	}
	body, err := get(t.Context(), allowed.Client("demo"), srv.URL)
	if err != nil || body != "hello" {
		t.Fatalf("allowed guard: got %q, %v", body, err)
	}
	if n.Load() != 1 {
		t.Errorf("the allowed server got %d requests, want 1", n.Load())
	}
}

func TestNameResolvingToLoopbackRefused(t *testing.T) {
	srv, n := counting(t, nil)
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	url := fmt.Sprintf("http://localhost:%d/", port)
	_, err := get(t.Context(), egress.New().Client("demo"), url)
	var re *egress.RefusedError
	if !errors.As(err, &re) {
		t.Fatalf("got %v, want a *RefusedError", err)
	}
	// The check is on what the name resolved to, not on the name.
	if !re.Addr.Addr().IsLoopback() || re.Addr.Port() != uint16(port) || !strings.Contains(err.Error(), "(loopback) for source demo") {
		t.Errorf("refused %v: %v", re.Addr, err)
	}
	if n.Load() != 0 {
		t.Errorf("the refused server got %d requests", n.Load())
	}
	g := egress.New(netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128"))
	if body, err := get(t.Context(), g.Client("demo"), url); err != nil || body != "hello" {
		t.Fatalf("allowed: got %q, %v", body, err)
	}
}

func TestCustomResolver(t *testing.T) {
	// A name an attacker's DNS answers with a private address: a resolver
	// that answers every question with 10.0.0.1 (the dial is refused
	// before any packet leaves, so nothing need listen there).
	d := egress.New().Dialer("demo")
	d.Resolver = &net.Resolver{PreferGo: true, Dial: fakeDNS(t, netip.MustParseAddr("10.0.0.1"))}
	_, err := d.DialContext(t.Context(), "tcp4", "rebind.example.com:443")
	want := "refusing to connect to 10.0.0.1:443 (private (RFC 1918)) for source demo"
	if !errors.Is(err, egress.ErrRefused) || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v, want %q", err, want)
	}
}

func TestRedirects(t *testing.T) {
	metadata, _ := counting(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/", http.StatusFound)
	})
	file, _ := counting(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "file:///etc/passwd", http.StatusFound)
	})
	var loops atomic.Int64
	loop, _ := counting(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, fmt.Sprintf("/%d", loops.Add(1)), http.StatusFound)
	})
	// A real server at an address the allowlist leaves out (127.0.0.2,
	// routed to this machine on Linux), redirected to by an allowed one.
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatalf("listening on 127.0.0.2 (loopback addresses other than 127.0.0.1 are routed to the machine on Linux): %v", err)
	}
	var hits atomic.Int64
	target := &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) })}}
	target.Start()
	t.Cleanup(target.Close)
	toTarget, _ := counting(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+"/secret", http.StatusFound)
	})
	g := egress.New(netip.MustParsePrefix("127.0.0.1/32"))
	// Reached directly, the target answers an unguarded client.
	if _, err := get(t.Context(), http.DefaultClient, target.URL); err != nil || hits.Load() != 1 {
		t.Fatalf("the target does not answer: %v", err)
	}

	rows := []struct {
		url, want string
	}{
		{metadata.URL, "refusing to connect to 169.254.169.254:80 (cloud metadata) for source demo"},
		{file.URL, "refusing a redirect to a file: URL"},
		{loop.URL, "refusing to follow more than 5 redirects"},
		{toTarget.URL, "refusing to connect to " + ln.Addr().String() + " (loopback) for source demo: a hosted hub reaches only public addresses; an operator may allow a range with --allow-egress 127.0.0.0/8"},
	}
	for _, r := range rows {
		_, err := get(t.Context(), g.Client("demo"), r.url)
		if err == nil || !strings.Contains(err.Error(), r.want) {
			t.Errorf("%s: got %v, want %q", r.url, err, r.want)
		}
	}
	if got := loops.Load(); got != egress.MaxRedirects+1 {
		t.Errorf("the redirect loop got %d requests, want %d", got, egress.MaxRedirects+1)
	}
	if hits.Load() != 1 {
		t.Errorf("the refused redirect reached its target (%d requests)", hits.Load()-1)
	}
}

// fakeDNS is a resolver Dial answering every A question with addr (and
// any other question with no answer), over the stream framing Go's
// resolver uses on a connection that is not a PacketConn.
func fakeDNS(t *testing.T, addr netip.Addr) func(ctx context.Context, network, address string) (net.Conn, error) {
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		client, server := net.Pipe()
		go func() {
			defer server.Close()
			for {
				var n [2]byte
				if _, err := io.ReadFull(server, n[:]); err != nil {
					return
				}
				q := make([]byte, int(n[0])<<8|int(n[1]))
				if _, err := io.ReadFull(server, q); err != nil {
					return
				}
				// The question: a name (labels up to a zero byte), type, class.
				end := 12
				for end < len(q) && q[end] != 0 {
					end += int(q[end]) + 1
				}
				end += 5
				if end > len(q) {
					t.Errorf("fake DNS: a question it cannot read: %x", q)
					return
				}
				qtype := int(q[end-4])<<8 | int(q[end-3])
				resp := append([]byte(nil), q[:end]...)
				resp[2], resp[3] = 0x81, 0x80 // a response, recursion available, no error
				resp[6], resp[7] = 0, 0       // answers
				resp[8], resp[9], resp[10], resp[11] = 0, 0, 0, 0
				if qtype == 1 && addr.Is4() {
					resp[7] = 1
					a := addr.As4()
					resp = append(resp, 0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, a[0], a[1], a[2], a[3])
				}
				out := append([]byte{byte(len(resp) >> 8), byte(len(resp))}, resp...)
				if _, err := server.Write(out); err != nil {
					return
				}
			}
		}()
		return client, nil
	}
}

// BenchmarkCheck: the cost the guard adds to each dial.
func BenchmarkCheck(b *testing.B) {
	g := egress.New(netip.MustParsePrefix("10.1.0.0/16"), netip.MustParsePrefix("fd12::/64"))
	for _, a := range []string{"8.8.8.8:443", "127.0.0.1:80", "[2606:4700:4700::1111]:443", "[64:ff9b::a9fe:a9fe]:80"} {
		ap := netip.MustParseAddrPort(a)
		b.Run(a, func(b *testing.B) {
			for b.Loop() {
				_ = g.Check(ap, "bench")
			}
		})
	}
}
