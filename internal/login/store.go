package login

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/capabilities-sh/capabilities/engine/secret"
	"golang.org/x/oauth2"
)

// ErrNotSignedIn: no sign-in is stored for the host.
var ErrNotSignedIn = errors.New("not signed in")

// RefPrefix begins the secret reference of every sign-in.
const RefPrefix = "login/"

// Session is what a sign-in keeps, as one value in the secret store: the
// token set and what refreshing it needs. It is never printed.
type Session struct {
	Version  int           `json:"version"`
	Host     string        `json:"host"`
	Issuer   string        `json:"issuer"`
	ClientID string        `json:"client_id"`
	TokenURL string        `json:"token_endpoint"`
	Scopes   []string      `json:"scopes,omitempty"`
	Username string        `json:"username"`
	Token    *oauth2.Token `json:"token"`
	SignedIn time.Time     `json:"signed_in"`
}

// NormalizeHost lowercases a git host ("github.com", "git.example.com:8443")
// and checks it is a host name or IPv4 address with an optional port.
func NormalizeHost(raw string) (string, error) {
	h := strings.TrimSuffix(strings.ToLower(strings.TrimSpace(raw)), ".")
	name, port := h, ""
	if i := strings.LastIndexByte(h, ':'); i >= 0 {
		name, port = h[:i], h[i+1:]
		if port == "" || strings.Trim(port, "0123456789") != "" || len(port) > 5 {
			return "", fmt.Errorf("the host %q: the port %q is not a number", raw, port)
		}
	}
	if name == "" {
		return "", fmt.Errorf("the host %q: empty: give a host name such as github.com", raw)
	}
	for _, label := range strings.Split(name, ".") {
		if label == "" || len(label) > 63 || strings.HasPrefix(label, "-") || strings.HasSuffix(label, "-") || strings.Trim(label, "abcdefghijklmnopqrstuvwxyz0123456789-") != "" {
			if net.ParseIP(name) == nil {
				return "", fmt.Errorf("the host %q is not a host name (such as github.com or git.example.com:8443)", raw)
			}
		}
	}
	return h, nil
}

// Ref is the secret reference of host's sign-in: "login/<host>", its port
// after a "_" ("login/git.example.com_8443").
func Ref(host string) (string, error) {
	h, err := NormalizeHost(host)
	if err != nil {
		return "", err
	}
	ref := RefPrefix + strings.ReplaceAll(h, ":", "_")
	if err := secret.ValidateRef(ref); err != nil {
		return "", fmt.Errorf("the host %q: %w", host, err)
	}
	return ref, nil
}

// Save stores s under its host's reference, replacing any earlier sign-in.
func Save(ctx context.Context, st secret.Store, s *Session) error {
	ref, err := Ref(s.Host)
	if err != nil {
		return err
	}
	if s.Token == nil || s.Token.AccessToken == "" {
		return errors.New("saving the sign-in: no access token")
	}
	s.Version = 1
	data, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("encoding the sign-in for %s: %w", s.Host, err)
	}
	if err := st.Set(ctx, ref, string(data)); err != nil {
		return fmt.Errorf("storing the sign-in for %s: %w", s.Host, err)
	}
	return nil
}

// Load reads host's sign-in; ErrNotSignedIn when there is none.
func Load(ctx context.Context, st secret.Store, host string) (*Session, error) {
	ref, err := Ref(host)
	if err != nil {
		return nil, err
	}
	v, err := st.Get(ctx, ref)
	if errors.Is(err, secret.ErrNotFound) {
		return nil, fmt.Errorf("%w to %s", ErrNotSignedIn, host)
	}
	if err != nil {
		return nil, fmt.Errorf("reading the sign-in for %s: %w", host, err)
	}
	var s Session
	if err := json.Unmarshal([]byte(v), &s); err != nil || s.Token == nil || s.Token.AccessToken == "" {
		// Never wrap the decoder's error: it may quote the value.
		return nil, fmt.Errorf("reading the sign-in for %s: the stored value (secret %s) is not a sign-in: sign in again with capabilities login --host %s", host, ref, host)
	}
	return &s, nil
}

// Delete removes host's sign-in; ErrNotSignedIn when there was none.
func Delete(ctx context.Context, st secret.Store, host string) error {
	ref, err := Ref(host)
	if err != nil {
		return err
	}
	if _, err := st.Get(ctx, ref); errors.Is(err, secret.ErrNotFound) {
		return fmt.Errorf("%w to %s", ErrNotSignedIn, host)
	}
	if err := st.Delete(ctx, ref); err != nil && !errors.Is(err, secret.ErrNotFound) {
		return fmt.Errorf("removing the sign-in for %s: %w", host, err)
	}
	return nil
}

// ErrSignInAgain: the access token expired and cannot be refreshed.
var ErrSignInAgain = errors.New("the sign-in expired")

// AccessToken returns a valid access token for s: the stored one, or,
// once it has expired, a new one from its refresh token (x/oauth2's
// TokenSource), which is stored (with a new refresh token when the server
// rotates it) before it is returned.
func (s *Session) AccessToken(ctx context.Context, st secret.Store, hc *http.Client) (string, error) {
	if s.Token.Valid() {
		return s.Token.AccessToken, nil
	}
	if s.Token.RefreshToken == "" {
		return "", fmt.Errorf("%w for %s and there is no refresh token: sign in again with capabilities login --host %s", ErrSignInAgain, s.Host, s.Host)
	}
	if hc != nil {
		ctx = context.WithValue(ctx, oauth2.HTTPClient, hc)
	}
	f := Flow{Endpoints: Endpoints{Issuer: s.Issuer, TokenURL: s.TokenURL}, ClientID: s.ClientID, Scopes: s.Scopes}
	tok, err := f.config().TokenSource(ctx, s.Token).Token()
	if err != nil {
		return "", fmt.Errorf("%w for %s and refreshing it failed (%v): sign in again with capabilities login --host %s", ErrSignInAgain, s.Host, describe(err), s.Host)
	}
	s.Token = tok
	if err := Save(ctx, st, s); err != nil {
		return "", err
	}
	return tok.AccessToken, nil
}

// DefaultUsername is the user name git sends with the token: GitHub takes
// any, GitLab and Gitea want "oauth2" with an OAuth access token.
func DefaultUsername(issuer string) string {
	if IsGitHub(issuer) {
		return "x-access-token"
	}
	return "oauth2"
}
