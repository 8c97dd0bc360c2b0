package oauth

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// Challenge is what a server's 401 or 403 said in its WWW-Authenticate
// header (the Bearer challenge).
type Challenge struct {
	// Bearer: the server asked for a Bearer token.
	Bearer bool
	// ResourceMetadata is the URL of the protected resource metadata
	// (RFC 9728 §5.1), if given.
	ResourceMetadata string
	// Scopes the server wants, if given.
	Scopes []string
	// Error is the error code ("invalid_token", "insufficient_scope").
	Error string
}

// ParseChallenge reads the WWW-Authenticate headers of a response. A header
// that does not parse gives the zero Challenge.
func ParseChallenge(h http.Header) Challenge {
	cs, err := oauthex.ParseWWWAuthenticate(h.Values("WWW-Authenticate"))
	if err != nil {
		return Challenge{}
	}
	var c Challenge
	for _, x := range cs {
		if x.Scheme != "bearer" {
			continue
		}
		c.Bearer = true
		if v := x.Params["resource_metadata"]; v != "" && c.ResourceMetadata == "" {
			c.ResourceMetadata = v
		}
		if v := x.Params["scope"]; v != "" && c.Scopes == nil {
			c.Scopes = strings.Fields(v)
		}
		if v := x.Params["error"]; v != "" && c.Error == "" {
			c.Error = v
		}
	}
	return c
}

// Probe sends an MCP initialize request to serverURL without a token and
// reports whether the server asks for OAuth: a 401 with a Bearer challenge.
// It returns the challenge (Bearer false when the server let the request
// through or answered otherwise).
func Probe(ctx context.Context, hc *http.Client, serverURL string) (Challenge, int, error) {
	body := []byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"capabilities","version":"0.1.0"}}}`)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, serverURL, bytes.NewReader(body))
	if err != nil {
		return Challenge{}, 0, fmt.Errorf("probing %s: %w", serverURL, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := client(hc).Do(req)
	if err != nil {
		return Challenge{}, 0, fmt.Errorf("probing %s: %w", serverURL, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusUnauthorized {
		return Challenge{}, resp.StatusCode, nil
	}
	c := ParseChallenge(resp.Header)
	if !c.Bearer && len(resp.Header.Values("WWW-Authenticate")) == 0 {
		// A 401 without any challenge: the 2025-03-26 servers that relied
		// on the default metadata location did so too.
		c.Bearer = true
	}
	return c, resp.StatusCode, nil
}

// OpenIDMetadata reads an OpenID Connect discovery document (an OpenAPI
// openIdConnect scheme's URL) as authorization server metadata.
func OpenIDMetadata(ctx context.Context, hc *http.Client, discoveryURL string) (*oauthex.AuthServerMeta, error) {
	asm, err := getJSON[oauthex.AuthServerMeta](ctx, hc, discoveryURL)
	if errors.Is(err, errNotThere) {
		return nil, fmt.Errorf("reading the OpenID configuration at %s: not found", discoveryURL)
	}
	if err != nil {
		return nil, fmt.Errorf("reading the OpenID configuration: %w", err)
	}
	if asm.AuthorizationEndpoint == "" || asm.TokenEndpoint == "" {
		return nil, fmt.Errorf("the OpenID configuration at %s names no authorization or token endpoint", discoveryURL)
	}
	return asm, nil
}

// Protected reports whether the server at serverURL, which answered with
// the challenge ch, is protected by OAuth: the challenge names its
// protected resource metadata, or discovery finds that metadata or an
// authorization server's. A bare "Bearer realm=…" challenge from a server
// with neither wants a static token, not a sign-in.
func Protected(ctx context.Context, hc *http.Client, serverURL string, ch Challenge) bool {
	if !ch.Bearer {
		return false
	}
	if ch.ResourceMetadata != "" {
		return true
	}
	md, err := Discover(ctx, hc, serverURL, ch)
	return err == nil && !md.Fallback
}

// Metadata is what discovery found about a protected MCP server.
type Metadata struct {
	// Resource is the resource identifier to ask tokens for (RFC 8707).
	Resource string
	// ScopesSupported from the protected resource metadata.
	ScopesSupported []string
	// AS is the authorization server's metadata; for a 2025-03-26 server
	// without any, the default endpoints at the server's origin.
	AS *oauthex.AuthServerMeta
	// Legacy: no protected resource metadata was found; the MCP server's
	// origin was taken as the authorization server (2025-03-26).
	Legacy bool
	// Fallback: no authorization server metadata was found; the default
	// endpoints /authorize, /token and /register are used.
	Fallback bool
}

// Discover finds the authorization server of the MCP server at serverURL:
// its protected resource metadata (RFC 9728) at the challenge's
// resource_metadata URL, else at the path-inserted then the root well-known
// URL; then the authorization server's metadata (RFC 8414 with path
// insertion, then OpenID discovery). A metadata document whose resource is
// not the server (another origin, or a path the server's is not under) is
// refused, as is an authorization server that does not offer PKCE with S256.
func Discover(ctx context.Context, hc *http.Client, serverURL string, ch Challenge) (*Metadata, error) {
	su, err := url.Parse(serverURL)
	if err != nil || su.Host == "" {
		return nil, fmt.Errorf("discovering the authorization server: %q is not an absolute URL", serverURL)
	}
	md := &Metadata{}
	var prm *oauthex.ProtectedResourceMetadata
	var tried []string
	for _, u := range prmURLs(ch.ResourceMetadata, su) {
		tried = append(tried, u)
		p, err := getJSON[oauthex.ProtectedResourceMetadata](ctx, hc, u)
		if errors.Is(err, errNotThere) {
			continue
		}
		if err != nil {
			if u == ch.ResourceMetadata {
				return nil, fmt.Errorf("discovering the authorization server: reading the protected resource metadata the server named: %w", err)
			}
			continue
		}
		if err := resourceMatches(p.Resource, su); err != nil {
			return nil, fmt.Errorf("discovering the authorization server: the protected resource metadata at %s: %w", u, err)
		}
		if len(p.AuthorizationServers) == 0 {
			return nil, fmt.Errorf("discovering the authorization server: the protected resource metadata at %s names no authorization server", u)
		}
		prm = p
		break
	}
	issuer := ""
	if prm != nil {
		md.Resource = prm.Resource
		md.ScopesSupported = prm.ScopesSupported
		issuer = prm.AuthorizationServers[0]
		if err := httpsOrLoopback(issuer); err != nil {
			return nil, fmt.Errorf("discovering the authorization server: %w", err)
		}
	} else {
		// 2025-03-26: the MCP server's origin is the authorization server.
		md.Legacy = true
		md.Resource = serverURL
		issuer = su.Scheme + "://" + su.Host
	}
	var asm *oauthex.AuthServerMeta
	if md.Legacy {
		asm, err = legacyMetadata(ctx, hc, issuer)
	} else {
		asm, err = auth.GetAuthServerMetadata(ctx, issuer, hc)
	}
	if err != nil {
		return nil, fmt.Errorf("discovering the authorization server %s: %w", issuer, err)
	}
	if asm == nil {
		if !md.Legacy {
			return nil, fmt.Errorf("discovering the authorization server: %s publishes no OAuth or OpenID metadata (tried the well-known paths; protected resource metadata from %s)", issuer, strings.Join(tried, ", "))
		}
		base := strings.TrimRight(issuer, "/")
		md.Fallback = true
		asm = &oauthex.AuthServerMeta{
			Issuer:                        base,
			AuthorizationEndpoint:         base + "/authorize",
			TokenEndpoint:                 base + "/token",
			RegistrationEndpoint:          base + "/register",
			CodeChallengeMethodsSupported: []string{"S256"},
		}
	} else if !slices.Contains(asm.CodeChallengeMethodsSupported, "S256") {
		return nil, fmt.Errorf("discovering the authorization server: %s does not offer PKCE with S256 (code_challenge_methods_supported: %s), which the MCP authorization spec requires: refused", issuer, strings.Join(asm.CodeChallengeMethodsSupported, ", "))
	}
	md.AS = asm
	return md, nil
}

// legacyMetadata reads the metadata of a 2025-03-26 server, which is its
// own authorization server: at its origin's well-known path, whatever
// issuer it names (that spec tied the metadata to the MCP server's origin,
// not to an issuer). nil when there is none.
func legacyMetadata(ctx context.Context, hc *http.Client, origin string) (*oauthex.AuthServerMeta, error) {
	asm, err := getJSON[oauthex.AuthServerMeta](ctx, hc, strings.TrimRight(origin, "/")+"/.well-known/oauth-authorization-server")
	if errors.Is(err, errNotThere) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	for _, u := range []string{asm.AuthorizationEndpoint, asm.TokenEndpoint, asm.RegistrationEndpoint} {
		if u == "" {
			continue
		}
		if err := httpsOrLoopback(u); err != nil {
			return nil, err
		}
	}
	if asm.AuthorizationEndpoint == "" || asm.TokenEndpoint == "" {
		return nil, errors.New("its metadata names no authorization or token endpoint")
	}
	return asm, nil
}

// prmURLs are the places protected resource metadata may be, in the order
// the MCP spec gives: the challenge's, the well-known URL with the server's
// path inserted, the well-known URL at the root.
func prmURLs(fromChallenge string, su *url.URL) []string {
	var out []string
	if fromChallenge != "" {
		out = append(out, fromChallenge)
	}
	u := *su
	u.RawQuery, u.Fragment, u.RawPath = "", "", ""
	if p := strings.Trim(su.Path, "/"); p != "" {
		u.Path = "/.well-known/oauth-protected-resource/" + p
		out = append(out, u.String())
	}
	u.Path = "/.well-known/oauth-protected-resource"
	out = append(out, u.String())
	return out
}

// resourceMatches checks that a protected resource metadata's resource is
// the server: the same origin, and the server's path at or under the
// resource's (a resource "https://mcp.example.com/" covers
// "https://mcp.example.com/mcp").
func resourceMatches(resource string, su *url.URL) error {
	ru, err := url.Parse(resource)
	if err != nil || ru.Host == "" {
		return fmt.Errorf("its resource %q is not an absolute URL", resource)
	}
	if Origin(ru) != Origin(su) {
		return fmt.Errorf("it is for %s, not for this server (%s): refused", resource, su.String())
	}
	rp := strings.TrimRight(ru.Path, "/")
	sp := strings.TrimRight(su.Path, "/")
	if rp != "" && sp != rp && !strings.HasPrefix(sp, rp+"/") {
		return fmt.Errorf("it is for %s, not for this server (%s): refused", resource, su.String())
	}
	return nil
}

var errNotThere = errors.New("not there")

// getJSON reads a JSON document of at most 1 MB; a 4xx answer is
// errNotThere.
func getJSON[T any](ctx context.Context, hc *http.Client, u string) (*T, error) {
	if err := httpsOrLoopback(u); err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client(hc).Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 400 && resp.StatusCode < 500 {
		return nil, errNotThere
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "application/json" {
		return nil, fmt.Errorf("GET %s: content type %q, want application/json", u, resp.Header.Get("Content-Type"))
	}
	var v T
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&v); err != nil {
		return nil, fmt.Errorf("GET %s: %w", u, err)
	}
	return &v, nil
}

// httpsOrLoopback refuses a plain-http URL to anything but this machine.
func httpsOrLoopback(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return fmt.Errorf("%q is not an absolute URL", raw)
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		if isLoopback(u.Hostname()) {
			return nil
		}
	}
	return fmt.Errorf("%s: OAuth endpoints must use https (plain http only on this machine): refused", raw)
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	return host == "::1" || strings.HasPrefix(host, "127.")
}

func client(hc *http.Client) *http.Client {
	if hc != nil {
		return hc
	}
	return http.DefaultClient
}
