package authserver

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// clientForm reads a client's POSTed form (the token and revocation
// endpoints) and authenticates the client; false when it answered already
// (a CORS preflight, another method, a bad form, a client refused).
func (s *Server) clientForm(w http.ResponseWriter, r *http.Request) (Client, bool) {
	cors(w)
	if r.Method == http.MethodOptions {
		w.WriteHeader(http.StatusNoContent)
		return Client{}, false
	}
	if r.Method != http.MethodPost {
		oauthError(w, http.StatusMethodNotAllowed, "invalid_request", "POST a form")
		return Client{}, false
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxRequestBytes)
	if err := r.ParseForm(); err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_request", "reading the form: "+err.Error())
		return Client{}, false
	}
	return s.authenticateClient(w, r)
}

func (s *Server) serveToken(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	c, ok := s.clientForm(w, r)
	if !ok {
		return
	}
	switch r.PostForm.Get("grant_type") {
	case "authorization_code":
		s.exchangeCode(w, r, c)
	case "refresh_token":
		s.refresh(w, r, c)
	default:
		oauthError(w, http.StatusBadRequest, "unsupported_grant_type", "grant_type must be authorization_code or refresh_token")
	}
}

// authenticateClient checks client credentials per the client's method.
func (s *Server) authenticateClient(w http.ResponseWriter, r *http.Request) (Client, bool) {
	id, secret, basic := r.BasicAuth()
	if basic {
		id, _ = url.QueryUnescape(id)
		secret, _ = url.QueryUnescape(secret)
	} else {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	c, err := s.client(r.Context(), id)
	if err != nil {
		if !errors.Is(err, ErrNotFound) {
			s.c.Logger.Error("looking up client", "err", err)
		}
		oauthError(w, http.StatusUnauthorized, "invalid_client", "unknown client")
		return c, false
	}
	if c.SecretHash == "" {
		return c, true
	}
	if secret == "" || subtle.ConstantTimeCompare([]byte(hashOf(secret)), []byte(c.SecretHash)) != 1 {
		oauthError(w, http.StatusUnauthorized, "invalid_client", "wrong or missing client secret")
		return c, false
	}
	return c, true
}

func (s *Server) exchangeCode(w http.ResponseWriter, r *http.Request, c Client) {
	f := r.PostForm
	code, err := s.c.Store.UseCode(r.Context(), hashOf(f.Get("code")))
	switch {
	case errors.Is(err, ErrUsed):
		// A replayed code: revoke what it granted (OAuth 2.1 §4.1.3).
		if err := s.c.Store.RevokeFamily(r.Context(), code.Family); err != nil {
			s.c.Logger.Error("revoking a replayed code's tokens", "err", err)
		}
		oauthError(w, http.StatusBadRequest, "invalid_grant", "the authorization code was already used")
		return
	case errors.Is(err, ErrNotFound):
		oauthError(w, http.StatusBadRequest, "invalid_grant", "unknown authorization code")
		return
	case err != nil:
		s.serverError(w, "using code", err)
		return
	}
	switch {
	case code.ClientID != c.ID:
		oauthError(w, http.StatusBadRequest, "invalid_grant", "the code was issued to another client")
	case !s.c.Now().Before(code.Expires):
		oauthError(w, http.StatusBadRequest, "invalid_grant", "the authorization code expired")
	case f.Get("redirect_uri") != "" && f.Get("redirect_uri") != code.RedirectURI:
		oauthError(w, http.StatusBadRequest, "invalid_grant", "redirect_uri differs from the authorization request's")
	case !sameResource(f.Get("resource"), code.Resource):
		oauthError(w, http.StatusBadRequest, "invalid_target", "resource differs from the authorization request's")
	case !pkceMatches(f.Get("code_verifier"), code.Challenge):
		oauthError(w, http.StatusBadRequest, "invalid_grant", "code_verifier does not match the code_challenge")
	default:
		s.issue(w, r, code.ClientID, code.Tenant, code.Resource, code.Scope, code.Family)
	}
}

// sameResource says a token request's resource (optional) names the grant's.
func sameResource(req, granted string) bool {
	return req == "" || req == granted || req == granted+"/"
}

func pkceMatches(verifier, challenge string) bool {
	if len(verifier) < 43 || len(verifier) > 128 {
		return false
	}
	sum := sha256.Sum256([]byte(verifier))
	return subtle.ConstantTimeCompare([]byte(base64.RawURLEncoding.EncodeToString(sum[:])), []byte(challenge)) == 1
}

func (s *Server) refresh(w http.ResponseWriter, r *http.Request, c Client) {
	f := r.PostForm
	rt := f.Get("refresh_token")
	if !strings.HasPrefix(rt, refreshPrefix) {
		oauthError(w, http.StatusBadRequest, "invalid_grant", "unknown refresh token")
		return
	}
	t, err := s.c.Store.UseRefresh(r.Context(), hashOf(rt))
	switch {
	case errors.Is(err, ErrUsed):
		if t.ClientID == c.ID {
			if err := s.c.Store.RevokeFamily(r.Context(), t.Family); err != nil {
				s.c.Logger.Error("revoking a reused refresh token's family", "err", err)
			}
			s.c.Logger.Warn("refresh token reused: grant revoked", "client_id", c.ID, "tenant", t.Tenant)
		}
		oauthError(w, http.StatusBadRequest, "invalid_grant", "the refresh token was already used; the grant is revoked, sign in again")
		return
	case errors.Is(err, ErrNotFound):
		oauthError(w, http.StatusBadRequest, "invalid_grant", "unknown refresh token")
		return
	case err != nil:
		s.serverError(w, "using refresh token", err)
		return
	}
	switch {
	case t.ClientID != c.ID:
		oauthError(w, http.StatusBadRequest, "invalid_grant", "the refresh token was issued to another client")
	case t.Revoked:
		oauthError(w, http.StatusBadRequest, "invalid_grant", "the refresh token was revoked")
	case !s.c.Now().Before(t.Expires):
		oauthError(w, http.StatusBadRequest, "invalid_grant", "the refresh token expired")
	case !sameResource(f.Get("resource"), t.Resource):
		oauthError(w, http.StatusBadRequest, "invalid_target", "resource differs from the grant's")
	default:
		scope := t.Scope
		if req := strings.Fields(f.Get("scope")); len(req) > 0 {
			have := strings.Fields(t.Scope)
			for _, x := range req {
				if !slices.Contains(have, x) {
					oauthError(w, http.StatusBadRequest, "invalid_scope", fmt.Sprintf("scope %q was not granted", x))
					return
				}
			}
			scope = strings.Join(req, " ")
		}
		s.issue(w, r, t.ClientID, t.Tenant, t.Resource, scope, t.Family)
	}
}

func (s *Server) issue(w http.ResponseWriter, r *http.Request, clientID, tenant, resource, scope, family string) {
	now := s.c.Now()
	at, rt := accessPrefix+random(32), refreshPrefix+random(32)
	err := s.c.Store.CreateTokens(r.Context(),
		Token{Hash: hashOf(at), Kind: Access, ClientID: clientID, Tenant: tenant, Resource: resource, Scope: scope, Family: family, Expires: now.Add(s.c.AccessTTL)},
		Token{Hash: hashOf(rt), Kind: Refresh, ClientID: clientID, Tenant: tenant, Resource: resource, Scope: scope, Family: family, Expires: now.Add(s.c.RefreshTTL)})
	if err != nil {
		s.serverError(w, "storing tokens", err)
		return
	}
	resp := map[string]any{"access_token": at, "token_type": "Bearer", "expires_in": int(s.c.AccessTTL.Seconds()), "refresh_token": rt}
	if scope != "" {
		resp["scope"] = scope
	}
	writeJSON(w, http.StatusOK, resp)
}

// ---- revocation (RFC 7009) ----

func (s *Server) serveRevoke(w http.ResponseWriter, r *http.Request) {
	c, ok := s.clientForm(w, r)
	if !ok {
		return
	}
	tok := r.PostForm.Get("token")
	if tok == "" {
		oauthError(w, http.StatusBadRequest, "invalid_request", "token is missing")
		return
	}
	t, err := s.c.Store.Token(r.Context(), hashOf(tok))
	if err == nil && t.ClientID == c.ID {
		if t.Kind == Refresh {
			// Revoking a refresh token ends the grant (RFC 7009 §2.1).
			err = s.c.Store.RevokeFamily(r.Context(), t.Family)
		} else {
			err = s.c.Store.RevokeToken(r.Context(), t.Hash)
		}
	}
	if err != nil && !errors.Is(err, ErrNotFound) {
		s.serverError(w, "revoking", err)
		return
	}
	// Unknown tokens and other clients' tokens get 200 too (RFC 7009 §2.2).
	w.WriteHeader(http.StatusOK)
}
