package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/capabilities-sh/capabilities/engine/mcpserver"
	"github.com/capabilities-sh/capabilities/engine/secret"
	"github.com/capabilities-sh/capabilities/internal/login"
)

// A hub on another machine (docs/serve-http.md, "Agents on other
// machines"): `connect --hub URL` checks the hub's bearer token against it,
// keeps it in this machine's secret store under hubTokenRef(host), and
// writes entries running `serve --stdio --hub URL`, which relay to it.

// hubURLVar is the environment variable of serve --stdio's --hub.
const hubURLVar = "CAPABILITIES_HUB_URL"

// hubTokenVar gives connect --hub the hub's token (else --token-stdin or
// a prompt), and serve --stdio --hub one that is not in the keychain (a
// machine without one).
const hubTokenVar = "CAPABILITIES_HUB_TOKEN"

// hubTokenPrefix begins the secret reference of a remote hub's token.
const hubTokenPrefix = "hub-token/"

// remoteHub parses a remote hub's URL as connect --hub and serve --hub take
// it: https (http only to a loopback host), no credentials, query or
// fragment; a path of "", "/" or "/mcp" is the hub itself. base is the URL
// written in the entries (no /mcp), host the key of its token.
func remoteHub(flag, raw string) (base *url.URL, host string, err error) {
	u, perr := url.Parse(strings.TrimSpace(raw))
	fix := "pass the hub's public URL, such as https://hub.example.com (what its serve --http --public-url says)"
	switch {
	case raw == "":
		return nil, "", usagef("%s: empty: %s", flag, fix)
	case perr != nil:
		return nil, "", usagef("%s %q: not a URL (%v): %s", flag, raw, perr, fix)
	case u.Scheme != "https" && u.Scheme != "http", u.Host == "":
		return nil, "", usagef("%s %q: not an http(s) URL with a host: %s", flag, raw, fix)
	case u.User != nil:
		return nil, "", usagef("%s %q: a URL with a user or password is refused: the token goes in the keychain (connect --hub reads it from --token-stdin, %s or a prompt), never in the URL", flag, raw, hubTokenVar)
	case u.RawQuery != "" || u.Fragment != "":
		return nil, "", usagef("%s %q: drop the query and fragment: %s", flag, raw, fix)
	case u.Scheme == "http" && !loopbackName(u.Hostname()):
		return nil, "", usagef("%s %q: plain http to %s would send the hub's bearer token in clear over the network: use https (TLS in the hub's reverse proxy, or serve --http --tls-cert/--tls-key); http is accepted only for a loopback host (127.0.0.1, ::1, localhost)", flag, raw, u.Hostname())
	}
	p := strings.TrimSuffix(u.EscapedPath(), "/")
	p = strings.TrimSuffix(p, "/mcp")
	if p != "" {
		return nil, "", usagef("%s %q: the path %q is not the hub's: pass the hub's root URL (%s://%s) or its /mcp", flag, raw, u.Path, u.Scheme, u.Host)
	}
	if ip := net.ParseIP(u.Hostname()); ip != nil && ip.To4() == nil {
		host = strings.ToLower(u.Host) // [::1]:4790: NormalizeHost takes no IPv6
	} else if host, err = login.NormalizeHost(u.Host); err != nil {
		return nil, "", usagef("%s %q: %v", flag, raw, err)
	}
	base = &url.URL{Scheme: u.Scheme, Host: strings.ToLower(u.Host)}
	return base, host, nil
}

// loopbackName reports whether host (no port) is a loopback name or address.
func loopbackName(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// hubEndpoint is the MCP endpoint of profile at the hub base.
func hubEndpoint(base *url.URL, profile string) string {
	ep := base.String() + "/mcp"
	if profile != "" && profile != "default" {
		ep += "/" + profile
	}
	return ep
}

// hubTokenRef is the secret reference of the token of the hub at host:
// "hub-token/<host>", its port after a "_".
func hubTokenRef(host string) string {
	return hubTokenPrefix + strings.NewReplacer(":", "_", "[", "", "]", "").Replace(host)
}

// remoteToken reads the hub's token for connect --hub: --token-stdin, else
// CAPABILITIES_HUB_TOKEN, else a masked prompt (refused with --no-input).
func (e *env) remoteToken(fromStdin bool, host string) (string, error) {
	var tok string
	switch {
	case fromStdin:
		t, err := e.readLine()
		if err != nil && strings.TrimSpace(t) == "" {
			return "", usagef("connect --hub --token-stdin: nothing on standard input: pipe the token in (`capabilities hub http-token` on the server prints it)")
		}
		tok = t
	case os.Getenv(hubTokenVar) != "":
		tok = os.Getenv(hubTokenVar)
	case e.noInput:
		return "", usagef("connect --hub: the hub's bearer token is needed and --no-input forbids the prompt: pipe it in with --token-stdin, or set %s (`capabilities hub http-token` on the server prints it)", hubTokenVar)
	default:
		t, err := e.readSecret(fmt.Sprintf("The bearer token of the hub at %s (`capabilities hub http-token` on the server prints it): ", host))
		if err != nil {
			return "", err
		}
		tok = t
	}
	tok = strings.TrimSpace(tok)
	if tok == "" {
		return "", usagef("connect --hub: the hub's token is empty: `capabilities hub http-token` on the server prints it")
	}
	if strings.ContainsAny(tok, " \t\r\n") {
		return "", usagef("connect --hub: the hub's token holds white space: pass the one line `capabilities hub http-token` prints on the server")
	}
	return tok, nil
}

// checkRemoteHub opens and closes a session with the hub at base with
// token: nothing is written when it fails.
func checkRemoteHub(ctx context.Context, base *url.URL, profile, token string) error {
	ep := hubEndpoint(base, profile)
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	err := mcpserver.CheckRemote(ctx, ep, token)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, mcpserver.ErrRemoteToken):
		return fmt.Errorf("checking the hub at %s: it refuses this token (HTTP 401): pass the one `capabilities hub http-token` prints on the server; nothing was written", ep)
	default:
		return fmt.Errorf("checking the hub at %s: %w; nothing was written (is the URL the one agents use, the hub's serve --http --public-url? does /readyz answer?)", ep, err)
	}
}

// storeHubToken keeps token under host's reference in this machine's
// secret store, and says where.
func (e *env) storeHubToken(ctx context.Context, host, token string) (string, error) {
	st, err := e.loginStore()
	if err != nil {
		return "", err
	}
	if err := st.Set(ctx, hubTokenRef(host), token); err != nil {
		return "", fmt.Errorf("keeping the hub's token: %w", err)
	}
	return st.Status().String(), nil
}

// remoteHubToken is the token serve --stdio --hub sends to host: from the
// secret store, else CAPABILITIES_HUB_TOKEN.
func (e *env) remoteHubToken(ctx context.Context, base *url.URL, host string) (string, error) {
	st, err := e.loginStore()
	if err != nil {
		return "", err
	}
	tok, err := st.Get(ctx, hubTokenRef(host))
	if err == nil && tok != "" {
		return tok, nil
	}
	if v := strings.TrimSpace(os.Getenv(hubTokenVar)); v != "" {
		return v, nil
	}
	if errors.Is(err, secret.ErrNotFound) {
		return "", fmt.Errorf("serving the hub at %s: this machine keeps no token for it: run `capabilities connect --hub %s` (it asks for the token `capabilities hub http-token` prints on the server), or set %s", host, base, hubTokenVar)
	}
	return "", fmt.Errorf("serving the hub at %s: reading its token: %w", host, err)
}
