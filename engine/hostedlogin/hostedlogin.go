// Package hostedlogin signs this machine in to a hosted hub (`capabilities
// hub login <url>`) and keeps the sign-in: OAuth 2.1 authorization code
// with PKCE S256 and a loopback redirect, against the hosted hub's own
// authorization server (found from the protected resource metadata of
// <url>/mcp; the client registered dynamically, RFC 7591), for the
// resource <url>/mcp with the scopes "mcp hub". engine/oauth runs the flow
// and refreshes the tokens.
//
// The tokens (access and refresh) are a secret: they go to the secret
// store (the OS keychain, or its announced mode-600 file fallback) under
// hosted/<host>, never to a config file. The list of sign-ins (URL,
// account, client ID: nothing secret) is hosted.json in the hub folder.
package hostedlogin

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/capabilities-sh/capabilities/engine/oauth"
	"github.com/capabilities-sh/capabilities/engine/secret"
	"github.com/capabilities-sh/capabilities/store"
	"github.com/gofrs/flock"
)

// Scopes a sign-in asks for: the hub's three tools and the person's own
// API (push, status, inbox, decisions).
var Scopes = []string{"mcp", "hub"}

// ListFile is the list of sign-ins, in the hub folder.
const ListFile = "hosted.json"

// ErrNotLoggedIn: no sign-in is kept for the URL.
var ErrNotLoggedIn = errors.New("not signed in to this hosted hub")

// Login is one sign-in to a hosted hub. Its tokens are not in the list
// file; Load reads them from the secret store.
type Login struct {
	URL      string    `json:"url"`               // the hosted hub's base URL
	Account  string    `json:"account,omitempty"` // the tenant, as the hub says
	ClientID string    `json:"clientId"`
	Issuer   string    `json:"issuer,omitempty"`
	Scopes   []string  `json:"scopes,omitempty"`
	At       time.Time `json:"at"` // when the person signed in

	tokens  *oauth.Tokens
	secrets secret.Store
	dir     string
}

// Tokens is the token set (nil for a Login from List).
func (l *Login) Tokens() *oauth.Tokens { return l.tokens }

// NormalizeURL is the hosted hub's base URL: https (plain http only to
// this machine), no query, fragment or trailing slash; a URL ending in
// /mcp (the connector's) is taken as its hub.
func NormalizeURL(raw string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return "", fmt.Errorf("%q is not a hosted hub's URL: give its https URL, like https://hub.example.com", raw)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("%q: a hosted hub's URL has no user, query or fragment", raw)
	}
	if u.Scheme == "http" {
		h := u.Hostname()
		if ip := net.ParseIP(h); h != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return "", fmt.Errorf("%s is not https: a sign-in goes over TLS only (plain http only to this machine)", raw)
		}
	}
	p := strings.TrimSuffix(strings.TrimRight(u.Path, "/"), "/mcp")
	return strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Host) + p, nil
}

// ref is the secret store's name for the tokens of base.
func ref(base string) string {
	u, _ := url.Parse(base)
	name := strings.ToLower(u.Host + u.Path)
	name = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_' || r == '/' {
			return r
		}
		return '-'
	}, name)
	if u.Scheme == "http" {
		name = "http-" + name
	}
	r := "hosted/" + name
	if secret.ValidateRef(r) != nil {
		sum := sha256.Sum256([]byte(base))
		r = "hosted/" + hex.EncodeToString(sum[:12])
	}
	return r
}

// Options configure a sign-in.
type Options struct {
	// URL is the hosted hub (NormalizeURL).
	URL string
	// Open shows the person the authorization page (the browser; in tests
	// an HTTP client that follows the redirects and posts the consent).
	Open func(authURL string) error
	// HTTPClient reaches the hub and its authorization server.
	HTTPClient *http.Client
	Logger     *slog.Logger
}

// SignIn runs the authorization code flow for the hosted hub at o.URL
// (the browser step through o.Open) and returns the new Login, not saved
// yet (Save).
func SignIn(ctx context.Context, o Options) (*Login, error) {
	base, err := NormalizeURL(o.URL)
	if err != nil {
		return nil, fmt.Errorf("signing in: %w", err)
	}
	tk, err := oauth.SignIn(ctx, oauth.Options{
		ServerURL:  base + "/mcp",
		Scopes:     Scopes,
		Open:       o.Open,
		HTTPClient: o.HTTPClient,
		ClientName: "capabilities (hub login)",
		Logger:     o.Logger,
	})
	if err != nil {
		return nil, err
	}
	if !slices.Contains(tk.Scopes, "hub") {
		return nil, fmt.Errorf("signing in: the hosted hub granted the scopes %q, without \"hub\" (push, status, inbox): nothing was stored", strings.Join(tk.Scopes, " "))
	}
	return &Login{URL: base, ClientID: tk.ClientID, Issuer: tk.Issuer, Scopes: tk.Scopes, At: time.Now().UTC(), tokens: tk}, nil
}

// Save keeps l: its tokens in secrets, its entry in dir's list (replacing
// an older sign-in to the same URL).
func Save(ctx context.Context, secrets secret.Store, dir string, l *Login) error {
	if l.tokens == nil {
		return errors.New("saving the sign-in: it holds no tokens")
	}
	if err := secrets.Set(ctx, ref(l.URL), l.tokens.Marshal()); err != nil {
		return fmt.Errorf("saving the sign-in to %s: %w", l.URL, err)
	}
	l.secrets, l.dir = secrets, dir
	return update(dir, func(list []Login) []Login {
		list = slices.DeleteFunc(list, func(x Login) bool { return x.URL == l.URL })
		e := *l
		e.tokens, e.secrets, e.dir = nil, nil, ""
		return append(list, e)
	})
}

// Load reads the sign-in to the hosted hub at rawURL, or ErrNotLoggedIn.
func Load(ctx context.Context, secrets secret.Store, dir, rawURL string) (*Login, error) {
	base, err := NormalizeURL(rawURL)
	if err != nil {
		return nil, err
	}
	list, err := List(dir)
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(list, func(x Login) bool { return x.URL == base })
	if i < 0 {
		return nil, fmt.Errorf("%s: %w: sign in with `capabilities hub login %s`", base, ErrNotLoggedIn, base)
	}
	v, err := secrets.Get(ctx, ref(base))
	if errors.Is(err, secret.ErrNotFound) {
		return nil, fmt.Errorf("%s: %w (its tokens are gone from the secret store): sign in with `capabilities hub login %s`", base, ErrNotLoggedIn, base)
	}
	if err != nil {
		return nil, fmt.Errorf("reading the sign-in to %s: %w", base, err)
	}
	tk, ok := oauth.Parse(v)
	if !ok {
		return nil, fmt.Errorf("reading the sign-in to %s: the stored value is not a token set: sign in again with `capabilities hub login %s`", base, base)
	}
	l := list[i]
	l.tokens, l.secrets, l.dir = tk, secrets, dir
	return &l, nil
}

// Delete forgets the sign-in to rawURL: its tokens and its entry.
// Forgetting one that is not kept is ErrNotLoggedIn.
func Delete(ctx context.Context, secrets secret.Store, dir, rawURL string) error {
	base, err := NormalizeURL(rawURL)
	if err != nil {
		return err
	}
	list, err := List(dir)
	if err != nil {
		return err
	}
	found := slices.ContainsFunc(list, func(x Login) bool { return x.URL == base })
	if found {
		if err := update(dir, func(list []Login) []Login {
			return slices.DeleteFunc(list, func(x Login) bool { return x.URL == base })
		}); err != nil {
			return err
		}
	}
	err = secrets.Delete(ctx, ref(base))
	if err == nil {
		found = true
	} else if !errors.Is(err, secret.ErrNotFound) {
		return fmt.Errorf("forgetting the sign-in to %s: %w", base, err)
	}
	if !found {
		return fmt.Errorf("%s: %w", base, ErrNotLoggedIn)
	}
	return nil
}

// List is the sign-ins kept in dir (without their tokens), by URL.
func List(dir string) ([]Login, error) {
	data, err := os.ReadFile(filepath.Join(dir, ListFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the hosted hubs signed in to: %w", err)
	}
	var f struct {
		Logins []Login `json:"logins"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("reading %s: %w; remove it and sign in again with `capabilities hub login <url>`", filepath.Join(dir, ListFile), err)
	}
	slices.SortFunc(f.Logins, func(a, b Login) int { return strings.Compare(a.URL, b.URL) })
	return f.Logins, nil
}

// update rewrites the list under its lock.
func update(dir string, edit func([]Login) []Login) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("writing the hosted hubs signed in to: %w", err)
	}
	lk := flock.New(filepath.Join(dir, ListFile+".lock"), flock.SetPermissions(0o600))
	if err := lk.Lock(); err != nil {
		return fmt.Errorf("locking %s: %w", lk.Path(), err)
	}
	defer lk.Unlock()
	list, err := List(dir)
	if err != nil {
		return err
	}
	list = edit(list)
	slices.SortFunc(list, func(a, b Login) int { return strings.Compare(a.URL, b.URL) })
	data, err := json.MarshalIndent(map[string]any{"logins": list}, "", "  ")
	if err != nil {
		return err
	}
	if err := store.WriteFileAtomic(filepath.Join(dir, ListFile), append(data, '\n')); err != nil {
		return fmt.Errorf("writing the hosted hubs signed in to: %w", err)
	}
	return nil
}

// tokenStore keeps a Login's tokens for oauth.Source: the secret store,
// refreshes serialized across processes by a lock file in the hub folder.
type tokenStore struct{ l *Login }

func (s tokenStore) Load(ctx context.Context) (*oauth.Tokens, error) {
	v, err := s.l.secrets.Get(secret.Quiet(ctx), ref(s.l.URL))
	if errors.Is(err, secret.ErrNotFound) {
		return nil, &oauth.SignInError{Reason: "the sign-in's tokens are gone"}
	}
	if err != nil {
		return nil, err
	}
	tk, ok := oauth.Parse(v)
	if !ok {
		return nil, &oauth.SignInError{Reason: "the stored sign-in is not a token set"}
	}
	return tk, nil
}

func (s tokenStore) Save(ctx context.Context, t *oauth.Tokens) error {
	s.l.tokens = t
	return s.l.secrets.Set(secret.Quiet(ctx), ref(s.l.URL), t.Marshal())
}

func (s tokenStore) Lock(ctx context.Context) (func(), error) {
	if err := os.MkdirAll(s.l.dir, 0o700); err != nil {
		return nil, err
	}
	lk := flock.New(filepath.Join(s.l.dir, ListFile+"."+strings.ReplaceAll(ref(s.l.URL), "/", "_")+".lock"), flock.SetPermissions(0o600))
	if _, err := lk.TryLockContext(ctx, 20*time.Millisecond); err != nil {
		return nil, fmt.Errorf("locking the sign-in to %s: %w", s.l.URL, err)
	}
	return func() { _ = lk.Unlock() }, nil
}

func (s tokenStore) SignInNeeded(context.Context, string) error { return nil }

// Client is an HTTP client that sends the sign-in's access token to the
// hosted hub (its origin only, never elsewhere, redirects included),
// refreshing it before it expires and when the hub refuses it; a refresh
// the hub refuses is an *oauth.SignInError (sign in again). It has no
// overall timeout (an event stream lasts): bound each request with its
// context. ctx is not kept.
func (l *Login) Client(ctx context.Context) *http.Client {
	_ = ctx
	src := oauth.NewSource(l.tokens, tokenStore{l}, oauth.SourceOptions{})
	return &http.Client{Transport: &oauth.Transport{Source: src}}
}
