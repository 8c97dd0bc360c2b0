package cli

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/oauth"
	"github.com/capabilities-sh/capabilities/engine/source"
	"github.com/capabilities-sh/capabilities/internal/browser"
	"github.com/spf13/cobra"
	"golang.org/x/term"
)

func newAuthCmd(e *env) *cobra.Command {
	var (
		conn         string
		envVar       string
		header       string
		asJSON       bool
		clientID     string
		secretStdin  bool
		metadataURL  string
		scopes       []string
		noBrowser    bool
		oauthTimeout time.Duration
		forceOAuth   bool
	)
	c := &cobra.Command{
		Use:   "auth <namespace> [--connection NAME] [--env VAR | --header NAME | --client-id ID] [--scope S]...",
		Short: "Sign in to a source (OAuth), or store a credential for it, in the OS keychain",
		Long: `Sign in to a remote MCP server that asks for OAuth (it answers 401 with a Bearer
challenge, or was added as such): the hub finds its authorization server, registers itself
(or uses --client-id, its secret read at a masked prompt or with --client-secret-stdin),
opens the authorization page in your browser (the URL is printed too, for a machine with
no browser) and waits on 127.0.0.1 for the answer. The tokens go to the OS keychain as the
connection's secret; the hub refreshes them and sends them only to that server's origin.
Run it again when a call says "sign in again". An OpenAPI source whose document chooses
an oauth2 authorization code flow (or an openIdConnect scheme) signs in the same way (with
--oauth or --client-id when the document offers another scheme too); its tokens go only to
the API's server.

Otherwise store a credential for a source under a connection (default: "default"). The
value is read at a masked prompt, or from standard input when it is not a terminal —
never from an argument. It goes to the OS keychain (a mode-600 file when there is none,
announced each time) and reaches the upstream only when a call needs it: as the
environment variable --env of a local server, or the header --header of a remote one
(default Authorization: Bearer).`,
		Example: `  capabilities hub auth github --env GITHUB_PERSONAL_ACCESS_TOKEN
  capabilities hub auth github --connection work
  printf %s "$TOKEN" | capabilities hub auth linear --header X-API-Key
  capabilities hub auth notion                      # an OAuth server: sign in in the browser
  capabilities hub auth acme --client-id hub-cli --scope read --scope write`,
		Args:              exactArgs(1, "one namespace"),
		ValidArgsFunction: complete(byPosition(namespaces)),
		RunE: e.withHub(func(c *cobra.Command, args []string, h *hub.Hub, _ hubStore) error {
			src, err := h.Source(c.Context(), args[0])
			if err != nil {
				return err
			}
			oauthFlags := forceOAuth || clientID != "" || len(scopes) > 0 || secretStdin || metadataURL != ""
			if oauthFlags && (envVar != "" || header != "") {
				return usagef("--oauth, --client-id, --scope and --client-secret-stdin are for an OAuth sign-in; --env and --header store a static credential")
			}
			if envVar == "" && header == "" {
				wants, err := wantsOAuth(c.Context(), h, src, conn, oauthFlags)
				if err != nil {
					return err
				}
				if wants {
					return signIn(c.Context(), e, h, signInFlags{ns: args[0], conn: conn, clientID: clientID, secretStdin: secretStdin, metadataURL: metadataURL, scopes: scopes, noBrowser: noBrowser, timeout: oauthTimeout, asJSON: asJSON})
				}
			}
			name := conn
			if name == "" {
				name = hub.DefaultConnection
			}
			value, err := e.readSecret(fmt.Sprintf("Credential for %s/%s (input hidden): ", args[0], name))
			if err != nil {
				return err
			}
			conns, err := h.Auth(c.Context(), hub.AuthRequest{Namespace: args[0], Connection: conn, Value: value, Env: envVar, Header: header})
			if err != nil {
				return err
			}
			if asJSON {
				return e.printJSON(map[string]any{"namespace": args[0], "connection": name, "default": conns.Default, "secrets": h.SecretStatus()})
			}
			fmt.Fprintf(e.stdout, "Stored the credential for %s/%s (%s).\n", args[0], name, h.SecretStatus())
			return nil
		}),
	}
	c.Flags().StringVar(&conn, "connection", "", "the connection `NAME` to store the credential under (default: default)")
	c.Flags().StringVar(&envVar, "env", "", "the environment variable `NAME` a local server reads the credential from")
	c.Flags().StringVar(&header, "header", "", "the HTTP header `NAME` a remote server reads the credential from (default Authorization: Bearer)")
	c.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	c.Flags().StringVar(&clientID, "client-id", "", "OAuth: the `ID` of a client registered with the authorization server (its secret is asked for at a masked prompt)")
	c.Flags().BoolVar(&secretStdin, "client-secret-stdin", false, "OAuth: read the --client-id's secret from standard input (empty for a public client)")
	c.Flags().StringVar(&metadataURL, "client-metadata-url", "", "OAuth: an https `URL` serving the hub's client ID metadata document, used when the authorization server supports them")
	c.Flags().StringArrayVar(&scopes, "scope", nil, "OAuth: a `SCOPE` to ask for (repeatable; default: what the server asks for)")
	c.Flags().BoolVar(&forceOAuth, "oauth", false, "sign in with OAuth even when the server publishes no OAuth metadata (a 2025-03-26 server with the default endpoints)")
	c.Flags().BoolVar(&noBrowser, "no-browser", false, "OAuth: only print the authorization URL, do not open a browser")
	c.Flags().DurationVar(&oauthTimeout, "timeout", 5*time.Minute, "OAuth: wait at most `DURATION` for the sign-in in the browser")
	_ = c.RegisterFlagCompletionFunc("connection", complete(connectionsOf))
	return c
}

// wantsOAuth decides whether `hub auth` signs in rather than storing a
// static credential: the source was added as OAuth, the connection already
// is one, an OAuth flag was given (--oauth forces it), or the server answers
// 401 with a Bearer challenge now and publishes OAuth metadata.
func wantsOAuth(ctx context.Context, h *hub.Hub, src *model.Source, conn string, flags bool) (bool, error) {
	switch src.Kind {
	case model.KindOpenAPI:
		// Its document's oauth2 flow: when its document chose that scheme,
		// the connection was made by signing in, or when asked (--oauth,
		// --client-id).
		if flags || src.Auth == model.AuthOAuth {
			return true, nil
		}
		if conns, err := h.Connections(ctx, src.Namespace); err == nil {
			if c := conns.Get(conn); c != nil && c.Auth == model.AuthOAuth {
				return true, nil
			}
		}
		return false, nil
	case model.KindHTTP:
	default:
		if flags {
			return false, usagef("%s is a local command: OAuth sign-in is for remote MCP servers and OpenAPI sources", src.Namespace)
		}
		return false, nil
	}
	if flags || src.Auth == model.AuthOAuth {
		return true, nil
	}
	if conns, err := h.Connections(ctx, src.Namespace); err == nil {
		if c := conns.Get(conn); c != nil && c.Auth == model.AuthOAuth {
			return true, nil
		}
	}
	hc, err := source.ProbeClient(src)
	if err != nil {
		return false, err
	}
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	ch, status, err := oauth.Probe(pctx, hc, src.URL)
	if err != nil || status != http.StatusUnauthorized {
		return false, nil // unreachable now, or open: a static credential can still be stored
	}
	return oauth.Protected(pctx, &http.Client{Timeout: 30 * time.Second}, src.URL, ch), nil
}

type signInFlags struct {
	ns, conn, clientID, metadataURL string
	secretStdin, noBrowser, asJSON  bool
	scopes                          []string
	timeout                         time.Duration
}

// signIn runs the OAuth flow for `hub auth`, then lists the source's tools
// when it had none (it was added before anyone signed in).
func signIn(ctx context.Context, e *env, h *hub.Hub, f signInFlags) error {
	name := f.conn
	if name == "" {
		name = hub.DefaultConnection
	}
	req := hub.SignInRequest{Namespace: f.ns, Connection: f.conn, ClientID: f.clientID, ClientMetadataURL: f.metadataURL, Scopes: f.scopes}
	if f.clientID != "" && (f.secretStdin || e.stdinIsTerminal()) {
		v, err := e.readSecret(fmt.Sprintf("Client secret of %s (input hidden; empty for a public client): ", f.clientID))
		if err != nil && !f.secretStdin {
			return err
		}
		req.ClientSecret = strings.TrimSpace(v)
	}
	req.Open = func(authURL string) error {
		fmt.Fprintf(e.stderr, "Sign in to %s in your browser. If no page opens, open this URL:\n  %s\n", f.ns, authURL)
		if f.noBrowser {
			return nil
		}
		if err := browser.Open(authURL); err != nil {
			fmt.Fprintf(e.stderr, "(no browser opened: %v)\n", err)
		}
		return nil
	}
	sctx, cancel := context.WithTimeoutCause(ctx, f.timeout, fmt.Errorf("nobody signed in within %s (--timeout)", f.timeout))
	defer cancel()
	if _, err := h.SignIn(sctx, req); err != nil {
		return err
	}
	m, _ := h.Manifest(ctx, f.ns)
	var listed *hub.Change
	if m == nil || len(m.Tools) == 0 {
		ch, err := h.Refresh(ctx, f.ns)
		if err == nil && len(ch) == 1 {
			listed = &ch[0]
		}
	}
	if f.asJSON {
		out := map[string]any{"namespace": f.ns, "connection": name, "auth": "oauth", "secrets": h.SecretStatus()}
		if listed != nil {
			out["tools"] = listed.Tools
		}
		return e.printJSON(out)
	}
	fmt.Fprintf(e.stdout, "Signed in to %s/%s; the tokens are in %s.\n", f.ns, name, h.SecretStatus())
	if listed != nil {
		if listed.Error != "" {
			fmt.Fprintf(e.stdout, "Listing its tools failed: %s\n", listed.Error)
		} else {
			fmt.Fprintf(e.stdout, "%s has %d tools; review them with: capabilities hub review %s\n", f.ns, listed.Tools, f.ns)
		}
	}
	return nil
}

// readSecret reads a credential: at a masked prompt on a terminal, else one
// line of standard input.
func (e *env) readSecret(prompt string) (string, error) {
	if f, ok := e.stdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		fmt.Fprint(e.stderr, prompt)
		b, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(e.stderr)
		if err != nil {
			return "", fmt.Errorf("reading the credential: %w", err)
		}
		return strings.TrimSpace(string(b)), nil
	}
	if e.in == nil {
		e.in = bufio.NewReader(e.stdin)
	}
	line, err := e.in.ReadString('\n')
	line = strings.TrimRight(line, "\r\n")
	if err != nil && line == "" {
		return "", fmt.Errorf("reading the credential: nothing on standard input (type it at the prompt, or pipe it in)")
	}
	return line, nil
}

func newConnectionsCmd(e *env) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:               "connections <namespace>",
		Short:             "List a source's connections (the default marked *)",
		Args:              exactArgs(1, "one namespace"),
		ValidArgsFunction: complete(byPosition(namespaces)),
		RunE: e.withHub(func(c *cobra.Command, args []string, h *hub.Hub, _ hubStore) error {
			conns, err := h.Connections(c.Context(), args[0])
			if err != nil {
				return err
			}
			src, err := h.Source(c.Context(), args[0])
			if err != nil {
				return err
			}
			where := "Authorization: Bearer"
			if src.SecretEnv != "" {
				where = "$" + src.SecretEnv
			} else if src.SecretHeader != "" {
				where = "header " + src.SecretHeader
			}
			if asJSON {
				return e.printJSON(map[string]any{"namespace": args[0], "default": conns.Default, "connections": conns.Items, "credentialIn": where})
			}
			if len(conns.Items) == 0 {
				fmt.Fprintf(e.stdout, "%s has no connections. Add one with: capabilities hub auth %s\n", args[0], args[0])
				return nil
			}
			for _, it := range conns.Items {
				mark := " "
				if it.Name == conns.Default {
					mark = "*"
				}
				if it.Auth == model.AuthOAuth {
					state := "signed in"
					if it.SignIn != "" {
						state = it.SignIn + "; sign in again: capabilities hub auth " + args[0]
						if it.Name != conns.Default {
							state += " --connection " + it.Name
						}
					}
					fmt.Fprintf(e.stdout, "%s %s/%s  (OAuth: %s)\n", mark, args[0], it.Name, state)
					continue
				}
				fmt.Fprintf(e.stdout, "%s %s/%s  (credential in %s)\n", mark, args[0], it.Name, where)
			}
			return nil
		}),
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the connections as JSON")
	return c
}
