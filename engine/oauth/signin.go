package oauth

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"html"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/capabilities-sh/capabilities/internal/peer"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// Options configure a sign-in. Only ServerURL and Open are required.
type Options struct {
	// ServerURL is the MCP server's URL (the protected resource).
	ServerURL string
	// Challenge is what the server answered without a token; the zero
	// value makes SignIn probe the server for it.
	Challenge *Challenge
	// ClientID of a client registered with the authorization server by
	// hand; empty: a client ID metadata document (ClientMetadataURL) when
	// the server supports them, else dynamic client registration.
	ClientID     string
	ClientSecret string
	// ClientMetadataURL is an https URL serving the hub's client ID
	// metadata document; used only when the server advertises support.
	ClientMetadataURL string
	// Scopes to ask for; empty: the challenge's, else the resource's
	// scopes_supported, else none.
	Scopes []string
	// Open shows the person the authorization URL: the browser, or, in
	// tests, an HTTP client that follows the server's redirects.
	Open func(authURL string) error
	// HTTPClient makes the requests to the server and the authorization
	// server (http.DefaultClient when nil).
	HTTPClient *http.Client
	// ClientName is shown by the authorization server ("capabilities").
	ClientName string
	// Logger receives the steps (nil: none).
	Logger *slog.Logger
	// AuthServer, when set, is the authorization server to use as given
	// (an OpenAPI document's oauth2 flow): no discovery, and no probe of
	// ServerURL. Resource is then the resource parameter to send ("":
	// none) and ScopesSupported the scopes asked for by default.
	AuthServer      *oauthex.AuthServerMeta
	Resource        string
	ScopesSupported []string
}

// redirectPath is the path of the loopback redirect URI.
const redirectPath = "/callback"

// SignIn runs the authorization code flow with PKCE and returns the tokens.
// It listens on 127.0.0.1 (a free port) for the redirect, for as long as ctx
// allows: the caller bounds how long a person may take.
func SignIn(ctx context.Context, o Options) (*Tokens, error) {
	if o.Open == nil {
		return nil, errors.New("signing in: no way to open the authorization page")
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	origin, err := OriginOf(o.ServerURL)
	if err != nil {
		return nil, fmt.Errorf("signing in: %w", err)
	}
	ch := Challenge{}
	var md *Metadata
	switch {
	case o.AuthServer != nil:
		for _, u := range []string{o.AuthServer.AuthorizationEndpoint, o.AuthServer.TokenEndpoint} {
			if err := httpsOrLoopback(u); err != nil {
				return nil, fmt.Errorf("signing in: %w", err)
			}
		}
		md = &Metadata{AS: o.AuthServer, Resource: o.Resource, ScopesSupported: o.ScopesSupported}
	case o.Challenge != nil:
		ch = *o.Challenge
	default:
		c, status, err := Probe(ctx, o.HTTPClient, o.ServerURL)
		if err != nil {
			return nil, fmt.Errorf("signing in: %w", err)
		}
		if !c.Bearer {
			log.Info("the server let a request through without a token; looking for its OAuth metadata anyway", "status", status)
		}
		ch = c
	}
	if md == nil {
		md, err = Discover(ctx, o.HTTPClient, o.ServerURL, ch)
		if err != nil {
			return nil, fmt.Errorf("signing in: %w", err)
		}
	}
	asm := md.AS
	log.Info("authorization server found", "issuer", asm.Issuer, "resource", md.Resource, "legacy", md.Legacy)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("signing in: listening for the redirect on 127.0.0.1: %w", err)
	}
	// The authorization URL (state and code challenge) is on the browser's
	// command line for every user to read: another user's answer, an error
	// or a code of their own account, is not taken.
	ln = peer.SameUser(ln, func(uid int) {
		log.Warn("refused a redirect to the sign-in's listener from another user's process", "uid", uid)
	})
	defer ln.Close()
	redirectURI := fmt.Sprintf("http://127.0.0.1:%d%s", ln.Addr().(*net.TCPAddr).Port, redirectPath)

	cl, err := register(ctx, o, asm, redirectURI)
	if err != nil {
		return nil, fmt.Errorf("signing in: %w", err)
	}
	scopes := o.Scopes
	if len(scopes) == 0 {
		scopes = ch.Scopes
	}
	if len(scopes) == 0 {
		scopes = md.ScopesSupported
	}
	scopes = slices.Clone(scopes)
	// SEP-2207: ask for a refresh token where the server says how.
	if slices.Contains(asm.ScopesSupported, "offline_access") && !slices.Contains(scopes, "offline_access") {
		scopes = append(scopes, "offline_access")
	}
	cfg := &oauth2.Config{
		ClientID:     cl.id,
		ClientSecret: cl.secret,
		Endpoint:     oauth2.Endpoint{AuthURL: asm.AuthorizationEndpoint, TokenURL: asm.TokenEndpoint, AuthStyle: styleOf(cl.style)},
		RedirectURL:  redirectURI,
		Scopes:       scopes,
	}
	verifier := oauth2.GenerateVerifier()
	state := rand.Text()
	authOpts := []oauth2.AuthCodeOption{oauth2.S256ChallengeOption(verifier)}
	if md.Resource != "" {
		authOpts = append(authOpts, oauth2.SetAuthURLParam("resource", md.Resource))
	}
	authURL := cfg.AuthCodeURL(state, authOpts...)

	got := make(chan callback, 1)
	srv := &http.Server{Handler: callbackHandler(state, got), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()

	if err := o.Open(authURL); err != nil {
		return nil, fmt.Errorf("signing in: opening the authorization page: %w", err)
	}
	var cb callback
	select {
	case cb = <-got:
	case <-ctx.Done():
		return nil, fmt.Errorf("signing in: no answer from the authorization page: %w", context.Cause(ctx))
	}
	if cb.err != "" {
		return nil, fmt.Errorf("signing in: the authorization server answered %s", cb.err)
	}
	if err := checkIssuer(cb.iss, asm); err != nil {
		return nil, fmt.Errorf("signing in: %w", err)
	}
	exOpts := []oauth2.AuthCodeOption{oauth2.VerifierOption(verifier)}
	if md.Resource != "" {
		exOpts = append(exOpts, oauth2.SetAuthURLParam("resource", md.Resource))
	}
	xctx := context.WithValue(ctx, oauth2.HTTPClient, noRedirects(o.HTTPClient))
	tok, err := cfg.Exchange(xctx, cb.code, exOpts...)
	if err != nil {
		return nil, fmt.Errorf("signing in: exchanging the authorization code: %w", tokenError(err))
	}
	t := &Tokens{
		Kind:         Kind,
		AccessToken:  tok.AccessToken,
		RefreshToken: tok.RefreshToken,
		TokenType:    tok.TokenType,
		Expiry:       tok.Expiry.UTC(),
		TokenURL:     asm.TokenEndpoint,
		AuthStyle:    cl.style,
		ClientID:     cl.id,
		ClientSecret: cl.secret,
		Issuer:       asm.Issuer,
		Resource:     md.Resource,
		Origin:       origin,
		Scopes:       scopes,
		Grant:        rand.Text(),
	}
	if s, ok := tok.Extra("scope").(string); ok && s != "" {
		t.Scopes = strings.Fields(s)
	}
	return t, nil
}

type clientReg struct {
	id, secret string
	style      string // basic, post or none
}

// register picks the client: the one given, a client ID metadata document,
// or a dynamically registered one.
func register(ctx context.Context, o Options, asm *oauthex.AuthServerMeta, redirectURI string) (*clientReg, error) {
	if o.ClientID != "" {
		style := "none"
		if o.ClientSecret != "" {
			style = pickStyle(asm.TokenEndpointAuthMethodsSupported)
		}
		return &clientReg{id: o.ClientID, secret: o.ClientSecret, style: style}, nil
	}
	if o.ClientMetadataURL != "" && asm.ClientIDMetadataDocumentSupported {
		return &clientReg{id: o.ClientMetadataURL, style: "none"}, nil
	}
	if asm.RegistrationEndpoint == "" {
		return nil, fmt.Errorf("the authorization server %s offers no dynamic client registration: register a client there (redirect URI http://127.0.0.1/callback, any port) and give its ID with --client-id", asm.Issuer)
	}
	name := o.ClientName
	if name == "" {
		name = "capabilities"
	}
	resp, err := oauthex.RegisterClient(ctx, asm.RegistrationEndpoint, &oauthex.ClientRegistrationMetadata{
		RedirectURIs:  []string{redirectURI},
		ClientName:    name,
		GrantTypes:    []string{"authorization_code", "refresh_token"},
		ResponseTypes: []string{"code"},
	}, noRedirects(o.HTTPClient))
	if err != nil {
		return nil, fmt.Errorf("registering the hub with %s: %w", asm.RegistrationEndpoint, err)
	}
	style := "basic" // RFC 7591 §2: the default
	switch resp.TokenEndpointAuthMethod {
	case "client_secret_post":
		style = "post"
	case "none":
		style = "none"
	case "":
		if resp.ClientSecret == "" {
			style = "none"
		} else if m := pickStyle(asm.TokenEndpointAuthMethodsSupported); m != "none" {
			style = m
		}
	}
	return &clientReg{id: resp.ClientID, secret: resp.ClientSecret, style: style}, nil
}

// pickStyle chooses how a client with a secret authenticates: post when
// offered (OAuth 2.1's preference), else basic.
func pickStyle(supported []string) string {
	switch {
	case slices.Contains(supported, "client_secret_post"):
		return "post"
	default:
		return "basic"
	}
}

func styleOf(s string) oauth2.AuthStyle {
	switch s {
	case "basic":
		return oauth2.AuthStyleInHeader
	default:
		return oauth2.AuthStyleInParams
	}
}

// checkIssuer applies RFC 9207: an iss in the redirect must be the
// server's; a server that says it sends one must.
func checkIssuer(iss string, asm *oauthex.AuthServerMeta) error {
	if iss == "" {
		if asm.AuthorizationResponseIssParameterSupported {
			return fmt.Errorf("the authorization server %s promises an iss parameter in its answer and sent none: refused", asm.Issuer)
		}
		return nil
	}
	if strings.TrimRight(iss, "/") != strings.TrimRight(asm.Issuer, "/") {
		return fmt.Errorf("the answer came from issuer %q, not %q: refused", iss, asm.Issuer)
	}
	return nil
}

type callback struct {
	code, iss, err string
}

// callbackHandler takes the redirect: a request whose state is not the
// one sent is refused and the listener keeps waiting.
func callbackHandler(state string, got chan<- callback) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != redirectPath {
			http.NotFound(w, r)
			return
		}
		q := r.URL.Query()
		if q.Get("state") != state {
			w.WriteHeader(http.StatusBadRequest)
			page(w, "Sign-in refused", "This answer does not belong to the sign-in the hub started (its state does not match). Start again with capabilities hub auth.")
			return
		}
		cb := callback{code: q.Get("code"), iss: q.Get("iss")}
		if e := q.Get("error"); e != "" {
			cb.err = e
			if d := q.Get("error_description"); d != "" {
				cb.err += ": " + d
			}
		} else if cb.code == "" {
			cb.err = "no authorization code"
		}
		select {
		case got <- cb:
		default: // a second answer: the first one counts
		}
		if cb.err != "" {
			w.WriteHeader(http.StatusBadRequest)
			page(w, "Sign-in failed", "The authorization server answered: "+cb.err)
			return
		}
		page(w, "Signed in", "The hub has what it needs. You can close this tab.")
	})
}

func page(w http.ResponseWriter, title, msg string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'none'")
	fmt.Fprintf(w, "<!doctype html><meta charset=utf-8><title>%s</title><body style=\"font:16px system-ui;margin:3em\"><h1>%s</h1><p>%s</p>", html.EscapeString(title), html.EscapeString(title), html.EscapeString(msg))
}

// noRedirects is hc, not following redirects: a token or registration
// endpoint that redirects is not followed with the client's credentials.
func noRedirects(hc *http.Client) *http.Client {
	c := *client(hc)
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &c
}

// tokenError shortens an oauth2 error to what the server said.
func tokenError(err error) error {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) && re.ErrorCode != "" {
		msg := re.ErrorCode
		if re.ErrorDescription != "" {
			msg += ": " + re.ErrorDescription
		}
		return fmt.Errorf("the token endpoint answered %s (%w)", msg, err)
	}
	return err
}
