package authserver

import (
	"context"
	"crypto/hmac"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// authRequest is a checked /authorize request.
type authRequest struct {
	client                                         Client
	redirectURI, state, challenge, resource, scope string
}

// fields are the parameters carried through the consent form.
var consentFields = []string{"client_id", "redirect_uri", "state", "code_challenge", "code_challenge_method", "resource", "scope", "response_type"}

func (s *Server) serveAuthorize(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Content-Security-Policy", consentCSP(""))
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	if r.Method != http.MethodGet && r.Method != http.MethodPost {
		http.Error(w, "use GET (or POST from the consent page)", http.StatusMethodNotAllowed)
		return
	}
	if r.Method == http.MethodPost {
		r.Body = http.MaxBytesReader(w, r.Body, maxRequestBytes)
		if err := r.ParseForm(); err != nil {
			http.Error(w, "reading the consent form: "+err.Error(), http.StatusBadRequest)
			return
		}
	}
	q := r.URL.Query()
	if r.Method == http.MethodPost {
		q = r.PostForm
	}
	ar, redirectable, err := s.checkAuthorize(r.Context(), q)
	if err != nil {
		if !redirectable {
			// Never redirect to an unchecked URI: show the error here.
			http.Error(w, "authorization request refused: "+err.Error(), http.StatusBadRequest)
			return
		}
		s.redirectError(w, r, ar, err)
		return
	}
	tenant, ok := s.c.Person(r)
	if !ok {
		if r.Method == http.MethodGet && s.c.SignIn != nil {
			s.c.SignIn(w, r)
			return
		}
		http.Error(w, "sign in to the hub first", http.StatusUnauthorized)
		return
	}
	if r.Method == http.MethodGet {
		exp := s.c.Now().Add(s.c.ConsentTTL).Unix()
		fields := map[string]string{}
		for _, k := range consentFields {
			fields[k] = q.Get(k)
		}
		fields["redirect_uri"] = ar.redirectURI
		fields["resource"] = ar.resource
		fields["scope"] = ar.scope
		fields["expires"] = strconv.FormatInt(exp, 10)
		fields["csrf"] = s.csrf(tenant, fields)
		// Browsers apply form-action to the redirect that follows the
		// form's POST, so the client's redirect origin is allowed too.
		w.Header().Set("Content-Security-Policy", consentCSP(originOf(ar.redirectURI)))
		var allows []string
		for _, sc := range strings.Fields(ar.scope) {
			if t, ok := s.c.ScopeText[sc]; ok {
				allows = append(allows, t)
			} else {
				allows = append(allows, "scope "+sc)
			}
		}
		person := ""
		if s.c.Display != nil {
			person = s.c.Display(r)
		}
		s.c.Consent.Render(w, r, Prompt{Tenant: tenant, Person: person, ClientID: ar.client.ID, ClientName: ar.client.Name,
			RedirectURI: ar.redirectURI, Resource: ar.resource, Scope: ar.scope, Allows: allows, Action: s.c.Issuer + PathAuthorize, Fields: fields})
		return
	}
	// POST: the consent decision.
	if o := r.Header.Get("Origin"); o != "" && o != "null" && o != s.c.Issuer {
		http.Error(w, "consent refused: the form was posted from another origin", http.StatusForbidden)
		return
	}
	fields := map[string]string{}
	for _, k := range consentFields {
		fields[k] = q.Get(k)
	}
	fields["expires"] = q.Get("expires")
	exp, err := strconv.ParseInt(fields["expires"], 10, 64)
	if err != nil || !hmac.Equal([]byte(q.Get("csrf")), []byte(s.csrf(tenant, fields))) {
		http.Error(w, "consent refused: the form's CSRF token is wrong; open the client's sign-in link again", http.StatusForbidden)
		return
	}
	if s.c.Now().Unix() > exp {
		http.Error(w, "consent refused: the form expired; open the client's sign-in link again", http.StatusForbidden)
		return
	}
	if q.Get("decision") != "allow" {
		s.redirectError(w, r, ar, oauthErr{"access_denied", "the person denied access"})
		return
	}
	code := codePrefix + random(32)
	err = s.c.Store.CreateCode(r.Context(), Code{Hash: hashOf(code), ClientID: ar.client.ID, Tenant: tenant,
		RedirectURI: ar.redirectURI, Resource: ar.resource, Scope: ar.scope, Challenge: ar.challenge,
		Family: random(16), Expires: s.c.Now().Add(s.c.CodeTTL)})
	if err != nil {
		s.c.Logger.Error("storing authorization code", "err", err)
		s.redirectError(w, r, ar, oauthErr{"server_error", "storing the code failed"})
		return
	}
	s.c.Logger.Info("oauth consent given", "client_id", ar.client.ID, "tenant", tenant)
	s.redirect(w, r, ar, url.Values{"code": {code}})
}

type oauthErr struct{ code, desc string }

func (e oauthErr) Error() string { return e.code + ": " + e.desc }

// checkAuthorize checks the request; redirectable says the client and
// redirect URI were valid, so an error may go back to the client.
func (s *Server) checkAuthorize(ctx context.Context, q url.Values) (authRequest, bool, error) {
	var ar authRequest
	c, err := s.client(ctx, q.Get("client_id"))
	if errors.Is(err, ErrNotFound) {
		return ar, false, errors.New("unknown client_id; register the client first")
	}
	if err != nil {
		return ar, false, fmt.Errorf("looking up the client: %w", err)
	}
	ar.client = c
	ru := q.Get("redirect_uri")
	switch {
	case ru == "" && len(c.RedirectURIs) == 1:
		ru = c.RedirectURIs[0]
	case ru == "":
		return ar, false, errors.New("redirect_uri is missing and the client registered several")
	case !redirectRegistered(c.RedirectURIs, ru):
		return ar, false, fmt.Errorf("redirect_uri %q is not registered for this client", ru)
	}
	ar.redirectURI = ru
	ar.state = q.Get("state")
	if q.Get("response_type") != "code" {
		return ar, true, oauthErr{"unsupported_response_type", "response_type must be code"}
	}
	switch q.Get("code_challenge_method") {
	case "S256":
	case "":
		return ar, true, oauthErr{"invalid_request", "PKCE is required: send code_challenge with code_challenge_method=S256"}
	default:
		return ar, true, oauthErr{"invalid_request", "code_challenge_method must be S256 (plain is refused)"}
	}
	ch := q.Get("code_challenge")
	if len(ch) != 43 || !isBase64URL(ch) {
		return ar, true, oauthErr{"invalid_request", "code_challenge must be a base64url SHA-256 (43 characters)"}
	}
	ar.challenge = ch
	ar.resource = q.Get("resource")
	if ar.resource == "" || ar.resource == s.c.Resource+"/" {
		// Clients differ on the trailing slash (RFC 9728 §3.3); the grant
		// binds the canonical form.
		ar.resource = s.c.Resource
	}
	if ar.resource != s.c.Resource {
		return ar, true, oauthErr{"invalid_target", fmt.Sprintf("resource %q is not served here (%s)", ar.resource, s.c.Resource)}
	}
	scope, err := s.grantScope(q.Get("scope"))
	if err != nil {
		return ar, true, err
	}
	ar.scope = scope
	return ar, true, nil
}

// redirectRegistered compares exactly, except that a loopback IP redirect
// may use any port (RFC 8252 §7.3).
func redirectRegistered(registered []string, ru string) bool {
	if slices.Contains(registered, ru) {
		return true
	}
	u, err := url.Parse(ru)
	if err != nil || u.Scheme != "http" {
		return false
	}
	if ip := net.ParseIP(u.Hostname()); ip == nil || !ip.IsLoopback() {
		return false
	}
	for _, reg := range registered {
		v, err := url.Parse(reg)
		if err == nil && v.Scheme == "http" && v.Hostname() == u.Hostname() && v.Path == u.Path && v.RawQuery == u.RawQuery {
			return true
		}
	}
	return false
}

func (s *Server) redirectError(w http.ResponseWriter, r *http.Request, ar authRequest, err error) {
	var oe oauthErr
	if !errors.As(err, &oe) {
		oe = oauthErr{"server_error", "the authorization failed"}
	}
	s.redirect(w, r, ar, url.Values{"error": {oe.code}, "error_description": {oe.desc}})
}

func (s *Server) redirect(w http.ResponseWriter, r *http.Request, ar authRequest, v url.Values) {
	u, _ := url.Parse(ar.redirectURI) // checked at registration
	q := u.Query()
	for k, vs := range v {
		q[k] = vs
	}
	if ar.state != "" {
		q.Set("state", ar.state)
	}
	q.Set("iss", s.c.Issuer)
	u.RawQuery = q.Encode()
	http.Redirect(w, r, u.String(), http.StatusSeeOther)
}
