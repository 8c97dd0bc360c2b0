package authserver

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// Consent renders the page where the signed-in person allows or denies a
// client. The page must POST the Prompt's Fields (hidden) to Action, with
// a field "decision" set to "allow" or "deny".
type Consent interface {
	Render(w http.ResponseWriter, r *http.Request, p Prompt)
}

// Prompt is what a consent page shows and posts back.
type Prompt struct {
	Tenant string
	// Person names the signed-in person (Config.Display), "" if unknown.
	Person      string
	ClientID    string
	ClientName  string
	RedirectURI string
	Resource    string
	Scope       string
	// Allows says in plain words what each scope asked for allows, in the
	// order of Scope.
	Allows []string
	Action string
	Fields map[string]string
}

// The hosted hub's scopes: ScopeMCP is the MCP endpoint (the three tools),
// ScopeHub the person's own API (changing the hub's configuration,
// deciding pending calls).
const (
	ScopeMCP = "mcp"
	ScopeHub = "hub"
)

// DefaultScopeText is what the consent page says of the hosted hub's
// scopes.
var DefaultScopeText = map[string]string{
	ScopeMCP: "use your hub's tools through search, describe and execute (calls that change things still ask you before they run)",
	ScopeHub: "manage your hub: change its configuration (sources, policies, profiles, skills, connections and secrets pushed to it) and see and decide its pending calls, approving or denying them as you",
}

func (s *Server) grantScope(req string) (string, error) {
	want := strings.Fields(req)
	if len(want) == 0 {
		if s.c.DefaultScopes != nil {
			return strings.Join(s.c.DefaultScopes, " "), nil
		}
		return strings.Join(s.c.Scopes, " "), nil
	}
	for _, w := range want {
		if !slices.Contains(s.c.Scopes, w) {
			return "", oauthErr{"invalid_scope", fmt.Sprintf("scope %q is not offered (%s)", w, strings.Join(s.c.Scopes, " "))}
		}
	}
	return strings.Join(want, " "), nil
}

func (s *Server) csrf(tenant string, fields map[string]string) string {
	m := hmac.New(sha256.New, s.c.CSRFKey)
	m.Write([]byte("consent\x00" + tenant))
	for _, k := range append(consentFields, "expires") {
		m.Write([]byte("\x00" + k + "=" + fields[k]))
	}
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func consentCSP(redirectOrigin string) string {
	fa := "'self'"
	if redirectOrigin != "" {
		fa += " " + redirectOrigin
	}
	return "default-src 'none'; style-src 'unsafe-inline'; form-action " + fa + "; frame-ancestors 'none'"
}

func originOf(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

// ---- built-in consent page ----

type builtinConsent struct{}

var consentPage = template.Must(template.New("consent").Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>Allow {{.ClientName}}?</title>
<style>body{font:16px system-ui,sans-serif;max-width:36em;margin:3em auto;padding:0 1em}code{word-break:break-all}button{font-size:1em;margin-right:1em}</style></head>
<body><h1>Allow <em>{{if .ClientName}}{{.ClientName}}{{else}}an unnamed client{{end}}</em> to use your hub?</h1>
<p>Signed in as <strong>{{if .Person}}{{.Person}}{{else}}{{.Tenant}}{{end}}</strong>.</p>
<p>The client <code>{{.ClientID}}</code> will receive access to <code>{{.Resource}}</code>{{if .Scope}} (scope <code>{{.Scope}}</code>){{end}},
and is sent back to <code>{{.RedirectURI}}</code>.</p>
{{if .Allows}}<p>It will be able to:</p>
<ul>{{range .Allows}}<li>{{.}}</li>{{end}}</ul>
{{else}}<p>Calls that change things still ask you before they run.</p>
{{end}}
<form method="post" action="{{.Action}}">
{{range $k, $v := .Fields}}<input type="hidden" name="{{$k}}" value="{{$v}}">
{{end}}<button type="submit" name="decision" value="allow" id="allow">Allow</button>
<button type="submit" name="decision" value="deny" id="deny">Deny</button>
</form></body></html>
`))

func (builtinConsent) Render(w http.ResponseWriter, _ *http.Request, p Prompt) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := consentPage.Execute(w, p); err != nil {
		slog.Error("rendering consent page", "err", err)
	}
}
