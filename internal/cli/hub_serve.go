package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/mcpserver"
	"github.com/spf13/cobra"
)

// prepareWait is how long serve --stdio waits for the agent to list the
// tools before it prepares the sandbox and the catalog anyway (a client
// that calls before it lists).
const prepareWait = 250 * time.Millisecond

func newServeCmd(e *env) *cobra.Command {
	var (
		stdio    bool
		httpOn   bool
		port     int
		host     string
		profile  string
		pagePort int
		noShim   bool
		hubURL   string
		node     string
		lim      mcpserver.HTTPLimits
		srvf     serverFlags
	)
	c := &cobra.Command{
		Use:   "serve --stdio [--profile NAME] | --http [--port 4790 | --listen ADDR [--public-url URL] [--tls-cert FILE --tls-key FILE]]",
		Short: "Serve the hub to agents over MCP (search, describe, execute; or a profile's direct tools)",
		Long: `Serve the hub's MCP endpoint: exactly three tools, search, describe and execute.
--stdio is what an agent's config launches (stdout carries only the protocol; logs go to
stderr). --http listens on 127.0.0.1 (--port) and requires the bearer token kept in
$CAPABILITIES_HOME/hub/http-token (in the database with a database store; created on first serve, mode 600; printed by
` + "`capabilities hub http-token`" + `). A flood of clients is queued, never refused: every
connection is accepted (past 2048 open ones, a new one waits in the kernel's queue), and
requests take turns reading their bodies (--max-requests); a request past --max-waiting
is answered 503 with Retry-After, unserved.

--profile serves a profile (` + "`capabilities hub profiles`" + `): a direct-mode profile lists each of its
tools as an MCP tool of its own. --http serves every profile, each at /mcp/<profile>; /mcp is
default.

As a server (docs/serve-http.md): --listen ADDR (host:port) listens elsewhere than
loopback only with TLS: --tls-cert FILE --tls-key FILE serve HTTPS, or --public-url
https://NAME says TLS ends in a reverse proxy in front. --public-url is the address agents
use: its host and origin are accepted in Host and Origin besides loopback ones (nothing
else is). /healthz answers 200 while the process lives, /readyz 200 once the store reads
and the sandbox is warm (503 with the reason otherwise, and while draining); neither needs
the token. SIGTERM drains: /readyz turns 503, new connections are refused and new requests
answered 503 with Retry-After, the requests under way (an execute and its run) finish
within --drain-timeout (30s), then serve exits 0; a run still waiting for a person stays
recorded and resumes on any hub process later. A second SIGTERM, or SIGINT, stops at once.

When a run waits for a person's decision and the agent's client cannot ask through its
own form, serve opens the approval page in the person's browser (once per pending call):
the console on 127.0.0.1 (a free port unless --page-port) behind a one-time link the
model never sees. The browser is CAPABILITIES_BROWSER if set, else $BROWSER, else the
system's opener; CAPABILITIES_NO_BROWSER=1 turns it off. ` + "`capabilities hub approve`" + ` always works.

While a long-running hub serves (serve --http announces itself in
$CAPABILITIES_HOME/hub/endpoint.json), serve --stdio relays its session there and starts no
engine and no upstream of its own: every agent shares one process per source. It sends the
hub's token only over a connection on which the listener first proved it holds that token
(a challenge answered with an HMAC bound to the hub's address), so a rewritten or stale
endpoint.json gets nothing. A 503 with Retry-After is sent again after the time asked; a
busy hub is never taken for a stopped one (only a refused connection, or a listener that is
not the hub, is). When that hub stops, the next request is answered with an error saying so
and the ones after run on this process's own engine. When that hub runs but answers nothing
(stopped or stuck) while a request waits on it, the request is answered with an error naming
the hub's pid once the hub has left the shim's liveness probe unanswered for CAPABILITIES_HUB_LIVENESS (default
20s), and the next request goes to the hub again; a long execute (a person deciding, a slow
tool) is not cut, as the hub answers the probe meanwhile. --no-shim (or
CAPABILITIES_NO_SHIM=1) always runs its own engine.

--stdio --hub URL (or CAPABILITIES_HUB_URL) relays to a hub on another machine instead
(what ` + "`capabilities hub connect --hub URL`" + ` writes into each agent's config): to URL/mcp (a
profile's URL/mcp/<profile>), with the bearer token connect kept in this machine's keychain
for URL's host (or CAPABILITIES_HUB_TOKEN). It runs no engine of its own: a hub that does
not answer, or refuses the token, is an MCP error for the request, and the next request
tries the hub again. URL is https, or http to a loopback host only.`,
		Example: `  capabilities hub serve --stdio
  capabilities hub serve --http --port 4790
  capabilities hub serve --stdio --hub https://hub.example.com
  capabilities hub serve --http --listen 127.0.0.1:4790 --public-url https://hub.example.com
  capabilities hub serve --http --listen 0.0.0.0:4790 --public-url https://hub.example.com:4790 --tls-cert hub.crt --tls-key hub.key`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, args []string) error {
			if stdio == httpOn {
				return usagef("pass exactly one of --stdio or --http")
			}
			if err := hub.ValidProfileName(profile); err != nil {
				return usagef("--profile: %v", err)
			}
			if httpOn && c.Flags().Changed("profile") {
				return usagef("--profile goes with --stdio: serve --http serves every profile, each at /mcp/<profile> (/mcp is default)")
			}
			if !httpOn && srvf.any(c) {
				return usagef("--listen, --public-url, --tls-cert, --tls-key and --drain-timeout go with --http")
			}
			var server *serverSetup
			if httpOn {
				var err error
				if server, err = srvf.check(c, host, port); err != nil {
					return err
				}
				if node, err = serveNode(c, node, server.port); err != nil {
					return err
				}
			} else if c.Flags().Changed("node") {
				return usagef("--node goes with --http")
			}
			if !httpOn && (c.Flags().Changed("max-requests") || c.Flags().Changed("max-waiting")) {
				return usagef("--max-requests and --max-waiting go with --http")
			}
			if lim.MaxRequests < 0 || lim.MaxWaiting < 0 {
				return usagef("--max-requests and --max-waiting: pass a positive number, or 0 for the default")
			}
			if pagePort < 0 || pagePort > 65535 {
				return usagef("--page-port %d: pass 1 to 65535, or 0 for a free port", pagePort)
			}
			ctx, cancel := context.WithCancel(c.Context())
			defer cancel()
			// engine opens the hub and its MCP server; done releases them.
			engine := func(ctx context.Context) (*mcpserver.Server, hubStore, func(), error) {
				h, st, err := e.openHub()
				if err != nil {
					return nil, nil, nil, err
				}
				signer, err := hubSigner(ctx, st)
				if err != nil {
					h.Close()
					return nil, nil, nil, err
				}
				p, err := h.Profile(ctx, profile)
				if err != nil {
					h.Close()
					return nil, nil, nil, fmt.Errorf("serving profile %s: %w", profile, err)
				}
				ectx, ecancel := context.WithCancel(ctx)
				pages := newPageOpener(ectx, h, e.log, net.JoinHostPort("127.0.0.1", strconv.Itoa(pagePort)))
				restart := "restart `capabilities hub serve --http`"
				if stdio {
					restart = "restart this MCP server in the agent (or the agent)"
				}
				unavailable := watchGone(ectx, st, e.stderr, restart)
				opts := mcpserver.Options{Logger: e.log, Signer: signer, Pages: pages, Profile: p, Unavailable: unavailable, Node: node}
				listed := make(chan struct{})
				if stdio {
					opts.Listed = func() { close(listed) }
				}
				srv := mcpserver.New(h, opts)
				if server != nil {
					server.hub, server.unavailable = h, unavailable
				}
				if stdio {
					// The agent waits for the tool list; its first execute
					// comes after its model's turn. So the sandbox and the
					// catalog are built once the tools are listed, not beside
					// the start, whose CPU and page faults they would share
					// (BENCHMARKS.md, "serve --stdio lists its tools first").
					h.PrepareWhen(ectx, listed, prepareWait)
				} else {
					h.Prepare(ectx)
				}
				go func() {
					if err := h.Watch(ectx); err != nil {
						e.log.Warn("live configuration is off", "err", err)
					}
				}()
				if !stdio {
					// The long-running hub resumes a run once a person has
					// decided, wherever they decided.
					go func() {
						if err := h.FinishDecided(ectx); err != nil {
							e.log.Warn("runs are not resumed when a person decides", "err", err)
						}
					}()
				}
				return srv, st, func() { ecancel(); srv.Close(); pages.Close(); h.Close() }, nil
			}
			if raw := serveHubURL(c, hubURL); raw != "" {
				if !stdio {
					return usagef("--hub (and %s) goes with --stdio: it relays to the hub at that URL", hubURLVar)
				}
				return e.serveRemote(ctx, raw, profile)
			}
			if stdio {
				if !noShim && os.Getenv("CAPABILITIES_NO_SHIM") == "" {
					live, err := shimLiveness()
					if err != nil {
						return err
					}
					if shim := e.findShim(ctx, profile); shim != nil {
						shim.Liveness = live
						shim.Local = func(ctx context.Context) (*mcpserver.Server, func(), error) {
							srv, _, done, err := engine(ctx)
							return srv, done, err
						}
						return shim.Serve(ctx, os.Stdin, os.Stdout)
					}
				}
				srv, _, done, err := engine(ctx)
				if err != nil {
					return err
				}
				defer done()
				err = srv.Run(ctx)
				if err != nil && !errors.Is(err, context.Canceled) && !strings.Contains(err.Error(), "EOF") {
					return fmt.Errorf("serving over stdio: %w", err)
				}
				return nil
			}
			srv, st, done, err := engine(ctx)
			if err != nil {
				return err
			}
			defer done()
			// The token exists before the port accepts a connection, so a
			// client that sees the port open can read it; a port in use
			// leaves the token file as it was (one made for this serve is
			// taken back).
			token, created, tokenFile, tokenWhere, err := serveHTTPToken(ctx, st)
			if err != nil {
				return err
			}
			addr := server.addr
			// SIGTERM drains (a process manager's stop, a rolling
			// restart) instead of interrupting: taken from Main before the
			// port opens.
			drain, stopDrain := drainOnSIGTERM(e)
			defer stopDrain()
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				if created && tokenFile != "" {
					_ = os.Remove(tokenFile)
				}
				if errors.Is(err, syscall.EADDRINUSE) {
					return fmt.Errorf("listening on %s: port %d is in use (is another hub serving there? pick another %s)", addr, server.port, server.portFlag)
				}
				return fmt.Errorf("listening on %s: %w", addr, err)
			}
			defer ln.Close()
			scheme := "http"
			if server.tls != nil {
				scheme = "https"
			}
			endpoint := scheme + "://" + ln.Addr().String() + "/mcp"
			unannounce, err := mcpserver.Announce(st.Dir(), endpoint)
			if err != nil {
				return err
			}
			defer unannounce()
			fmt.Fprintf(e.stderr, "capabilities: serving MCP at %s (bearer token in %s)\n", endpoint, tokenWhere)
			if server.public != nil {
				fmt.Fprintf(e.stderr, "capabilities: agents reach it at %s\n", strings.TrimSuffix(server.public.String(), "/")+"/mcp")
			}
			// The runs this process resumes since a person decided
			// (FinishDecided) finish within the same drain time too; new
			// ones are left to the other processes (DrainDecided).
			drained := make(chan struct{})
			go func() {
				defer close(drained)
				select {
				case <-drain:
				case <-ctx.Done():
					return
				}
				dctx, dcancel := context.WithTimeout(ctx, srvf.drainTimeout)
				defer dcancel()
				if err := server.hub.DrainDecided(dctx); err != nil {
					e.log.Warn("runs resumed after a decision did not finish within --drain-timeout; they are stopped, and another hub process resumes them", "err", err)
				}
			}()
			err = srv.ServeHTTPWith(ctx, ln, mcpserver.Serving{
				Token: token, Limits: lim, PublicURL: server.public, TLS: server.tls,
				Ready: server.ready, Drain: drain, DrainTimeout: srvf.drainTimeout,
			})
			select {
			case <-drain:
				<-drained
			default:
			}
			return err
		},
	}
	c.Flags().BoolVar(&stdio, "stdio", false, "serve one agent over standard input and output")
	c.Flags().BoolVar(&httpOn, "http", false, "serve agents over streamable HTTP (on loopback, unless --listen)")
	c.Flags().IntVar(&port, "port", 4790, "the loopback `PORT` for --http")
	srvf.register(c)
	c.Flags().StringVar(&host, "host", "127.0.0.1", "the loopback `ADDRESS` to listen on with --http (only loopback is accepted)")
	c.Flags().IntVar(&lim.MaxRequests, "max-requests", 0, "with --http, how many requests read their bodies at once, `N` (0: 64); the others wait for their turn")
	c.Flags().IntVar(&lim.MaxWaiting, "max-waiting", 0, "with --http, how many requests may wait for their turn, `N` (0: as many as open connections, 2048); past it one is answered 503 with Retry-After, unserved")
	c.Flags().IntVar(&pagePort, "page-port", 0, "the loopback `PORT` of the approval page (0: a free one)")
	c.Flags().BoolVar(&noShim, "no-shim", false, "with --stdio, run this process's own engine even when a long-running hub is serving (also CAPABILITIES_NO_SHIM=1)")
	c.Flags().StringVar(&node, "node", "", "with --http, this process's `NAME` among the hub's processes: each session id begins with it, for a proxy to route by (docs/serve-behind-nginx.md; also CAPABILITIES_NODE; default: the host name and the port)")
	c.Flags().StringVar(&profile, "profile", hub.DefaultProfile, "the profile `NAME` to serve with --stdio (see capabilities hub profiles)")
	c.Flags().StringVar(&hubURL, "hub", "", "with --stdio, relay to the hub at `URL` on another machine, with the token connect --hub kept (also "+hubURLVar+"; docs/serve-http.md)")
	return c
}

// serveHubURL is --hub, else CAPABILITIES_HUB_URL ("" for this machine's
// hub).
func serveHubURL(c *cobra.Command, flag string) string {
	if c.Flags().Changed("hub") {
		if flag == "" {
			return " " // refused by remoteHub as empty
		}
		return flag
	}
	return os.Getenv(hubURLVar)
}

// serveRemote relays stdio to the hub at raw (serve --stdio --hub): no
// engine of this process's own, whatever happens.
func (e *env) serveRemote(ctx context.Context, raw, profile string) error {
	base, host, err := remoteHub("--hub", strings.TrimSpace(raw))
	if err != nil {
		return err
	}
	tok, err := e.remoteHubToken(ctx, base, host)
	if err != nil {
		return err
	}
	live, err := shimLiveness()
	if err != nil {
		return err
	}
	ep := hubEndpoint(base, profile)
	e.log.Info("relaying to the remote hub", "url", ep)
	shim := &mcpserver.Shim{Endpoint: mcpserver.Endpoint{URL: ep}, Token: tok, Remote: true, Logger: e.log, Liveness: live}
	return shim.Serve(ctx, os.Stdin, os.Stdout)
}

// serveNode is the node name of serve --http: --node, else CAPABILITIES_NODE,
// else the host name and the port (mcpserver.DefaultNode).
func serveNode(c *cobra.Command, flag string, port int) (string, error) {
	node, from := flag, "--node"
	if !c.Flags().Changed("node") {
		node, from = os.Getenv("CAPABILITIES_NODE"), "CAPABILITIES_NODE"
	}
	if node == "" {
		host, _ := os.Hostname()
		return mcpserver.DefaultNode(host, port), nil
	}
	if err := mcpserver.ValidNode(node); err != nil {
		return "", usagef("%s: %v", from, err)
	}
	return node, nil
}

// shimLiveness is CAPABILITIES_HUB_LIVENESS, or 0 for the shim's default.
func shimLiveness() (time.Duration, error) {
	v := os.Getenv("CAPABILITIES_HUB_LIVENESS")
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("CAPABILITIES_HUB_LIVENESS=%q: write a positive duration such as 20s or 1m", v)
	}
	return d, nil
}

// findShim returns a relay to the long-running hub announced in the store,
// or nil when there is none answering (serve --stdio then runs its own
// engine).
func (e *env) findShim(ctx context.Context, profile string) *mcpserver.Shim {
	dir, err := hubDir()
	if err != nil {
		return nil
	}
	ep, tok, ok, why := mcpserver.FindHub(ctx, dir)
	if !ok {
		e.log.Debug("serving with this process's own engine", "why", why)
		return nil
	}
	if profile != hub.DefaultProfile {
		ep.URL = strings.TrimSuffix(ep.URL, "/") + "/" + profile
	}
	e.log.Info("relaying to the long-running hub", "url", ep.URL, "pid", ep.PID)
	return &mcpserver.Shim{Endpoint: ep, Token: tok, TokenPath: filepath.Join(dir, mcpserver.TokenFile), Logger: e.log}
}
