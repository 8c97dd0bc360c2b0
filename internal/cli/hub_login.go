package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/capabilities-sh/capabilities/engine/hostedlogin"
	"github.com/capabilities-sh/capabilities/engine/push"
	"github.com/capabilities-sh/capabilities/internal/browser"
	"github.com/spf13/cobra"
)

func newHubLoginCmd(e *env) *cobra.Command {
	var (
		noBrowser, list, forget, asJSON bool
		timeout                         time.Duration
	)
	c := &cobra.Command{
		Use:   "login <url>",
		Short: "Sign in to a hosted hub (OAuth in the browser), for hub push, hub status and the desktop app",
		Long: `Sign in to the hosted hub at URL (its base URL, or its /mcp connector URL) with
OAuth 2.1: the hub's authorization server is found from the protected resource
metadata of URL/mcp, this machine registers as a client (RFC 7591), and the
authorization page opens in your browser (the URL is printed too; --no-browser
only prints it). You sign in there with your identity provider and allow the
scopes "mcp hub": the hub's tools and your own API (push, status, inbox and
decisions). The answer comes back to a listener on 127.0.0.1 (PKCE S256).

The tokens (access and refresh) go to the OS keychain (a mode-600 file when there
is none, announced), never to a config file; the list of hubs signed in to (URL,
account, client ID) is hosted.json in the hub folder. The access token is
refreshed when it expires.`,
		Example: `  capabilities hub login https://hub.example.com
  capabilities hub login --no-browser https://hub.example.com
  capabilities hub login --list
  capabilities hub login --forget https://hub.example.com`,
		RunE: func(c *cobra.Command, args []string) error {
			ctx := c.Context()
			dir, err := hubDir()
			if err != nil {
				return err
			}
			secrets, err := e.loginStore()
			if err != nil {
				return err
			}
			if list {
				if len(args) != 0 {
					return usagef("--list takes no URL")
				}
				return e.listLogins(dir, asJSON)
			}
			if len(args) != 1 {
				return usagef("%s expects the hosted hub's URL, like https://hub.example.com (got %d argument(s))", c.CommandPath(), len(args))
			}
			base, err := hostedlogin.NormalizeURL(args[0])
			if err != nil {
				return usageError{err}
			}
			if forget {
				if err := hostedlogin.Delete(ctx, secrets, dir, base); err != nil {
					return err
				}
				fmt.Fprintf(e.stdout, "Forgot the sign-in to %s (its tokens are gone from %s).\n", base, secrets.Status())
				return nil
			}
			sctx, cancel := context.WithTimeoutCause(ctx, timeout, fmt.Errorf("nobody signed in within %s (--timeout)", timeout))
			defer cancel()
			l, err := hostedlogin.SignIn(sctx, hostedlogin.Options{
				URL:        base,
				HTTPClient: loginHTTPClient(),
				Logger:     e.log,
				Open: func(authURL string) error {
					fmt.Fprintf(e.stderr, "Sign in to %s in your browser. If no page opens, open this URL:\n  %s\n", base, authURL)
					if noBrowser {
						return nil
					}
					if err := browser.Open(authURL); err != nil {
						fmt.Fprintf(e.stderr, "(no browser opened: %v)\n", err)
					}
					return nil
				},
			})
			if err != nil {
				return err
			}
			if err := hostedlogin.Save(ctx, secrets, dir, l); err != nil {
				return err
			}
			// The account, as the hub knows it.
			sc, cancel2 := context.WithTimeout(ctx, 30*time.Second)
			defer cancel2()
			pc := &push.Client{URL: l.URL, HTTP: l.Client(sc)}
			if st, err := pc.Status(sc); err == nil {
				l.Account = st.Tenant
				if err := hostedlogin.Save(ctx, secrets, dir, l); err != nil {
					return err
				}
			} else {
				fmt.Fprintf(e.stderr, "(signed in, but the hub's status could not be read: %v)\n", err)
			}
			if asJSON {
				return e.printJSON(map[string]any{"url": l.URL, "account": l.Account, "clientId": l.ClientID, "scopes": l.Scopes, "secrets": secrets.Status().String()})
			}
			who := ""
			if l.Account != "" {
				who = " as " + l.Account
			}
			fmt.Fprintf(e.stdout, "Signed in to %s%s; the tokens are in %s.\n", l.URL, who, secrets.Status())
			fmt.Fprintf(e.stdout, "Next: `capabilities hub push` sends this hub's sources there; add %s/mcp as a connector in claude.ai or ChatGPT.\n", l.URL)
			return nil
		},
	}
	c.Flags().BoolVar(&noBrowser, "no-browser", false, "only print the authorization URL, do not open a browser")
	c.Flags().DurationVar(&timeout, "timeout", 5*time.Minute, "wait at most `DURATION` for the sign-in in the browser")
	c.Flags().BoolVar(&list, "list", false, "list the hosted hubs this machine is signed in to")
	c.Flags().BoolVar(&forget, "forget", false, "forget the sign-in to URL (its tokens and its entry)")
	c.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return c
}

func (e *env) listLogins(dir string, asJSON bool) error {
	list, err := hostedlogin.List(dir)
	if err != nil {
		return err
	}
	if asJSON {
		if list == nil {
			list = []hostedlogin.Login{}
		}
		return e.printJSON(list)
	}
	if len(list) == 0 {
		fmt.Fprintln(e.stdout, "Signed in to no hosted hub: `capabilities hub login <url>` signs in.")
		return nil
	}
	for _, l := range list {
		fmt.Fprintf(e.stdout, "%s  account %s  client %s  since %s\n", l.URL, orDash(l.Account), l.ClientID, l.At.Format(time.RFC3339))
	}
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// hostedClient is the push and status API of the hosted hub named by
// args (its URL), or of the only one this machine is signed in to.
func (e *env) hostedClient(ctx context.Context, args []string) (*push.Client, *hostedlogin.Login, error) {
	dir, err := hubDir()
	if err != nil {
		return nil, nil, err
	}
	secrets, err := e.loginStore()
	if err != nil {
		return nil, nil, err
	}
	var url string
	if len(args) == 1 {
		if url, err = hostedlogin.NormalizeURL(args[0]); err != nil {
			return nil, nil, usageError{err}
		}
	} else {
		list, err := hostedlogin.List(dir)
		if err != nil {
			return nil, nil, err
		}
		switch len(list) {
		case 0:
			return nil, nil, errors.New("signed in to no hosted hub: sign in with `capabilities hub login <url>` first")
		case 1:
			url = list[0].URL
		default:
			return nil, nil, usagef("signed in to %d hosted hubs: name the one with its URL (`capabilities hub login --list` lists them)", len(list))
		}
	}
	l, err := hostedlogin.Load(ctx, secrets, dir, url)
	if err != nil {
		return nil, nil, err
	}
	return &push.Client{URL: l.URL, HTTP: l.Client(ctx)}, l, nil
}
