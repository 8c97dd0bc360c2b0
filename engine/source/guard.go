package source

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/oauth"
)

// Credential is a resolved secret for one session with an upstream: for a
// stdio source it is put in the process environment under the source's
// SecretEnv; for an HTTP source it is sent in the source's SecretHeader
// ("Authorization: Bearer …" by default), only to the reviewed origin.
type Credential struct {
	Connection string // the connection's name, part of the session's key
	Value      string
	// OAuth, for an HTTP source signed in with OAuth, hands out the access
	// token (Value is then empty): it is sent as Authorization: Bearer only
	// to the origin it was issued for, refreshed before it expires and once
	// when the server refuses it.
	OAuth *oauth.Source
	// Challenge, with OAuth, signs in again when the server refuses the
	// tokens for good (an interactive client); nil: the call fails with an
	// *oauth.SignInError.
	Challenge func(ctx context.Context, ch oauth.Challenge) error
}

// key is what tells one credential from another for the pool: the value,
// or the sign-in an OAuth source belongs to (the same across refreshes).
func (c *Credential) key() string {
	if c == nil {
		return ""
	}
	if c.OAuth != nil {
		if t := c.OAuth.Tokens(); t != nil {
			return "oauth:" + t.Grant
		}
		return "oauth:"
	}
	return c.Value
}

// values are the credential's secret values: its value (and a password
// it holds, model.Secrets), or the tokens of its OAuth sign-in as they are
// now.
func (c *Credential) values() []string {
	if c == nil {
		return nil
	}
	v := model.Secrets(c.Value)
	if c.OAuth != nil {
		if t := c.OAuth.Tokens(); t != nil {
			v = append(v, t.AccessToken, t.RefreshToken)
		}
	}
	return v
}

// guardedTransport lets an HTTP source talk only to the origin fixed when
// it was reviewed: a request (or a redirect) to any other origin is refused,
// so a credential never crosses an origin, and the upstream cannot make the
// hub reach elsewhere.
type guardedTransport struct {
	origin string // scheme://host:port
	header string
	value  string
	extra  map[string]string // the source's own headers
	base   http.RoundTripper
}

// ProbeClient is an HTTP client for src that carries no credential (its
// plain headers only) and reaches only its origin: for asking the server
// whether it wants an OAuth sign-in.
func ProbeClient(src *model.Source) (*http.Client, error) {
	return newGuardedClient(src.URL, "", "", src.Headers)
}

// ProbeClient is the package's ProbeClient with its connections checked
// by o.Egress when set.
func (o *Options) ProbeClient(src *model.Source) (*http.Client, error) {
	var base http.RoundTripper = http.DefaultTransport
	if o.Egress != nil {
		base = o.Egress.Transport(nameOf(src))
	}
	return newGuardedClientOver(src.URL, "", "", src.Headers, base)
}

// Client is an HTTP client for requests made for a source outside its
// sessions (OAuth metadata, a token endpoint): a 30 s timeout, and its
// connections and redirects checked by o.Egress when set. name names the
// source in a refusal.
func (o *Options) Client(name string) *http.Client {
	if o.Egress == nil {
		return &http.Client{Timeout: 30 * time.Second}
	}
	c := o.Egress.Client(name)
	c.Timeout = 30 * time.Second
	return c
}

func newGuardedClient(rawURL string, header, value string, extra map[string]string) (*http.Client, error) {
	return newGuardedClientOver(rawURL, header, value, extra, http.DefaultTransport)
}

func newGuardedClientOver(rawURL string, header, value string, extra map[string]string, base http.RoundTripper) (*http.Client, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("parsing the source URL: %w", err)
	}
	t := &guardedTransport{origin: origin(u), header: header, value: value, extra: extra, base: base}
	return &http.Client{
		Transport: t,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if origin(req.URL) != t.origin {
				return fmt.Errorf("the upstream redirected to %s, outside the reviewed origin %s: refused", origin(req.URL), t.origin)
			}
			if len(via) >= 5 {
				return fmt.Errorf("too many redirects")
			}
			return nil
		},
	}, nil
}

// origin is model.Origin: scheme://host:port, the port written out.
func origin(u *url.URL) string { return model.Origin(u) }

func (t *guardedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if o := origin(req.URL); o != t.origin {
		return nil, fmt.Errorf("refusing a request to %s: the source may reach only %s, the origin fixed when it was reviewed", o, t.origin)
	}
	if t.value != "" || len(t.extra) > 0 {
		req = req.Clone(req.Context())
		for k, v := range t.extra {
			req.Header.Set(k, v)
		}
	}
	if t.value != "" {
		if t.header == "" || strings.EqualFold(t.header, "Authorization") {
			req.Header.Set("Authorization", "Bearer "+t.value)
		} else {
			req.Header.Set(t.header, t.value)
		}
	}
	return t.base.RoundTrip(req)
}
