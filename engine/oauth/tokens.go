// Package oauth signs the hub in to an OAuth-protected MCP server and keeps
// the tokens fresh.
//
// SignIn runs the authorization code flow with PKCE (S256) as the MCP
// authorization spec asks: protected resource metadata (RFC 9728: the
// resource_metadata of the server's WWW-Authenticate challenge, else the
// well-known paths), authorization server metadata (RFC 8414 with path
// insertion, then OpenID discovery, then the 2025-03-26 default endpoints),
// a pre-registered client, a client ID metadata document or dynamic client
// registration (RFC 7591), the resource parameter (RFC 8707), scopes from the
// challenge or scopes_supported, and a redirect to a listener on 127.0.0.1
// whose state is checked. The go-sdk's oauthex and auth packages do the
// metadata fetching and registration; golang.org/x/oauth2 builds the
// authorization URL and exchanges the code.
//
// What a sign-in leaves is a Tokens value, stored by the caller as a secret
// (the hub: the connection's keychain item). Source hands out a valid access
// token, refreshing it before it expires and when the server refuses it,
// under a lock so that processes sharing the store refresh once; Transport
// puts it on requests to the one origin it was issued for.
package oauth

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/capabilities-sh/capabilities/engine/model"
	"net/url"
	"strings"
	"time"
)

// Kind is the marker of a stored token set ("kind" in its JSON).
const Kind = "oauth"

// Tokens is what a sign-in leaves: the tokens and what refreshing them
// needs. It is stored as one secret; every field that is a secret is listed
// by Secrets, for scrubbing.
type Tokens struct {
	Kind         string    `json:"kind"` // always "oauth"
	AccessToken  string    `json:"accessToken"`
	RefreshToken string    `json:"refreshToken,omitempty"`
	TokenType    string    `json:"tokenType,omitempty"`
	Expiry       time.Time `json:"expiry,omitzero"`
	// TokenURL is the authorization server's token endpoint.
	TokenURL string `json:"tokenUrl"`
	// AuthStyle is how the client authenticates at the token endpoint:
	// "basic", "post" or "none".
	AuthStyle    string `json:"authStyle,omitempty"`
	ClientID     string `json:"clientId"`
	ClientSecret string `json:"clientSecret,omitempty"`
	Issuer       string `json:"issuer,omitempty"`
	// Resource is the RFC 8707 resource the tokens were asked for.
	Resource string `json:"resource,omitempty"`
	// Origin is the only origin (scheme://host:port) the access token is
	// sent to: the MCP server's.
	Origin string   `json:"origin"`
	Scopes []string `json:"scopes,omitempty"`
	// Grant identifies one sign-in; it stays the same across refreshes.
	Grant string `json:"grant"`
}

// Parse reads a stored token set. ok is false when value is not one (a
// static credential).
func Parse(value string) (t *Tokens, ok bool) {
	if !strings.HasPrefix(strings.TrimSpace(value), "{") {
		return nil, false
	}
	var tk Tokens
	if err := json.Unmarshal([]byte(value), &tk); err != nil || tk.Kind != Kind {
		return nil, false
	}
	return &tk, true
}

// Marshal is the token set as stored.
func (t *Tokens) Marshal() string {
	c := *t
	c.Kind = Kind
	b, _ := json.Marshal(&c)
	return string(b)
}

// Secrets are the values to scrub from everything that leaves a run.
func (t *Tokens) Secrets() []string {
	var out []string
	for _, v := range []string{t.AccessToken, t.RefreshToken, t.ClientSecret} {
		if v != "" {
			out = append(out, v)
		}
	}
	return out
}

// Fresh reports whether the access token stays valid for at least skew.
// A token without an expiry is taken as valid until the server refuses it.
func (t *Tokens) Fresh(now time.Time, skew time.Duration) bool {
	if t == nil || t.AccessToken == "" {
		return false
	}
	return t.Expiry.IsZero() || now.Add(skew).Before(t.Expiry)
}

// ErrSignInRequired is matched (errors.Is) by a *SignInError.
var ErrSignInRequired = errors.New("sign-in required")

// SignInError says the tokens can no longer be used and a person must sign
// in again: the refresh token was refused (revoked or expired), there is
// none, or the server wants scopes the tokens lack.
type SignInError struct {
	Reason string
	Err    error
}

func (e *SignInError) Error() string {
	if e.Err != nil {
		return e.Reason + ": " + e.Err.Error()
	}
	return e.Reason
}

func (e *SignInError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrSignInRequired) true.
func (e *SignInError) Is(target error) bool { return target == ErrSignInRequired }

// Origin is model.Origin: u's scheme://host:port, the default port written out.
func Origin(u *url.URL) string { return model.Origin(u) }

// OriginOf is Origin of a URL string.
func OriginOf(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("parsing %q as a URL: not an absolute URL", raw)
	}
	return Origin(u), nil
}
