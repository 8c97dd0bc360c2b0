package authserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// ParseRegistration parses and checks a client registration request body
// and returns the metadata to register, defaults filled in.
func ParseRegistration(body []byte) (oauthex.ClientRegistrationMetadata, error) {
	var m oauthex.ClientRegistrationMetadata
	if err := json.Unmarshal(body, &m); err != nil {
		return m, fmt.Errorf("parsing registration: %w", err)
	}
	if len(m.RedirectURIs) == 0 || len(m.RedirectURIs) > 10 {
		return m, errors.New("redirect_uris: give between 1 and 10 redirect URIs")
	}
	for i, u := range m.RedirectURIs {
		if err := checkRedirectURI(u); err != nil {
			return m, fmt.Errorf("redirect_uris[%d]: %w", i, err)
		}
	}
	if m.TokenEndpointAuthMethod == "" {
		m.TokenEndpointAuthMethod = "client_secret_basic"
	}
	if !slices.Contains(authMethods, m.TokenEndpointAuthMethod) {
		return m, fmt.Errorf("token_endpoint_auth_method %q: use one of %s", m.TokenEndpointAuthMethod, strings.Join(authMethods, ", "))
	}
	if len(m.GrantTypes) == 0 {
		m.GrantTypes = []string{"authorization_code", "refresh_token"}
	}
	for _, g := range m.GrantTypes {
		if g != "authorization_code" && g != "refresh_token" {
			return m, fmt.Errorf("grant_types: %q is not supported (authorization_code, refresh_token)", g)
		}
	}
	if len(m.ResponseTypes) == 0 {
		m.ResponseTypes = []string{"code"}
	}
	for _, t := range m.ResponseTypes {
		if t != "code" {
			return m, fmt.Errorf("response_types: %q is not supported (code)", t)
		}
	}
	if len(m.ClientName) > 200 {
		return m, errors.New("client_name: longer than 200 characters")
	}
	for _, r := range m.ClientName {
		if r < 0x20 || r == 0x7f {
			return m, errors.New("client_name: control characters are not allowed")
		}
	}
	return m, nil
}

// checkRedirectURI accepts an absolute https URI, or http on a loopback
// host (RFC 8252 §7.3), with no fragment and no user info.
func checkRedirectURI(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("%q is not a URL: %w", s, err)
	}
	if u.Fragment != "" || strings.Contains(s, "#") {
		return fmt.Errorf("%q has a fragment", s)
	}
	if u.User != nil {
		return fmt.Errorf("%q has user info", s)
	}
	if u.Host == "" || u.Hostname() == "" {
		return fmt.Errorf("%q has no host", s)
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		if isLoopback(u.Hostname()) {
			return nil
		}
		return fmt.Errorf("%q: http is allowed only on a loopback host (127.0.0.1, [::1], localhost); use https", s)
	}
	return fmt.Errorf("%q: scheme must be https (or http on a loopback host)", s)
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (s *Server) serveRegister(w http.ResponseWriter, r *http.Request) {
	cors(w)
	if r.Method == http.MethodOptions {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if r.Method != http.MethodPost {
		oauthError(w, http.StatusMethodNotAllowed, "invalid_request", "POST a JSON client registration")
		return
	}
	if !s.limitRegister(w, r) {
		return
	}
	body, err := readBody(w, r)
	if err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_client_metadata", err.Error())
		return
	}
	m, err := ParseRegistration(body)
	if err != nil {
		code := "invalid_client_metadata"
		if strings.HasPrefix(err.Error(), "redirect_uris") {
			code = "invalid_redirect_uri"
		}
		oauthError(w, http.StatusBadRequest, code, err.Error())
		return
	}
	c := Client{ID: "cap_client_" + random(18), AuthMethod: m.TokenEndpointAuthMethod, Name: m.ClientName,
		RedirectURIs: m.RedirectURIs, Scope: m.Scope, Created: s.c.Now()}
	resp := oauthex.ClientRegistrationResponse{ClientRegistrationMetadata: m, ClientID: c.ID, ClientIDIssuedAt: c.Created}
	if c.AuthMethod != "none" {
		resp.ClientSecret = "cap_cs_" + random(32)
		c.SecretHash = hashOf(resp.ClientSecret)
	}
	if err := s.c.Store.CreateClient(r.Context(), c); err != nil {
		s.c.Logger.Error("registering client", "err", err)
		oauthError(w, http.StatusInternalServerError, "server_error", "registering the client failed")
		return
	}
	s.c.Logger.Info("registered oauth client", "client_id", c.ID, "client_name", c.Name)
	writeJSON(w, http.StatusCreated, &resp)
}

func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRequestBytes))
	if err != nil {
		return nil, fmt.Errorf("reading the request: %w", err)
	}
	return b, nil
}

// client is a registered client, or one described by its client ID
// metadata document when the id is an https URL.
func (s *Server) client(ctx context.Context, id string) (Client, error) {
	if !strings.HasPrefix(id, "https://") {
		return s.c.Store.Client(ctx, id)
	}
	if s.c.MetadataClient == nil {
		return Client{}, ErrNotFound
	}
	c, err := s.fetchClientMetadata(ctx, id)
	if err != nil {
		s.c.Logger.Warn("client id metadata document refused", "client_id", id, "err", err)
		return Client{}, ErrNotFound
	}
	return c, nil
}

// fetchClientMetadata reads a client ID metadata document: its client_id
// must be the URL it was read from, its redirect URIs pass the same checks
// as a registration's, and the client is public (no secrets, PKCE only).
func (s *Server) fetchClientMetadata(ctx context.Context, id string) (Client, error) {
	u, err := url.Parse(id)
	if err != nil || u.Scheme != "https" || u.Path == "" || u.Path == "/" || u.Fragment != "" || u.User != nil {
		return Client{}, fmt.Errorf("client_id %q: a metadata document URL is https with a path, no fragment, no user info", id)
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, id, nil)
	if err != nil {
		return Client{}, fmt.Errorf("fetching client metadata: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := s.c.MetadataClient.Do(req)
	if err != nil {
		return Client{}, fmt.Errorf("fetching client metadata: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Client{}, fmt.Errorf("fetching client metadata: %s", resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxRequestBytes+1))
	if err != nil {
		return Client{}, fmt.Errorf("reading client metadata: %w", err)
	}
	if len(body) > maxRequestBytes {
		return Client{}, errors.New("reading client metadata: larger than 64 KiB")
	}
	var doc struct {
		ClientID   string `json:"client_id"`
		AuthMethod string `json:"token_endpoint_auth_method"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return Client{}, fmt.Errorf("parsing client metadata: %w", err)
	}
	if doc.ClientID != id {
		return Client{}, fmt.Errorf("client metadata: client_id %q is not the document's URL", doc.ClientID)
	}
	if doc.AuthMethod != "" && doc.AuthMethod != "none" {
		return Client{}, fmt.Errorf("client metadata: token_endpoint_auth_method %q: a metadata document client is public (none)", doc.AuthMethod)
	}
	m, err := ParseRegistration(body)
	if err != nil {
		return Client{}, fmt.Errorf("client metadata: %w", err)
	}
	return Client{ID: id, AuthMethod: "none", Name: m.ClientName, RedirectURIs: m.RedirectURIs, Scope: m.Scope}, nil
}
