package cli

import (
	"bufio"
	"fmt"
	"os"
	"strings"

	"github.com/capabilities-sh/capabilities/store"

	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/spf13/cobra"
	"golang.org/x/term"
)

func newAuthCmd(e *env) *cobra.Command {
	var (
		conn   string
		envVar string
		header string
		asJSON bool
	)
	c := &cobra.Command{
		Use:   "auth <namespace> [--connection NAME] [--env VAR | --header NAME]",
		Short: "Store a credential for a source, in the OS keychain",
		Long: `Store a credential for a source under a connection (default: "default"). The value is
read at a masked prompt, or from standard input when it is not a terminal — never from an
argument. It goes to the OS keychain (a mode-600 file when there is none, announced each
time) and reaches the upstream only when a call needs it: as the environment variable
--env of a local server, or the header --header of a remote one (default
Authorization: Bearer).`,
		Example: `  capabilities hub auth github --env GITHUB_PERSONAL_ACCESS_TOKEN
  capabilities hub auth github --connection work
  printf %s "$TOKEN" | capabilities hub auth linear --header X-API-Key`,
		Args:              exactArgs(1, "one namespace"),
		ValidArgsFunction: complete(byPosition(namespaces)),
		RunE: e.withHub(func(c *cobra.Command, args []string, h *hub.Hub, _ *store.File) error {
			if _, err := h.Source(c.Context(), args[0]); err != nil {
				return err
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
	_ = c.RegisterFlagCompletionFunc("connection", complete(connectionsOf))
	return c
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
		RunE: e.withHub(func(c *cobra.Command, args []string, h *hub.Hub, _ *store.File) error {
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
				fmt.Fprintf(e.stdout, "%s %s/%s  (credential in %s)\n", mark, args[0], it.Name, where)
			}
			return nil
		}),
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the connections as JSON")
	return c
}
