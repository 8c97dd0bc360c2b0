package cli

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/mcpserver"
	"github.com/spf13/cobra"
)

// serverFlags are serve --http's flags for serving as a server: another
// address than loopback, TLS, the public URL behind a proxy, the drain.
type serverFlags struct {
	listen       string
	publicURL    string
	tlsCert      string
	tlsKey       string
	drainTimeout time.Duration
}

var serverFlagNames = []string{"listen", "public-url", "tls-cert", "tls-key", "drain-timeout"}

func (f *serverFlags) register(c *cobra.Command) {
	c.Flags().StringVar(&f.listen, "listen", "", "with --http, the `ADDR` (host:port) to listen on instead of --host and --port; other than loopback only with TLS (--tls-cert and --tls-key, or an https --public-url in front)")
	c.Flags().StringVar(&f.publicURL, "public-url", "", "with --http, the `URL` agents reach the hub at (a reverse proxy in front): its host and origin are accepted in Host and Origin; https:// says TLS ends in front")
	c.Flags().StringVar(&f.tlsCert, "tls-cert", "", "with --http, serve HTTPS with this certificate `FILE` (PEM; with --tls-key)")
	c.Flags().StringVar(&f.tlsKey, "tls-key", "", "with --http, the private key `FILE` of --tls-cert (PEM)")
	c.Flags().DurationVar(&f.drainTimeout, "drain-timeout", mcpserver.DefaultDrainTimeout, "with --http, how long requests under way may take to finish after SIGTERM, `DURATION`")
}

// any reports whether one of the flags was given.
func (f *serverFlags) any(c *cobra.Command) bool {
	for _, n := range serverFlagNames {
		if c.Flags().Changed(n) {
			return true
		}
	}
	return false
}

// serverSetup is what the flags resolve to.
type serverSetup struct {
	addr     string
	port     int
	portFlag string // the flag that named the port, for an error
	public   *url.URL
	tls      *tls.Config
	hub      *hub.Hub // set once the engine is open
	// unavailable says the hub's store is gone (watchGone), set with hub.
	unavailable func() error
}

// isLoopback reports whether a listen host is this machine only.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// check validates the flags (with --host and --port) before anything is
// opened: an address other than loopback is refused without TLS.
func (f *serverFlags) check(c *cobra.Command, host string, port int) (*serverSetup, error) {
	s := &serverSetup{portFlag: "--port"}
	if f.drainTimeout <= 0 {
		return nil, usagef("--drain-timeout %v: pass a positive duration, such as 30s", f.drainTimeout)
	}
	if f.listen != "" {
		if c.Flags().Changed("host") || c.Flags().Changed("port") {
			return nil, usagef("--listen takes the place of --host and --port: pass --listen HOST:PORT alone")
		}
		h, p, err := net.SplitHostPort(f.listen)
		if err != nil {
			return nil, usagef("--listen %q: write HOST:PORT, such as 127.0.0.1:4790 or 0.0.0.0:4790", f.listen)
		}
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return nil, usagef("--listen %q: the port must be 1 to 65535", f.listen)
		}
		host, port, s.portFlag = h, n, "--listen port"
	} else {
		if !isLoopback(host) {
			return nil, usagef("--host %q: --host takes only loopback (127.0.0.1, ::1 or localhost); to serve other machines, use --listen ADDR with TLS (see --help)", host)
		}
		if port < 1 || port > 65535 {
			return nil, usagef("--port %d: pass 1 to 65535", port)
		}
	}
	s.addr, s.port = net.JoinHostPort(host, strconv.Itoa(port)), port
	if f.publicURL != "" {
		u, err := mcpserver.ParsePublicURL(f.publicURL)
		if err != nil {
			return nil, usagef("--public-url %v", err)
		}
		s.public = u
	}
	if (f.tlsCert == "") != (f.tlsKey == "") {
		return nil, usagef("--tls-cert and --tls-key go together: pass both, the certificate and its private key (PEM files)")
	}
	if f.tlsCert != "" {
		cert, err := tls.LoadX509KeyPair(f.tlsCert, f.tlsKey)
		if err != nil {
			return nil, fmt.Errorf("reading --tls-cert %s and --tls-key %s: %w (both PEM: the certificate chain, and its unencrypted private key)", f.tlsCert, f.tlsKey, err)
		}
		s.tls = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	if !isLoopback(host) {
		if s.tls == nil && (s.public == nil || s.public.Scheme != "https") {
			return nil, usagef("--listen %s is not a loopback address, and the hub serves other machines only over TLS (the bearer token would cross the network in clear): pass --tls-cert FILE --tls-key FILE to serve HTTPS, or --public-url https://NAME when a reverse proxy in front ends TLS (docs/serve-http.md)", s.addr)
		}
		if s.public == nil {
			return nil, usagef("--listen %s is not a loopback address: pass --public-url https://NAME:PORT too, the address agents use (the hub accepts only its host in Host and Origin, besides loopback)", s.addr)
		}
	}
	return s, nil
}

// ready is /readyz's check: the store reads and the sandbox is warm. Its
// reasons name nothing of the hub's data (the probe needs no token).
func (s *serverSetup) ready(ctx context.Context) error {
	if s.hub == nil {
		return errors.New("starting")
	}
	if s.unavailable != nil && s.unavailable() != nil {
		return errors.New("the hub's store is gone (the hub's log says why)")
	}
	if _, err := s.hub.Policy(ctx); err != nil {
		return errors.New("the hub's store cannot be read (the hub's log says why)")
	}
	if !s.hub.SandboxReady() {
		return errors.New("the sandbox is starting")
	}
	return nil
}

// drainOnSIGTERM takes SIGTERM from Main (which would interrupt the
// command, and exit 143 after its wind-down): the channel closes on the
// first SIGTERM, and serve drains and exits 0; a second SIGTERM ends the
// process at once. SIGINT and SIGHUP still interrupt. stop gives SIGTERM
// back to its default.
func drainOnSIGTERM(e *env) (drain <-chan struct{}, stop func()) {
	d := make(chan struct{})
	sigs := make(chan os.Signal, 2)
	// Ignore removes SIGTERM from every channel Notify gave it to (Main's);
	// Notify then gives it to this one alone.
	signal.Ignore(syscall.SIGTERM)
	signal.Notify(sigs, syscall.SIGTERM)
	stopped := make(chan struct{})
	go func() {
		select {
		case <-sigs:
		case <-stopped:
			return
		}
		fmt.Fprintln(e.stderr, "capabilities: SIGTERM: draining: new requests are refused, the ones under way finish (a second SIGTERM stops at once)")
		close(d)
		select {
		case <-sigs:
			fmt.Fprintln(e.stderr, "capabilities: a second SIGTERM: stopping now")
			os.Exit(128 + int(syscall.SIGTERM))
		case <-stopped:
		}
	}()
	return d, func() {
		signal.Stop(sigs)
		close(stopped)
	}
}
