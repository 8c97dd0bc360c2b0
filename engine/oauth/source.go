package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Store keeps one connection's tokens where every process of the hub finds
// them (the hub: the keychain item of the connection).
type Store interface {
	Load(ctx context.Context) (*Tokens, error)
	Save(ctx context.Context, t *Tokens) error
	// Lock serializes refreshes across processes sharing the store.
	Lock(ctx context.Context) (unlock func(), err error)
	// SignInNeeded records that the tokens can no longer be used, and why.
	SignInNeeded(ctx context.Context, reason string) error
}

// DefaultSkew is how long before its expiry an access token is refreshed.
const DefaultSkew = 60 * time.Second

// SourceOptions configure a Source. The zero value is useful.
type SourceOptions struct {
	// HTTPClient reaches the token endpoint (a client with a 30 s timeout
	// that follows no redirect, by default).
	HTTPClient *http.Client
	// Skew: refresh this long before expiry (DefaultSkew).
	Skew time.Duration
	// OnTokens is called with every token set the source starts using
	// (refreshed here or by another process), e.g. to scrub its values.
	OnTokens func(*Tokens)
	// Now is the clock (time.Now).
	Now func() time.Time
}

// Source hands out a valid access token for one connection.
type Source struct {
	store Store
	opts  SourceOptions

	mu  sync.Mutex
	cur *Tokens

	errMu   sync.Mutex
	signErr *SignInError // the last reason to sign in again; nil once tokens work
}

// NewSource starts from t (nil: not signed in yet).
func NewSource(t *Tokens, st Store, opts SourceOptions) *Source {
	if opts.Skew == 0 {
		opts.Skew = DefaultSkew
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{Timeout: 30 * time.Second}
	}
	opts.HTTPClient = noRedirects(opts.HTTPClient)
	return &Source{store: st, opts: opts, cur: t}
}

// Tokens is the token set in use (nil: none), without refreshing.
func (s *Source) Tokens() *Tokens {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur
}

// Token returns tokens whose access token stays valid for the skew,
// refreshing them first when needed. A *SignInError says a person must
// sign in again.
func (s *Source) Token(ctx context.Context) (*Tokens, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur.Fresh(s.opts.Now(), s.opts.Skew) {
		return s.cur, nil
	}
	if s.cur == nil {
		return nil, &SignInError{Reason: "not signed in"}
	}
	t, _, err := s.refreshLocked(ctx, s.cur.AccessToken)
	return t, err
}

// Refresh gets new tokens because the server refused the access token
// rejected (a 401). Tokens another process refreshed meanwhile are used
// without asking the authorization server again.
func (s *Source) Refresh(ctx context.Context, rejected string) (*Tokens, error) {
	t, _, err := s.refreshFor(ctx, rejected)
	return t, err
}

// refreshFor is Refresh, also saying whether it asked the authorization
// server (asked false: it adopted tokens refreshed elsewhere).
func (s *Source) refreshFor(ctx context.Context, rejected string) (t *Tokens, asked bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur != nil && s.cur.AccessToken != rejected && s.cur.Fresh(s.opts.Now(), 0) {
		return s.cur, false, nil
	}
	return s.refreshLocked(ctx, rejected)
}

// Set starts using t (a new sign-in) and saves it.
func (s *Source) Set(ctx context.Context, t *Tokens) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.store.Save(ctx, t); err != nil {
		return fmt.Errorf("saving the tokens: %w", err)
	}
	s.use(t)
	return nil
}

func (s *Source) use(t *Tokens) {
	s.cur = t
	s.note(nil)
	if s.opts.OnTokens != nil {
		s.opts.OnTokens(t)
	}
}

func (s *Source) refreshLocked(ctx context.Context, rejected string) (*Tokens, bool, error) {
	unlock, err := s.store.Lock(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("refreshing the access token: %w", err)
	}
	defer unlock()
	base := s.cur
	if stored, err := s.store.Load(ctx); err == nil && stored != nil {
		if stored.AccessToken != rejected && stored.Fresh(s.opts.Now(), s.opts.Skew) {
			s.use(stored) // another process refreshed (or signed in) meanwhile
			return stored, false, nil
		}
		base = stored // its refresh token may have been rotated
	} else if err != nil && !errors.Is(err, ErrSignInRequired) {
		return nil, false, fmt.Errorf("refreshing the access token: reading the stored tokens: %w", err)
	}
	if base == nil {
		return nil, false, &SignInError{Reason: "not signed in"}
	}
	if base.RefreshToken == "" {
		return nil, false, s.needSignIn(ctx, "the access token expired and the server gave no refresh token", nil)
	}
	nt, err := refresh(ctx, s.opts.HTTPClient, base, s.opts.Now())
	var te *TokenError
	if errors.As(err, &te) && (te.Code == "invalid_grant" || te.Code == "unauthorized_client" || te.Code == "invalid_client") {
		return nil, true, s.needSignIn(ctx, "the authorization server refused the refresh token", err)
	}
	if err != nil {
		return nil, true, fmt.Errorf("refreshing the access token: %w", err)
	}
	if err := s.store.Save(ctx, nt); err != nil {
		return nil, true, fmt.Errorf("refreshing the access token: saving the new tokens: %w", err)
	}
	s.use(nt)
	return nt, true, nil
}

func (s *Source) needSignIn(ctx context.Context, reason string, cause error) error {
	if err := s.store.SignInNeeded(ctx, reason); err != nil {
		return fmt.Errorf("%s; recording it: %w", reason, err)
	}
	e := &SignInError{Reason: reason, Err: cause}
	s.note(e)
	return e
}

// SignInErr is why the tokens can no longer be used, as the last request
// found (nil: they worked, or were not tried). An MCP client library may
// not pass the transport's error through; this does.
func (s *Source) SignInErr() error {
	s.errMu.Lock()
	defer s.errMu.Unlock()
	if s.signErr == nil {
		return nil
	}
	return s.signErr
}

func (s *Source) note(e *SignInError) {
	s.errMu.Lock()
	s.signErr = e
	s.errMu.Unlock()
}

// TokenError is an error answer of a token endpoint (RFC 6749 §5.2).
type TokenError struct {
	Status      int
	Code        string
	Description string
}

func (e *TokenError) Error() string {
	msg := fmt.Sprintf("the token endpoint answered %d %s", e.Status, e.Code)
	if e.Description != "" {
		msg += ": " + e.Description
	}
	return msg
}

// refresh asks the token endpoint for new tokens with the refresh grant.
// Written out rather than through oauth2.Config.TokenSource, which cannot
// send the resource parameter the MCP spec requires on every token request
// (RFC 8707 §2.2).
func refresh(ctx context.Context, hc *http.Client, t *Tokens, now time.Time) (*Tokens, error) {
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {t.RefreshToken}}
	if t.Resource != "" {
		form.Set("resource", t.Resource)
	}
	if t.AuthStyle != "basic" {
		form.Set("client_id", t.ClientID)
		if t.AuthStyle == "post" && t.ClientSecret != "" {
			form.Set("client_secret", t.ClientSecret)
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.TokenURL, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if t.AuthStyle == "basic" {
		req.SetBasicAuth(url.QueryEscape(t.ClientID), url.QueryEscape(t.ClientSecret))
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("reading the token endpoint's answer: %w", err)
	}
	var r struct {
		AccessToken  string      `json:"access_token"`
		TokenType    string      `json:"token_type"`
		RefreshToken string      `json:"refresh_token"`
		ExpiresIn    json.Number `json:"expires_in"`
		Scope        string      `json:"scope"`
		Error        string      `json:"error"`
		Description  string      `json:"error_description"`
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "application/x-www-form-urlencoded" || mt == "text/plain" {
		v, _ := url.ParseQuery(string(body))
		r.AccessToken, r.TokenType, r.RefreshToken = v.Get("access_token"), v.Get("token_type"), v.Get("refresh_token")
		r.ExpiresIn, r.Scope, r.Error, r.Description = json.Number(v.Get("expires_in")), v.Get("scope"), v.Get("error"), v.Get("error_description")
	} else if err := json.Unmarshal(body, &r); err != nil && resp.StatusCode < 300 {
		return nil, fmt.Errorf("the token endpoint's answer is not JSON (%s)", resp.Status)
	}
	if resp.StatusCode >= 300 || r.Error != "" {
		return nil, &TokenError{Status: resp.StatusCode, Code: r.Error, Description: r.Description}
	}
	if r.AccessToken == "" {
		return nil, errors.New("the token endpoint's answer has no access_token")
	}
	nt := *t
	nt.AccessToken = r.AccessToken
	if r.TokenType != "" {
		nt.TokenType = r.TokenType
	}
	if r.RefreshToken != "" {
		nt.RefreshToken = r.RefreshToken
	}
	nt.Expiry = time.Time{}
	if n, err := strconv.ParseInt(r.ExpiresIn.String(), 10, 64); err == nil && n > 0 {
		nt.Expiry = now.Add(time.Duration(n) * time.Second).UTC()
	}
	if r.Scope != "" {
		nt.Scopes = strings.Fields(r.Scope)
	}
	return &nt, nil
}
