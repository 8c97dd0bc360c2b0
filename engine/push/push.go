// Package push carries a local hub's capabilities to a hosted hub (J5):
// the sources, policy rules, profiles, skills and connections' metadata
// that engine/stack exports (its files, the same format a stack
// repository holds: secret names, never values), plus, only when the
// person sends them one by one, the values of the connections' secrets.
//
// The hosted side (Handler) answers a bundle with a plan (what would be
// added, changed or removed) and its hash; applying needs that hash and is
// refused when the hosted state moved since. GET /api/status is the hosted
// hub's sources, their tools and health, pending calls and recent runs.
// The tenant is the bearer token's (go-sdk auth.TokenInfo.UserID), which
// must carry the scope "hub": a tenant only ever sees and changes its own
// hub.
package push

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/scrub"
	"github.com/capabilities-sh/capabilities/engine/secret"
	"github.com/capabilities-sh/capabilities/engine/stack"
)

// Paths the Handler serves.
const (
	PathPlan   = "/api/push/plan"
	PathApply  = "/api/push/apply"
	PathStatus = "/api/status"
)

// Scope is the OAuth scope the person's API needs.
const Scope = "hub"

// Channel marks the rules a push sets on the hosted hub.
const Channel = "push"

// KindSecret is a plan's change of a connection's secret (its name, never
// its value).
const KindSecret = "secret"

// Bundle is what a push sends: the stack's files (engine/stack's Render
// of the local hub: sources/<ns>.json, policy.json, profiles/, skills/)
// and the secrets the person chose to send.
type Bundle struct {
	Files   map[string][]byte `json:"files"`
	Secrets []Secret          `json:"secrets,omitempty"`
}

// Secret is one connection's credential: which connection, the name it is
// known by (stack.SecretName), and, only when sent, its value.
type Secret struct {
	Namespace  string `json:"namespace"`
	Connection string `json:"connection"`
	Name       string `json:"name"`
	Value      string `json:"value,omitempty"`
}

// Key names the secret's connection: "github/work".
func (s Secret) Key() string { return s.Namespace + "/" + s.Connection }

// String is the secret as a person reads it: its name and connection,
// never its value.
func (s Secret) String() string { return s.Name + " (" + s.Key() + ")" }

// Left is something of the local hub a push leaves out, and why.
type Left struct {
	Key    string `json:"key"`
	Reason string `json:"reason"`
}

// Hostable says why a source cannot run on a hosted hub ("" when it can):
// a hosted hub runs remote sources only.
func Hostable(s stack.Source) string {
	switch s.Kind {
	case model.KindStdio:
		return "it runs a local command (stdio); a hosted hub runs remote sources only (streamable HTTP MCP servers and OpenAPI documents)"
	case model.KindOpenAPI:
		u, err := url.Parse(s.Document)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return "its OpenAPI document " + s.Document + " is a file on this machine; a hosted hub reads documents from an http(s) URL only"
		}
	}
	return ""
}

// Export is the local hub's state as a bundle (no secret values), with
// what it leaves out: sources a hosted hub cannot run (Hostable), and the
// rules and profiles that name them. A file that would hold one of the
// hub's secret values (in any encoding) is an error naming it; nothing is
// sent then.
func Export(ctx context.Context, h *hub.Hub) (*Bundle, []Left, error) {
	st, err := stack.FromHub(ctx, h)
	if err != nil {
		return nil, nil, fmt.Errorf("exporting the hub: %w", err)
	}
	var left []Left
	gone := map[string]bool{}
	for _, ns := range sortedKeys(st.Sources) {
		if why := Hostable(st.Sources[ns].Source); why != "" {
			left = append(left, Left{Key: "source " + ns, Reason: why})
			gone[ns] = true
			delete(st.Sources, ns)
		}
	}
	for _, k := range sortedKeys(st.Rules) {
		r := st.Rules[k]
		ns, _, _ := strings.Cut(r.Target, ".")
		if gone[ns] {
			left = append(left, Left{Key: "rule " + k, Reason: "its source " + ns + " stays on this machine"})
			delete(st.Rules, k)
		}
	}
	for _, n := range sortedKeys(st.Profiles) {
		p := st.Profiles[n]
		for _, t := range append(slices.Clone(p.Namespaces), p.Tools...) {
			ns, _, _ := strings.Cut(t, ".")
			if gone[ns] {
				left = append(left, Left{Key: "profile " + n, Reason: "it names " + ns + ", which stays on this machine"})
				delete(st.Profiles, n)
				break
			}
		}
	}
	files, err := st.Render()
	if err != nil {
		return nil, nil, fmt.Errorf("exporting the hub: %w", err)
	}
	values, err := stack.Secrets(ctx, h)
	if err != nil {
		return nil, nil, err
	}
	if err := checkLeaks(files, values); err != nil {
		return nil, nil, err
	}
	return &Bundle{Files: files}, left, nil
}

// LeakError is a push refused because a file would carry a secret value.
type LeakError struct {
	Path  string
	Whose string
}

func (e *LeakError) Error() string {
	return fmt.Sprintf("refusing to push: %s would carry %s (in some encoding); nothing was sent. Keep credentials out of a source's URL and headers: store them with `capabilities hub auth`", e.Path, e.Whose)
}

func checkLeaks(files map[string][]byte, secrets map[string]string) error {
	values := sortedKeys(secrets)
	sc := scrub.New(values...)
	for _, p := range sortedKeys(files) {
		data := files[p]
		if w := sc.Which(string(data)); len(w) > 0 {
			return &LeakError{Path: p, Whose: secrets[w[0]]}
		}
		for _, v := range values {
			if v != "" && bytes.Contains(data, []byte(v)) {
				return &LeakError{Path: p, Whose: secrets[v]}
			}
		}
	}
	return nil
}

// Secrets are the secrets the bundle's connections need, with their
// values read from the local hub's secret store: what `hub push --secrets`
// offers to send, one consent each. A connection made by signing in
// (OAuth) is not among them (the hosted hub signs in on its own).
func Secrets(ctx context.Context, h *hub.Hub, b *Bundle) ([]Secret, error) {
	st, err := stack.Read(mapFS(b.Files))
	if err != nil {
		return nil, fmt.Errorf("reading the bundle: %w", err)
	}
	var out []Secret
	for _, ns := range sortedKeys(st.Sources) {
		conns, err := h.Connections(ctx, ns)
		if err != nil {
			return nil, fmt.Errorf("reading the connections of %s: %w", ns, err)
		}
		refs := map[string]string{}
		for _, c := range conns.Items {
			refs[c.Name] = c.SecretRef
		}
		for _, c := range st.Sources[ns].Connections {
			if c.Secret == "" || refs[c.Name] == "" {
				continue
			}
			v, err := h.Secrets().Get(secret.Quiet(ctx), refs[c.Name])
			if errors.Is(err, secret.ErrNotFound) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("reading the secret %s of %s/%s: %w", c.Secret, ns, c.Name, err)
			}
			out = append(out, Secret{Namespace: ns, Connection: c.Name, Name: c.Secret, Value: v})
		}
	}
	return out, nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
