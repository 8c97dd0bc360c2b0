package cli

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/capabilities-sh/capabilities/engine/secret"
	"github.com/capabilities-sh/capabilities/engine/skill"
	"github.com/capabilities-sh/capabilities/engine/stack"
	"github.com/capabilities-sh/capabilities/internal/browser"
	"github.com/capabilities-sh/capabilities/internal/login"
	"github.com/spf13/cobra"
)

// loginStore is where sign-ins are kept: the hub's secret store (the OS
// keychain, or the mode-600 file beside the hub's store, announced).
func (e *env) loginStore() (*secret.Keyring, error) {
	dir, err := hubDir()
	if err != nil {
		return nil, err
	}
	opts := secret.Options{File: filepath.Join(dir, "secrets.json"), Logger: e.log}
	if os.Getenv("NO_KEYRING") != "" {
		opts.Keychain = noKeychain{}
	}
	return secret.Open(opts), nil
}

func loginHTTPClient() *http.Client { return &http.Client{Timeout: 30 * time.Second} }

// loginHost is --host, else the issuer's: github.com for GitHub, the
// issuer URL's host for another.
func loginHost(host, issuer string) (string, error) {
	if host != "" {
		return login.NormalizeHost(host)
	}
	if login.IsGitHub(issuer) {
		return login.GitHubHost, nil
	}
	u, err := login.ParseIssuer(issuer)
	if err != nil {
		return "", err
	}
	return login.NormalizeHost(u.Host)
}

func newLoginCmd(e *env) *cobra.Command {
	var (
		issuer, clientID, host string
		scopes                 []string
		status, asJSON         bool
	)
	c := &cobra.Command{
		Use:   "login [--issuer URL] [--client-id ID] [--scope S]... [--host HOST]",
		Short: "Sign in for the stack repository's host (OAuth device flow), so git over https uses it",
		Long: `Sign in for the host of your stack repository with the OAuth 2.0 device flow (RFC 8628):
the command shows a code and a page (and opens it in your browser unless
CAPABILITIES_NO_BROWSER=1); enter the code there and approve. The token set goes
to the OS keychain (a mode-600 file when there is none, announced each time) under
login/<host>; it is never printed. The stack's git commands use it for https remotes
of that host (as a git credential helper); a refresh token, when the server gives
one, renews the access token when it expires.

The issuer is GitHub's by default. Another (GitLab, Gitea, Keycloak…) is found through
its authorization server metadata (RFC 8414) or OpenID Connect discovery document,
which must name a device_authorization_endpoint. The OAuth client is yours: register
one with the issuer (on GitHub: an OAuth app with "Enable Device Flow" ticked) and
give its client ID with --client-id or CAPABILITIES_LOGIN_CLIENT_ID.`,
		Example: `  CAPABILITIES_LOGIN_CLIENT_ID=Ov23li… capabilities login
  capabilities login --issuer https://gitlab.example.com --client-id 3f2a… --scope write_repository
  capabilities login --status
  capabilities logout github.com`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, _ []string) error {
			if issuer == "" {
				issuer = login.GitHubIssuer
			}
			if _, err := login.ParseIssuer(issuer); err != nil {
				return usageError{fmt.Errorf("--issuer: %w", err)}
			}
			h, err := loginHost(host, issuer)
			if err != nil {
				return usageError{fmt.Errorf("--host: %w", err)}
			}
			st, err := e.loginStore()
			if err != nil {
				return err
			}
			if status {
				return e.loginStatus(c, st, h, asJSON)
			}
			if clientID == "" {
				clientID = strings.TrimSpace(os.Getenv(login.ClientIDEnv))
			}
			if clientID == "" {
				return login.NoClientIDHelp(issuer)
			}
			return e.deviceLogin(c, st, h, issuer, clientID, scopes, asJSON)
		},
	}
	c.Flags().StringVar(&issuer, "issuer", "", "the OAuth issuer `URL` to sign in with (default: GitHub's, https://github.com)")
	c.Flags().StringVar(&clientID, "client-id", "", "the `ID` of your OAuth client registered with the issuer, device flow enabled (default: $CAPABILITIES_LOGIN_CLIENT_ID)")
	c.Flags().StringArrayVar(&scopes, "scope", nil, "a `SCOPE` to ask for (repeatable; default for GitHub: repo, else what the issuer grants)")
	c.Flags().StringVar(&host, "host", "", "the git `HOST` the sign-in is for (default: github.com for GitHub, else the issuer's host)")
	c.Flags().BoolVar(&status, "status", false, "say whether the host is signed in (never showing the token), and sign nobody in")
	c.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	c.AddCommand(newGitCredentialCmd(e))
	return c
}

// deviceLogin runs the device flow and stores the token set.
func (e *env) deviceLogin(c *cobra.Command, st *secret.Keyring, host, issuer, clientID string, scopes []string, asJSON bool) error {
	ctx := c.Context()
	hc := loginHTTPClient()
	eps, err := login.Discover(ctx, hc, issuer)
	if err != nil {
		return err
	}
	if len(scopes) == 0 && login.IsGitHub(issuer) {
		scopes = login.GitHubScopes
	}
	f := &login.Flow{Endpoints: eps, ClientID: clientID, Scopes: scopes, HTTPClient: hc}
	da, err := f.Start(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stderr, "To sign in to %s, open %s and enter the code: %s\n", host, da.VerificationURI, da.UserCode)
	link := da.VerificationURI
	if da.VerificationURIComplete != "" {
		link = da.VerificationURIComplete
		fmt.Fprintf(e.stderr, "(or open %s, which holds the code)\n", link)
	}
	if err := browser.Open(link); err != nil && !errors.Is(err, browser.ErrOff) {
		fmt.Fprintf(e.stderr, "(no browser opened: %v)\n", err)
	}
	fmt.Fprintf(e.stderr, "Waiting for the approval; the code expires in %s. Ctrl-C stops.\n", time.Until(da.Expiry).Round(time.Second))
	tok, err := f.Wait(ctx, da)
	switch {
	case errors.Is(err, login.ErrDenied):
		return fmt.Errorf("signing in to %s: %w; nothing was stored", host, err)
	case errors.Is(err, login.ErrExpired):
		return fmt.Errorf("signing in to %s: %w; nothing was stored: run capabilities login again and enter the new code within its time", host, err)
	case err != nil:
		return fmt.Errorf("signing in to %s: %w", host, err)
	}
	granted := scopes
	if s, ok := tok.Extra("scope").(string); ok && s != "" {
		granted = strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == ',' })
	}
	sess := &login.Session{Host: host, Issuer: eps.Issuer, ClientID: clientID, TokenURL: eps.TokenURL, Scopes: granted, Username: login.DefaultUsername(eps.Issuer), Token: tok, SignedIn: time.Now().UTC()}
	if err := login.Save(ctx, st, sess); err != nil {
		return err
	}
	where := st.Status().String()
	if asJSON {
		return e.printJSON(map[string]any{"host": host, "issuer": eps.Issuer, "signed_in": true, "scopes": granted, "refresh_token": tok.RefreshToken != "", "secrets": where})
	}
	fmt.Fprintf(e.stdout, "Signed in to %s; the token is in %s. The stack's git commands use it for https://%s/.\n", host, where, host)
	return nil
}

// loginStatus says whether host is signed in, never showing a token.
func (e *env) loginStatus(c *cobra.Command, st *secret.Keyring, host string, asJSON bool) error {
	s, err := login.Load(c.Context(), st, host)
	if errors.Is(err, login.ErrNotSignedIn) {
		if asJSON {
			if err := e.printJSON(map[string]any{"host": host, "signed_in": false}); err != nil {
				return err
			}
			return errSilent{err}
		}
		fmt.Fprintf(e.stdout, "%s: not signed in; sign in with: capabilities login --host %s\n", host, host)
		return errSilent{err}
	}
	if err != nil {
		return err
	}
	expires := "does not expire"
	if !s.Token.Expiry.IsZero() {
		if s.Token.Valid() {
			expires = "expires " + s.Token.Expiry.UTC().Format(time.RFC3339)
		} else {
			expires = "expired " + s.Token.Expiry.UTC().Format(time.RFC3339)
		}
	}
	refresh := s.Token.RefreshToken != ""
	if asJSON {
		out := map[string]any{"host": host, "signed_in": true, "issuer": s.Issuer, "client_id": s.ClientID, "scopes": s.Scopes, "refresh_token": refresh, "secrets": st.Status().String()}
		if !s.Token.Expiry.IsZero() {
			out["expiry"] = s.Token.Expiry.UTC()
		}
		return e.printJSON(out)
	}
	scopes := strings.Join(s.Scopes, " ")
	if scopes == "" {
		scopes = "(none named)"
	}
	fmt.Fprintf(e.stdout, "%s: signed in with %s (client %s), scopes %s; the token %s", host, s.Issuer, s.ClientID, scopes, expires)
	if refresh {
		fmt.Fprint(e.stdout, " and is renewed with its refresh token")
	}
	fmt.Fprintf(e.stdout, "; kept in %s.\n", st.Status().String())
	return nil
}

// useLoginForGit makes the git commands of the stack and of git skills
// ask `capabilities login git-credential` for a signed-in host's token.
func useLoginForGit() {
	env := func() []string {
		exe, err := login.Self()
		if err != nil {
			return nil
		}
		return login.GitEnv(exe)
	}
	stack.GitEnv, skill.GitEnv = env, env
}

// newGitCredentialCmd is git's credential helper (hidden): the stack's git
// commands run it through login.GitEnv.
func newGitCredentialCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:    "git-credential <get|store|erase>",
		Short:  "git credential helper answering with the sign-in's token (used by the stack's git commands)",
		Hidden: true,
		Args:   exactArgs(1, "one action: get, store or erase"),
		RunE: func(c *cobra.Command, args []string) error {
			st, err := e.loginStore()
			if err != nil {
				return err
			}
			return login.Helper(c.Context(), args[0], e.stdin, e.stdout, e.stderr, st, loginHTTPClient())
		},
	}
}

func newLogoutCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "logout [HOST]",
		Short: "Remove the sign-in for a git host (default: github.com) from the keychain",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			host := login.GitHubHost
			if len(args) == 1 {
				h, err := login.NormalizeHost(args[0])
				if err != nil {
					return usageError{err}
				}
				host = h
			}
			st, err := e.loginStore()
			if err != nil {
				return err
			}
			if err := login.Delete(c.Context(), st, host); err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "Signed out of %s: its token is removed from %s.\n", host, st.Status().String())
			return nil
		},
	}
}
