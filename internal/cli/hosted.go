package cli

import (
	"context"
	"crypto/hkdf"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/capabilities-sh/capabilities/engine/authserver/pgstore"
	"github.com/capabilities-sh/capabilities/engine/dashboard"
	"github.com/capabilities-sh/capabilities/engine/egress"
	"github.com/capabilities-sh/capabilities/engine/hosted"
	"github.com/capabilities-sh/capabilities/engine/identity"
	idstore "github.com/capabilities-sh/capabilities/engine/identity/pgstore"
	"github.com/capabilities-sh/capabilities/engine/inbox"
	"github.com/capabilities-sh/capabilities/engine/mcpserver"
	"github.com/capabilities-sh/capabilities/engine/push"
	"github.com/capabilities-sh/capabilities/engine/secret"
	"github.com/capabilities-sh/capabilities/store"
	"github.com/capabilities-sh/capabilities/store/postgres"
)

// hostedEnvPrefix prefixes the environment variable of each of hosted
// serve's flags: --public-url is CAPABILITIES_HOSTED_PUBLIC_URL.
const hostedEnvPrefix = "CAPABILITIES_HOSTED_"

// hostedEnvName is the environment variable of flag name.
func hostedEnvName(name string) string {
	return hostedEnvPrefix + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

func newHostedCmd(e *env) *cobra.Command {
	c := &cobra.Command{
		Use:   "hosted",
		Short: "Run the hosted hub: one service for many people, each signed in to a hub of their own",
		Args:  subcommands,
		RunE:  func(c *cobra.Command, args []string) error { return c.Help() },
	}
	c.AddCommand(newHostedServeCmd(e))
	return c
}

// hostedFlags are hosted serve's flags.
type hostedFlags struct {
	publicURL, listen, kekFile            string
	idpIssuer, idpClientID, idpSecretFile string
	tlsCert, tlsKey, node                 string
	allow                                 egress.Ranges
	proxies                               proxyRanges
	idle, drain                           time.Duration
	maxOpen                               int
}

// hostedRequired are the flags hosted serve cannot start without, and what
// each is, for the message that names the missing ones.
var hostedRequired = []struct{ name, what string }{
	{"store", "the PostgreSQL database, postgres://USER:PASSWORD@HOST:PORT/DATABASE"},
	{"public-url", "the https URL people and agents reach the hub at, such as https://hub.example.com"},
	{"listen", "the HOST:PORT to listen on, such as 0.0.0.0:8443 or 127.0.0.1:8080 behind a proxy"},
	{"kek-file", "the key-encryption key sealing the tenants' secrets (make one with `capabilities hub secrets generate-kek FILE`)"},
	{"idp-issuer", "the OpenID Connect provider's issuer URL people sign in with"},
	{"idp-client-id", "the hub's client ID at that provider"},
	{"idp-client-secret-file", "a file holding the hub's client secret at that provider"},
}

func newHostedServeCmd(e *env) *cobra.Command {
	var f hostedFlags
	c := &cobra.Command{
		Use:   "serve",
		Short: "Serve the hosted hub: /mcp behind OAuth, sign-in, the person's API and the dashboard",
		Long: `Serve the hosted hub: one process (or several behind a proxy, on the same
database) serving many people, each a tenant with a hub of their own, signed
in through the operator's OpenID Connect provider.

It serves, at --public-url:
  /mcp                the MCP endpoint (search, describe, execute), behind OAuth 2.1:
                      add PUBLIC-URL/mcp as a connector in claude.ai, ChatGPT or any MCP client
  /authorize, /token, /register, /revoke, /.well-known/…   the OAuth authorization server
  /signin, /signout   sign-in through the identity provider
  /api/push/…, /api/status, /api/inbox…   the person's own API (capabilities hub login/push/status, the desktop app)
  /                   the dashboard

Sources on a hosted hub are remote (streamable HTTP MCP servers, OpenAPI
documents); their traffic reaches only public addresses, and the ranges
--allow-egress adds. Each tenant's secrets are sealed in the database under
--kek-file's key.

Every flag may also come from the environment: CAPABILITIES_HOSTED_ and the
flag's name in capitals, - as _ (CAPABILITIES_HOSTED_PUBLIC_URL;
CAPABILITIES_HOSTED_ALLOW_EGRESS takes ranges separated by commas).`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if err := hostedFromEnv(c, e); err != nil {
				return err
			}
			cfg, err := f.check(c, e)
			if err != nil {
				return err
			}
			return e.serveHosted(c.Context(), &f, cfg)
		},
	}
	fl := c.Flags()
	fl.StringVar(&f.publicURL, "public-url", "", "the `URL` people and agents reach the hub at: https (http only on a loopback host, for a test), no path")
	fl.StringVar(&f.listen, "listen", "", "the `ADDR` (HOST:PORT) to listen on; a non-loopback address needs --tls-cert and --tls-key, or a proxy ending TLS in front (an https --public-url)")
	fl.StringVar(&f.kekFile, "kek-file", "", "the key-encryption key `FILE` (32 random bytes or their base64, mode 600) that seals each tenant's secrets and keys the sign-in cookies")
	fl.StringVar(&f.idpIssuer, "idp-issuer", "", "the OpenID Connect provider's issuer `URL` (its discovery document is at URL/.well-known/openid-configuration)")
	fl.StringVar(&f.idpClientID, "idp-client-id", "", "the hub's client `ID` at the identity provider (its redirect URI is PUBLIC-URL/signin/callback)")
	fl.StringVar(&f.idpSecretFile, "idp-client-secret-file", "", "a `FILE` holding the hub's client secret at the identity provider")
	fl.Var(&f.allow, "allow-egress", "let sources reach this `CIDR` range (or address) besides public addresses, such as 10.0.0.0/8; repeat for more")
	fl.Var(&f.proxies, "trusted-proxy", "believe X-Forwarded-For (its last address) from this reverse proxy's `CIDR` range (or address), for the rate limit of OAuth client registration; repeat for more (default: loopback, a proxy on the same host)")
	fl.StringVar(&f.tlsCert, "tls-cert", "", "serve HTTPS with this certificate `FILE` (PEM; with --tls-key)")
	fl.StringVar(&f.tlsKey, "tls-key", "", "the private key `FILE` of --tls-cert (PEM)")
	fl.StringVar(&f.node, "node", "", "this process's `NAME` among the hub's replicas: each MCP session id begins with it, for a proxy to route by")
	fl.DurationVar(&f.idle, "idle-timeout", hosted.DefaultIdleTimeout, "close a tenant's hub no request has used for this `DURATION`")
	fl.IntVar(&f.maxOpen, "max-open", hosted.DefaultMaxOpen, "keep at most `N` tenants' hubs open at once: one more closes the least recently used idle one")
	fl.DurationVar(&f.drain, "drain-timeout", mcpserver.DefaultDrainTimeout, "how long requests under way may take to finish after SIGTERM, `DURATION`")
	return c
}

// hostedFromEnv sets each flag not given from its environment variable
// (and --store, the global flag, from CAPABILITIES_HOSTED_STORE).
func hostedFromEnv(c *cobra.Command, e *env) error {
	var err error
	c.Flags().VisitAll(func(fl *pflag.Flag) {
		if err != nil || fl.Changed || fl.Name == "help" {
			return
		}
		name := hostedEnvName(fl.Name)
		v, ok := os.LookupEnv(name)
		if !ok || v == "" {
			return
		}
		if serr := fl.Value.Set(v); serr != nil {
			err = usagef("%s=%q: %v", name, v, serr)
			return
		}
		fl.Changed = true
	})
	if err != nil {
		return err
	}
	if e.store == "" {
		e.store = os.Getenv(hostedEnvName("store"))
	}
	if e.store == "" {
		e.store = os.Getenv("CAPABILITIES_STORE")
	}
	return nil
}

// hostedSetup is what the flags resolve to, before anything is opened.
type hostedSetup struct {
	public *url.URL
	addr   string
	tls    *tls.Config
	kek    *secret.KEK
	keys   []byte // the KEK file's content: the cookie and consent keys derive from it
}

// check validates every flag before anything is opened.
func (f *hostedFlags) check(c *cobra.Command, e *env) (*hostedSetup, error) {
	given := map[string]string{"store": e.store, "public-url": f.publicURL, "listen": f.listen, "kek-file": f.kekFile,
		"idp-issuer": f.idpIssuer, "idp-client-id": f.idpClientID, "idp-client-secret-file": f.idpSecretFile}
	var missing []string
	for _, r := range hostedRequired {
		if strings.TrimSpace(given[r.name]) == "" {
			missing = append(missing, fmt.Sprintf("  --%s (or %s): %s", r.name, hostedEnvName(r.name), r.what))
		}
	}
	if len(missing) > 0 {
		return nil, usagef("hosted serve needs these settings, missing:\n%s", strings.Join(missing, "\n"))
	}
	s := &hostedSetup{}
	if !strings.HasPrefix(e.store, "postgres://") && !strings.HasPrefix(e.store, "postgresql://") {
		return nil, usagef("--store: the hosted hub keeps every tenant in PostgreSQL: give a postgres://USER:PASSWORD@HOST:PORT/DATABASE URL")
	}
	pub, err := mcpserver.ParsePublicURL(f.publicURL)
	if err != nil {
		return nil, usagef("--public-url %v", err)
	}
	if pub.Path != "" && pub.Path != "/" {
		return nil, usagef("--public-url %q has a path; give the base URL, such as https://hub.example.com (the hub serves /mcp, /signin… under it)", f.publicURL)
	}
	if pub.Scheme != "https" && !isLoopback(pub.Hostname()) {
		return nil, usagef("--public-url %q: people sign in and tokens travel there, so it must be https (http only on a loopback host, for a test)", f.publicURL)
	}
	s.public = pub
	host, port, err := net.SplitHostPort(f.listen)
	if err != nil {
		return nil, usagef("--listen %q: write HOST:PORT, such as 0.0.0.0:8443 or 127.0.0.1:8080", f.listen)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return nil, usagef("--listen %q: the port must be 0 to 65535", f.listen)
	}
	s.addr = f.listen
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
	if !isLoopback(host) && s.tls == nil && pub.Scheme != "https" {
		return nil, usagef("--listen %s is not a loopback address, and tokens would cross the network in clear: pass --tls-cert FILE --tls-key FILE, or an https --public-url with a proxy ending TLS in front", f.listen)
	}
	if f.maxOpen < 1 {
		return nil, usagef("--max-open %d: pass 1 or more", f.maxOpen)
	}
	if f.idle <= 0 || f.drain <= 0 {
		return nil, usagef("--idle-timeout and --drain-timeout: pass a positive duration, such as 10m or 30s")
	}
	if f.node != "" {
		if err := mcpserver.ValidNode(f.node); err != nil {
			return nil, usagef("--node: %v", err)
		}
	}
	if _, err := url.Parse(f.idpIssuer); err != nil || !strings.HasPrefix(f.idpIssuer, "http") {
		return nil, usagef("--idp-issuer %q: give the provider's issuer URL, such as https://accounts.example.com", f.idpIssuer)
	}
	if s.kek, err = secret.ReadKEKFile(f.kekFile); err != nil {
		return nil, fmt.Errorf("--kek-file: %w", err)
	}
	raw, err := os.ReadFile(f.kekFile)
	if err != nil {
		return nil, fmt.Errorf("--kek-file: %w", err)
	}
	s.keys = []byte(strings.TrimSpace(string(raw)))
	if fi, err := os.Stat(f.idpSecretFile); err != nil {
		return nil, fmt.Errorf("--idp-client-secret-file: %w", err)
	} else if !fi.Mode().IsRegular() {
		return nil, usagef("--idp-client-secret-file %s is not a regular file", f.idpSecretFile)
	}
	return s, nil
}

// derivedKey is a key for purpose, derived from the KEK file's content
// (HKDF-SHA256): the same on every replica, never stored.
func derivedKey(ikm []byte, purpose string) ([]byte, error) {
	return hkdf.Key(sha256.New, ikm, []byte("capabilities hosted hub"), purpose, 32)
}

// serveHosted opens the database, the identity provider and the server,
// and serves until the command's context ends (or SIGTERM drains it).
func (e *env) serveHosted(ctx context.Context, f *hostedFlags, s *hostedSetup) error {
	if err := postgres.Migrate(ctx, e.store); err != nil {
		return err
	}
	root, err := postgres.Open(ctx, e.store)
	if err != nil {
		return err
	}
	defer root.Close()
	cookieKey, err := derivedKey(s.keys, "sign-in cookies")
	if err != nil {
		return err
	}
	consentKey, err := derivedKey(s.keys, "oauth consent forms")
	if err != nil {
		return err
	}
	base := strings.TrimSuffix(s.public.String(), "/")
	rp, err := identity.New(ctx, identity.Config{Issuer: f.idpIssuer, ClientID: f.idpClientID, ClientSecretFile: f.idpSecretFile,
		PublicURL: base, Key: cookieKey, Store: idstore.New(root.Pool()), Logger: e.log})
	if err != nil {
		return err
	}
	var dashErr error
	srv, err := hosted.New(hosted.Config{
		PublicURL: base,
		Stores: func(_ context.Context, tenant string) (store.Store, error) {
			if tenant == "" {
				return nil, errors.New("a tenant's store: the tenant id is empty")
			}
			if err := postgres.ValidTenant(tenant); err != nil {
				return nil, err
			}
			return root.Tenant(tenant), nil
		},
		KEK:         s.kek,
		Auth:        pgstore.New(root.Pool()),
		Identity:    rp,
		ConsentKey:  consentKey,
		Egress:      f.allow.Guard(),
		IdleTimeout: f.idle,
		MaxOpen:     f.maxOpen,
		Node:        f.node,
		Push:        func(h hosted.HubFunc) http.Handler { return push.Handler(h) },
		Inbox:       func(h hosted.HubFunc) http.Handler { return inbox.Handler(h) },
		Dashboard: func(h hosted.HubFunc) http.Handler {
			d, err := dashboard.New(dashboard.Config{RP: rp, PublicURL: base, Hub: h, Logger: e.log})
			if err != nil {
				dashErr = err
				return http.NotFoundHandler()
			}
			return d
		},
		Ready: func(ctx context.Context) error {
			if err := root.Pool().Ping(ctx); err != nil {
				return errors.New("the database does not answer")
			}
			return nil
		},
		TrustedProxies: f.proxies, // nil (no --trusted-proxy): loopback
		Logger:         e.log,
	})
	if err != nil {
		return err
	}
	defer srv.Close()
	if dashErr != nil {
		return fmt.Errorf("starting the dashboard: %w", dashErr)
	}
	drain, stopDrain := drainOnSIGTERM(e)
	defer stopDrain()
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return fmt.Errorf("listening on %s: the port is in use; pick another --listen", s.addr)
		}
		return fmt.Errorf("listening on %s: %w", s.addr, err)
	}
	defer ln.Close()
	hs := &http.Server{
		Handler:           srv.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		TLSConfig:         s.tls,
		ErrorLog:          nil,
	}
	scheme := "http"
	if s.tls != nil {
		scheme = "https"
	}
	fmt.Fprintf(e.stderr, "capabilities: the hosted hub listens on %s://%s; people and agents reach it at %s (add %s/mcp as a connector)\n", scheme, ln.Addr(), base, base)
	if len(f.allow) > 0 {
		fmt.Fprintf(e.stderr, "capabilities: sources may also reach %s (--allow-egress)\n", f.allow.String())
	}
	if len(f.proxies) > 0 {
		fmt.Fprintf(e.stderr, "capabilities: X-Forwarded-For names the client when the request comes from %s (--trusted-proxy)\n", f.proxies.String())
	}
	errc := make(chan error, 1)
	go func() {
		if s.tls != nil {
			errc <- hs.ServeTLS(ln, "", "")
		} else {
			errc <- hs.Serve(ln)
		}
	}()
	timeout := 5 * time.Second
	select {
	case err := <-errc:
		return fmt.Errorf("serving: %w", err)
	case <-drain:
		timeout = f.drain
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		hs.Close()
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving: %w", err)
	}
	return nil
}

// proxyRanges is the value of a repeatable --trusted-proxy flag: each Set
// adds CIDR ranges or addresses, separated by commas or spaces (the form of
// CAPABILITIES_HOSTED_TRUSTED_PROXY).
type proxyRanges []netip.Prefix

func (r *proxyRanges) Set(s string) error {
	ps, err := egress.ParseRanges("--trusted-proxy", s)
	if err != nil {
		return err
	}
	*r = append(*r, ps...)
	return nil
}

func (r *proxyRanges) String() string {
	if r == nil {
		return ""
	}
	ss := make([]string, len(*r))
	for i, p := range *r {
		ss[i] = p.String()
	}
	return strings.Join(ss, ",")
}

func (r *proxyRanges) Type() string { return "CIDR" }
