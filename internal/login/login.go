// Package login signs a person in for the stack repository's host with the
// OAuth 2.0 device authorization grant (RFC 8628), keeps the token set in
// the hub's secret store (the OS keychain, or its announced mode-600 file)
// under the reference "login/<host>", and answers git's credential-helper
// protocol with it, so that git over https to that host uses the sign-in.
//
// The device flow is golang.org/x/oauth2's (DeviceAuth, DeviceAccessToken:
// authorization_pending keeps polling, slow_down adds 5 s to the interval
// for this and every later request, access_denied and expired_token end
// it). This package adds what it leaves out: endpoint discovery for an
// issuer other than GitHub (RFC 8414 / OpenID Connect metadata), the
// client's public-client authentication fixed to the request body (the
// library's probe would send every poll twice), the check that a device
// authorization response has what RFC 8628 §3.2 requires, an end at the
// code's expiry even when the server sends no expires_in, errors that say
// which of denial, expiry or cancellation ended the wait, and a transport
// for the polls that retries a failed connection with exponential backoff
// (§3.5) and keeps each poll the interval after the one before.
package login

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/oauth2"
)

const (
	// GitHubIssuer is the default issuer.
	GitHubIssuer = "https://github.com"
	// GitHubHost is the git host GitHub's sign-in is for.
	GitHubHost = "github.com"
	// ClientIDEnv names the environment variable holding the OAuth client
	// ID when --client-id is not given.
	ClientIDEnv = "CAPABILITIES_LOGIN_CLIENT_ID"
	// DefaultMaxWait bounds the wait for a server whose device
	// authorization response has no expires_in.
	DefaultMaxWait = 15 * time.Minute
)

// GitHubScopes are the scopes asked of GitHub when none are given: "repo"
// lets git read and push a private stack repository.
var GitHubScopes = []string{"repo"}

var (
	// ErrDenied: the person (or the server) refused the sign-in.
	ErrDenied = errors.New("the sign-in was denied")
	// ErrExpired: the code expired before the sign-in was approved.
	ErrExpired = errors.New("the code expired before the sign-in was approved")
	// ErrNoClientID: no OAuth client ID was given.
	ErrNoClientID = errors.New("no OAuth client ID")
)

// Endpoints are an issuer's device authorization and token endpoints.
type Endpoints struct {
	Issuer        string `json:"issuer"`
	DeviceAuthURL string `json:"device_authorization_endpoint"`
	TokenURL      string `json:"token_endpoint"`
}

// GitHub are GitHub's endpoints (it publishes no discovery metadata for
// OAuth apps). Its token endpoint answers form-encoded unless asked for
// JSON; x/oauth2 reads both, also an error sent with status 200.
var GitHub = Endpoints{
	Issuer:        GitHubIssuer,
	DeviceAuthURL: "https://github.com/login/device/code",
	TokenURL:      "https://github.com/login/oauth/access_token",
}

// IsGitHub reports whether issuer is GitHub's.
func IsGitHub(issuer string) bool {
	return strings.TrimSuffix(issuer, "/") == GitHubIssuer
}

// NoClientIDHelp is the error for a missing client ID: there is no client
// registered for this product, and borrowing another product's would be
// signing in as it.
func NoClientIDHelp(issuer string) error {
	if IsGitHub(issuer) {
		return fmt.Errorf("%w for GitHub: register an OAuth app at https://github.com/settings/applications/new (Settings → Developer settings → OAuth Apps; any homepage and callback URL), tick \"Enable Device Flow\" on its page, then pass its Client ID with --client-id or set %s", ErrNoClientID, ClientIDEnv)
	}
	return fmt.Errorf("%w for %s: register a public client allowed the device authorization grant (urn:ietf:params:oauth:grant-type:device_code) with that authorization server, then pass its client ID with --client-id or set %s", ErrNoClientID, issuer, ClientIDEnv)
}

// ParseIssuer checks an issuer URL: absolute, https (plain http only on
// this machine), no query or fragment (RFC 8414 §2). It returns it without
// a trailing slash.
func ParseIssuer(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("parsing the issuer %q: %w", raw, err)
	}
	if u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return nil, fmt.Errorf("the issuer %q is not an absolute https URL (such as https://gitlab.example.com)", raw)
	}
	if err := httpsOrLoopback(u); err != nil {
		return nil, fmt.Errorf("the issuer %q: %w", raw, err)
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return nil, fmt.Errorf("the issuer %q has a query, fragment or user: an issuer is scheme, host and path only (RFC 8414 §2)", raw)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.RawPath = ""
	return u, nil
}

// httpsOrLoopback refuses plain http to anything but this machine.
func httpsOrLoopback(u *url.URL) error {
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		if isLoopback(u.Hostname()) {
			return nil
		}
		return errors.New("plain http is allowed only on this machine (127.0.0.1, ::1, localhost): use https")
	}
	return fmt.Errorf("scheme %q: want https", u.Scheme)
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// metadata is the part of RFC 8414 / OpenID Connect discovery metadata the
// device flow needs.
type metadata struct {
	Issuer                      string `json:"issuer"`
	DeviceAuthorizationEndpoint string `json:"device_authorization_endpoint"`
	TokenEndpoint               string `json:"token_endpoint"`
}

// Discover finds issuer's endpoints: GitHub's are known; any other
// issuer's come from its authorization server metadata (RFC 8414, at
// /.well-known/oauth-authorization-server with the issuer's path after
// it), else its OpenID Connect discovery document (the issuer's URL plus
// /.well-known/openid-configuration). The metadata must name the same
// issuer, a device_authorization_endpoint and a token_endpoint.
func Discover(ctx context.Context, hc *http.Client, issuer string) (Endpoints, error) {
	u, err := ParseIssuer(issuer)
	if err != nil {
		return Endpoints{}, err
	}
	iss := u.String()
	if IsGitHub(iss) {
		return GitHub, nil
	}
	if hc == nil {
		hc = http.DefaultClient
	}
	origin := u.Scheme + "://" + u.Host
	candidates := []string{
		origin + "/.well-known/oauth-authorization-server" + u.Path,
		iss + "/.well-known/openid-configuration",
	}
	var md *metadata
	var where string
	for _, c := range candidates {
		m, err := getMetadata(ctx, hc, c)
		if errors.Is(err, errNotThere) {
			continue
		}
		if err != nil {
			return Endpoints{}, fmt.Errorf("discovering the endpoints of %s: %w", iss, err)
		}
		md, where = m, c
		break
	}
	if md == nil {
		return Endpoints{}, fmt.Errorf("discovering the endpoints of %s: no authorization server metadata at %s nor %s: check the issuer URL (for GitHub, leave --issuer out)", iss, candidates[0], candidates[1])
	}
	if strings.TrimSuffix(md.Issuer, "/") != iss {
		return Endpoints{}, fmt.Errorf("discovering the endpoints of %s: the metadata at %s names the issuer %q, not %q (RFC 8414 §3.3): refused", iss, where, md.Issuer, iss)
	}
	if md.DeviceAuthorizationEndpoint == "" {
		return Endpoints{}, fmt.Errorf("discovering the endpoints of %s: its metadata (%s) has no device_authorization_endpoint: this server does not offer the device flow (RFC 8628)", iss, where)
	}
	if md.TokenEndpoint == "" {
		return Endpoints{}, fmt.Errorf("discovering the endpoints of %s: its metadata (%s) has no token_endpoint", iss, where)
	}
	for name, e := range map[string]string{"device_authorization_endpoint": md.DeviceAuthorizationEndpoint, "token_endpoint": md.TokenEndpoint} {
		eu, err := url.Parse(e)
		if err != nil || eu.Host == "" {
			return Endpoints{}, fmt.Errorf("discovering the endpoints of %s: its %s %q is not an absolute URL", iss, name, e)
		}
		if err := httpsOrLoopback(eu); err != nil {
			return Endpoints{}, fmt.Errorf("discovering the endpoints of %s: its %s %q: %w", iss, name, e, err)
		}
	}
	return Endpoints{Issuer: iss, DeviceAuthURL: md.DeviceAuthorizationEndpoint, TokenURL: md.TokenEndpoint}, nil
}

var errNotThere = errors.New("not there")

// getMetadata reads a JSON metadata document of at most 1 MB; a 404 or
// 410 is errNotThere.
func getMetadata(ctx context.Context, hc *http.Client, u string) (*metadata, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusGone {
		return nil, errNotThere
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "application/json" {
		return nil, fmt.Errorf("GET %s: content type %q, want application/json", u, resp.Header.Get("Content-Type"))
	}
	var m metadata
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&m); err != nil {
		return nil, fmt.Errorf("decoding the metadata at %s: %w", u, err)
	}
	return &m, nil
}

// Flow is one device-flow sign-in.
type Flow struct {
	Endpoints Endpoints
	ClientID  string
	Scopes    []string
	// HTTPClient makes the requests. Nil: http.DefaultClient.
	HTTPClient *http.Client
	// MaxWait bounds the wait when the server gives no expires_in. Zero:
	// DefaultMaxWait.
	MaxWait time.Duration
}

func (f *Flow) config() *oauth2.Config {
	return &oauth2.Config{
		ClientID: f.ClientID,
		Scopes:   f.Scopes,
		Endpoint: oauth2.Endpoint{
			DeviceAuthURL: f.Endpoints.DeviceAuthURL,
			TokenURL:      f.Endpoints.TokenURL,
			// A public client: client_id in the body (RFC 8628 §3.1, §3.4).
			// Unknown would make x/oauth2 try Basic first and, on every
			// authorization_pending, send the poll again at once.
			AuthStyle: oauth2.AuthStyleInParams,
		},
	}
}

func (f *Flow) ctx(ctx context.Context) context.Context {
	if f.HTTPClient != nil {
		return context.WithValue(ctx, oauth2.HTTPClient, f.HTTPClient)
	}
	return ctx
}

// Start asks for a device code (RFC 8628 §3.1) and checks the answer has
// what §3.2 requires.
func (f *Flow) Start(ctx context.Context) (*oauth2.DeviceAuthResponse, error) {
	if f.ClientID == "" {
		return nil, NoClientIDHelp(f.Endpoints.Issuer)
	}
	da, err := f.config().DeviceAuth(f.ctx(ctx))
	if err != nil {
		return nil, fmt.Errorf("asking %s for a device code: %w", f.Endpoints.DeviceAuthURL, describe(err))
	}
	var missing []string
	if da.DeviceCode == "" {
		missing = append(missing, "device_code")
	}
	if da.UserCode == "" {
		missing = append(missing, "user_code")
	}
	if da.VerificationURI == "" {
		missing = append(missing, "verification_uri")
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("asking %s for a device code: the answer has no %s (RFC 8628 §3.2)", f.Endpoints.DeviceAuthURL, strings.Join(missing, ", "))
	}
	for _, v := range []string{da.VerificationURI, da.VerificationURIComplete} {
		if v == "" {
			continue
		}
		if u, err := url.Parse(v); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return nil, fmt.Errorf("asking %s for a device code: the verification URI %q is not an http(s) URL", f.Endpoints.DeviceAuthURL, v)
		}
	}
	if da.Expiry.IsZero() {
		wait := f.MaxWait
		if wait <= 0 {
			wait = DefaultMaxWait
		}
		da.Expiry = time.Now().Add(wait)
	}
	return da, nil
}

// Wait polls the token endpoint at the server's interval until the person
// approves (the token), denies (ErrDenied), the code expires (ErrExpired)
// or ctx ends (its error). A poll whose connection fails or times out (the
// HTTP client's Timeout bounds each attempt) is sent again after 1, 2, 4
// and 8 s (RFC 8628 §3.5) before the wait fails.
func (f *Flow) Wait(ctx context.Context, da *oauth2.DeviceAuthResponse) (*oauth2.Token, error) {
	hc := http.DefaultClient
	if f.HTTPClient != nil {
		hc = f.HTTPClient
	}
	interval := time.Duration(da.Interval) * time.Second
	if interval <= 0 {
		interval = 5 * time.Second // RFC 8628 §3.2, as DeviceAccessToken
	}
	// The client's timeout bounds each attempt, not the retries together.
	polling := *hc
	polling.Timeout = 0
	polling.Transport = &pollTransport{base: hc.Transport, attemptTimeout: hc.Timeout, interval: interval, first: time.Second, retries: 4}
	tok, err := f.config().DeviceAccessToken(context.WithValue(ctx, oauth2.HTTPClient, &polling), da)
	if err == nil {
		return tok, nil
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	var re *oauth2.RetrieveError
	switch {
	case errors.Is(err, context.DeadlineExceeded) && !time.Now().Before(da.Expiry.Add(-time.Second)):
		// DeviceAccessToken's own deadline: the code's expiry (not a
		// request that timed out before it).
		return nil, ErrExpired
	case errors.As(err, &re) && re.ErrorCode == "expired_token":
		return nil, ErrExpired
	case errors.As(err, &re) && re.ErrorCode == "access_denied":
		if re.ErrorDescription != "" {
			return nil, fmt.Errorf("%w (%s)", ErrDenied, re.ErrorDescription)
		}
		return nil, ErrDenied
	}
	return nil, fmt.Errorf("waiting for the sign-in at %s: %w", f.Endpoints.TokenURL, describe(err))
}

// describe makes an OAuth error one readable clause: the error code and
// its description, or the HTTP status and the start of the body.
func describe(err error) error {
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) {
		return err
	}
	if re.ErrorCode != "" {
		msg := "the server answered " + re.ErrorCode
		if re.ErrorDescription != "" {
			msg += ": " + re.ErrorDescription
		}
		return errors.New(msg)
	}
	body := strings.TrimSpace(string(re.Body))
	if len(body) > 200 {
		body = body[:200] + "…"
	}
	status := "an error"
	if re.Response != nil {
		status = re.Response.Status
	}
	if body == "" {
		return fmt.Errorf("the server answered %s", status)
	}
	return fmt.Errorf("the server answered %s: %s", status, body)
}

// pollTransport carries the polls of the token endpoint. It sends a poll
// again when its connection failed (refused, reset, closed, timed out),
// after 1 s, then twice as long each time, at most retries times (RFC 8628
// §3.5: "clients SHOULD apply exponential backoff" on connection timeouts);
// and it keeps every poll at least the interval after the one before,
// adding 5 s at each slow_down as DeviceAccessToken does, since its ticker
// fires at once after a poll that took longer than the interval.
type pollTransport struct {
	base           http.RoundTripper
	attemptTimeout time.Duration // bounds each attempt; 0: none
	first          time.Duration
	retries        int

	mu       sync.Mutex
	interval time.Duration
	last     time.Time // when the last poll was sent
}

func (p *pollTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	base := p.base
	if base == nil {
		base = http.DefaultTransport
	}
	ctx := req.Context()
	backoff := p.first
	for attempt := 0; ; attempt++ {
		if !p.last.IsZero() {
			if err := sleep(ctx, time.Until(p.last.Add(p.interval))); err != nil {
				return nil, err
			}
		}
		p.last = time.Now()
		resp, err := p.attempt(base, req)
		if err == nil {
			return resp, nil
		}
		if attempt >= p.retries || req.GetBody == nil || ctx.Err() != nil || !connectionError(err) {
			return nil, err
		}
		if err := sleep(ctx, backoff); err != nil {
			return nil, err
		}
		backoff *= 2
		body, gerr := req.GetBody()
		if gerr != nil {
			return nil, err
		}
		req = req.Clone(ctx)
		req.Body = body
	}
}

// attempt sends req once, within attemptTimeout, and reads its answer.
func (p *pollTransport) attempt(base http.RoundTripper, req *http.Request) (*http.Response, error) {
	if p.attemptTimeout > 0 {
		ctx, cancel := context.WithTimeout(req.Context(), p.attemptTimeout)
		defer cancel() // after watch has read the whole body
		req = req.WithContext(ctx)
	}
	resp, err := base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	return p.watch(resp)
}

// watch reads the answer (at most 1 MB, as x/oauth2 does) for a slow_down,
// and hands it on.
func (p *pollTransport) watch(resp *http.Response) (*http.Response, error) {
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	var code string
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "application/x-www-form-urlencoded" || mt == "text/plain" {
		v, _ := url.ParseQuery(string(body))
		code = v.Get("error")
	} else {
		var e struct {
			Error string `json:"error"`
		}
		_ = json.Unmarshal(body, &e)
		code = e.Error
	}
	if code == "slow_down" {
		p.interval += 5 * time.Second
	}
	return resp, nil
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// connectionError reports whether err is a connection's failure, worth
// another try, rather than a permanent one (a bad certificate, a bad URL).
func connectionError(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	var oe *net.OpError
	return errors.As(err, &oe) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED)
}
