package hub

import (
	"context"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/oauth"
	"github.com/capabilities-sh/capabilities/engine/policy"
	"github.com/capabilities-sh/capabilities/engine/secret"
	"github.com/capabilities-sh/capabilities/engine/source"
	"github.com/capabilities-sh/capabilities/store"
)

// CredentialHeader says how a header written in plain text becomes a
// source's credential: "Authorization: Bearer <token>" is the token, sent
// that way by default (header ""); another header is sent as it is (header
// name). An Authorization header of another scheme (Basic…) cannot be one:
// the hub sends a credential in Authorization as Bearer.
func CredentialHeader(name, value string) (header, secret string, ok bool) {
	value = strings.TrimSpace(value)
	if !strings.EqualFold(name, "Authorization") {
		return name, value, true
	}
	const bearer = "bearer "
	if len(value) > len(bearer) && strings.EqualFold(value[:len(bearer)], bearer) {
		return "", strings.TrimSpace(value[len(bearer):]), true
	}
	return "", "", false
}

// AddRequest names a new source: a URL or a command.
type AddRequest struct {
	URL string
	// Document is an OpenAPI 3.0/3.1 or Swagger 2.0 document (a URL or a
	// file): the source's tools are its operations, called at Server, else
	// the document's first server.
	Document  string
	Server    string
	Headers   map[string]string // sent with every request to an HTTP source; no credential
	Command   []string
	Env       map[string]string
	Cwd       string
	Namespace string // optional; proposed from the server's name when empty
	// SecretEnv / SecretHeader say where the source's credential goes.
	SecretEnv    string
	SecretHeader string
	// Secret, when set, is used to reach the server while proposing (a
	// server that needs a credential to start or to list its tools). It is
	// never stored in the proposal; the caller stores it with Auth.
	Secret string
	// CallTimeout bounds each call to the source's tools (0: the hub's
	// default, source.Options.CallTimeout).
	CallTimeout time.Duration
}

// Proposal is what adding a source would store, for a person to review.
type Proposal struct {
	Source   model.Source
	Manifest model.Manifest
	// Notes say what of an OpenAPI document the hub left out or could not
	// read (an operation with a multipart body, one with no 2xx answer).
	Notes []string
	// SignIn: the server wants an OAuth sign-in before it lists its tools
	// (it answered 401 with a Bearer challenge); the proposal has none yet.
	SignIn bool
}

// Counts tallies the proposal's tools by effect.
func (p *Proposal) Counts() (read, write, destructive int) {
	return countEffects(p.Manifest.Tools)
}

func countEffects(tools []model.Tool) (read, write, destructive int) {
	for i := range tools {
		switch tools[i].Effect() {
		case model.EffectRead:
			read++
		case model.EffectWrite:
			write++
		default:
			destructive++
		}
	}
	return
}

// Propose connects to the new source, lists its tools and proposes a
// namespace. It stores nothing.
func (h *Hub) Propose(ctx context.Context, req AddRequest) (*Proposal, error) {
	src := model.Source{Env: req.Env, Cwd: req.Cwd, SecretEnv: req.SecretEnv, SecretHeader: req.SecretHeader}
	if req.CallTimeout < 0 || (req.CallTimeout > 0 && req.CallTimeout < time.Millisecond) {
		return nil, fmt.Errorf("adding a source: a call timeout of %v is too short; give at least 1ms, e.g. 90s", req.CallTimeout)
	}
	src.CallTimeoutMs = req.CallTimeout.Milliseconds()
	if req.SecretEnv != "" {
		if err := validEnvName(req.SecretEnv); err != nil {
			return nil, fmt.Errorf("adding a source: %w", err)
		}
	}
	if req.SecretHeader != "" {
		if err := validHeaderName(req.SecretHeader); err != nil {
			return nil, fmt.Errorf("adding a source: %w", err)
		}
	}
	if req.Document != "" {
		return h.proposeOpenAPI(ctx, req, src)
	}
	switch {
	case req.URL != "" && len(req.Command) > 0:
		return nil, fmt.Errorf("adding a source: give a URL or a command, not both")
	case req.URL != "":
		u, err := url.Parse(req.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("adding a source: %q is not an http(s) URL; for a local server write `capabilities hub add -- <command> [args…]`", req.URL)
		}
		src.Kind, src.URL = model.KindHTTP, u.String()
		for k, v := range req.Headers {
			if err := validHeaderName(k); err != nil {
				return nil, fmt.Errorf("adding a source: %w", err)
			}
			if strings.EqualFold(k, "Authorization") || (req.SecretHeader != "" && strings.EqualFold(k, req.SecretHeader)) {
				return nil, fmt.Errorf("adding a source: header %s carries the credential: store it with `capabilities hub auth` (or --auth), not as a plain header", k)
			}
			if strings.ContainsAny(v, "\r\n") {
				return nil, fmt.Errorf("adding a source: the value of header %s holds a line break", k)
			}
		}
		if len(req.Headers) > 0 {
			src.Headers = maps.Clone(req.Headers)
		}
	case len(req.Command) > 0:
		if h.opts.Source.RemoteOnly {
			return nil, fmt.Errorf("adding a source: %w", source.ErrStdioRefused)
		}
		if len(req.Headers) > 0 {
			return nil, fmt.Errorf("adding a source: headers are for a remote (http) server; a local one takes --env")
		}
		src.Kind, src.Command, src.Args = model.KindStdio, req.Command[0], req.Command[1:]
		if src.Cwd != "" {
			abs, err := filepath.Abs(src.Cwd)
			if err != nil {
				return nil, fmt.Errorf("adding a source: %w", err)
			}
			src.Cwd = abs
		}
	default:
		return nil, fmt.Errorf("adding a source: give a URL or a command")
	}
	if req.Namespace != "" {
		if err := model.NewNamespace(req.Namespace); err != nil {
			return nil, fmt.Errorf("adding a source: %w", err)
		}
		if _, err := h.Source(ctx, req.Namespace); err == nil {
			return nil, fmt.Errorf("adding a source: namespace %q is already used; pick another with --namespace or remove it with `capabilities hub remove %s`", req.Namespace, req.Namespace)
		}
	}
	if req.Namespace == "" {
		if ns, err := h.sameServer(ctx, &src); err != nil {
			return nil, fmt.Errorf("adding a source: %w", err)
		} else if ns != "" {
			return nil, &AlreadyAddedError{Namespace: ns, Kind: src.Kind}
		}
	}
	if h.isOwnToken(req.Secret) {
		// An agent's HTTP entry for this hub, imported, would make the
		// hub its own upstream: each execute would run inside another.
		return nil, fmt.Errorf("adding a source: %s is this hub (its credential is the hub's own token, from hub/http-token), not an MCP server to add: agents reach the hub directly (`capabilities hub connect`)", src.URL)
	}
	// Connect with no namespace yet (the real one may come from the
	// server's name): errors name the source by what was typed.
	var cred *source.Credential
	if req.Secret != "" {
		if src.Kind == model.KindStdio && src.SecretEnv == "" {
			return nil, fmt.Errorf("adding a source: say which environment variable the server reads the credential from, with --secret-env VAR")
		}
		cred = &source.Credential{Connection: DefaultConnection, Value: req.Secret}
		h.remember("", req.Secret)
	}
	s, err := source.ConnectWith(ctx, src, cred, h.sourceOptions())
	if err != nil && src.Kind == model.KindHTTP && cred == nil {
		if p := h.proposeSignIn(ctx, req, src); p != nil {
			return p, nil
		}
	}
	if err != nil {
		return nil, h.scrubErr(fmt.Errorf("adding a source: %w", err), ErrUpstreamUnavailable)
	}
	defer s.Close()
	m, err := s.ListTools(ctx)
	if err != nil {
		return nil, fmt.Errorf("adding a source: %w", err)
	}
	ns := req.Namespace
	if ns == "" {
		if ns, err = h.proposeNamespace(ctx, m.ServerName, &src); err != nil {
			return nil, fmt.Errorf("adding a source: %w", err)
		}
	}
	src.Namespace = ns
	src.AddedAt = time.Now().UTC().Truncate(time.Second)
	m.Namespace = ns
	m.Tools = readdress(ns, m.Tools)
	return &Proposal{Source: src, Manifest: *m}, nil
}

// isOwnToken reports whether cred (a credential for a source: a token,
// or "Bearer <token>") is this hub's own bearer token, which `serve --http`
// keeps in the store directory's http-token with the file store, and in
// the database with a database store (sharedTokenStore).
func (h *Hub) isOwnToken(cred string) bool {
	if cred == "" {
		return false
	}
	var tok string
	switch st := h.store.(type) {
	case sharedTokenStore:
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var keys sharedTokenStore = st
		if s, ok := h.Secrets().(*secret.Sealed); ok {
			if p, ok := st.(secret.PlainKeys); ok { // sealed among the secrets (secret.HubKeys)
				keys = secret.NewHubKeys(s, p)
			}
		}
		key, err := keys.LookupKey(ctx, "http-token")
		if err != nil {
			return false // none made yet (or unreadable): nothing to match
		}
		tok = hex.EncodeToString(key)
	case *store.File:
		b, err := os.ReadFile(filepath.Join(st.Dir(), "http-token"))
		if err != nil {
			return false
		}
		tok = strings.TrimSpace(string(b))
	default:
		return false
	}
	if tok == "" {
		return false
	}
	cred = strings.TrimSpace(cred)
	if len(cred) > 7 && strings.EqualFold(cred[:7], "bearer ") {
		cred = strings.TrimSpace(cred[7:])
	}
	return subtle.ConstantTimeCompare([]byte(cred), []byte(tok)) == 1
}

// sharedTokenStore is a store that keeps the hub's keys for every process
// (store/postgres.Store): the bearer token is the hex of its "http-token".
type sharedTokenStore interface {
	LookupKey(ctx context.Context, name string) ([]byte, error)
}

// AlreadyAddedError is Propose's answer for a server the hub already has
// as a source, when no namespace was asked for: adding it again would make
// a second copy (everything2) of the same tools.
type AlreadyAddedError struct {
	Namespace string
	Kind      string // model.KindStdio or model.KindHTTP
}

func (e *AlreadyAddedError) Error() string {
	same := "command, arguments, working directory and environment"
	if e.Kind == model.KindHTTP {
		same = "URL and headers"
	}
	return fmt.Sprintf("the hub already has this server as %s (the same %s); to add a second copy, name it with --namespace", e.Namespace, same)
}

// sameServer returns the namespace of a source that runs the server src
// describes: the same command, arguments, working directory, environment
// and credential variable, or the same URL and headers; "" when none.
func (h *Hub) sameServer(ctx context.Context, src *model.Source) (string, error) {
	recs, err := h.Sources(ctx)
	if err != nil {
		return "", err
	}
	for _, r := range recs {
		o := &r.Source
		if o.Kind != src.Kind || o.SecretEnv != src.SecretEnv || o.SecretHeader != src.SecretHeader {
			continue
		}
		switch src.Kind {
		case model.KindStdio:
			if o.Command == src.Command && slices.Equal(o.Args, src.Args) && filepath.Clean(o.Cwd) == filepath.Clean(src.Cwd) && maps.Equal(o.Env, src.Env) {
				return o.Namespace, nil
			}
		case model.KindHTTP:
			if strings.TrimRight(o.URL, "/") == strings.TrimRight(src.URL, "/") && maps.Equal(o.Headers, src.Headers) {
				return o.Namespace, nil
			}
		}
	}
	return "", nil
}

// proposeSignIn proposes an HTTP source that refused the hub with a 401
// and a Bearer challenge, and whose OAuth metadata can be found (an
// OAuth-protected MCP server, not one that wants a static token): added with no
// tools yet and marked Auth "oauth", for `hub auth` to sign in to and list
// its tools. nil when the server did not ask for OAuth.
func (h *Hub) proposeSignIn(ctx context.Context, req AddRequest, src model.Source) *Proposal {
	so := h.sourceOptions() // its Egress checks a hosted hub's probes too
	hc, err := so.ProbeClient(&src)
	if err != nil {
		return nil
	}
	ch, status, err := oauth.Probe(ctx, hc, src.URL)
	if err != nil || status != http.StatusUnauthorized || !oauth.Protected(ctx, so.Client(src.URL), src.URL, ch) {
		return nil
	}
	ns := req.Namespace
	if ns == "" {
		if ns, err = h.proposeNamespace(ctx, "", &src); err != nil {
			return nil
		}
	}
	src.Namespace, src.Auth = ns, model.AuthOAuth
	src.AddedAt = time.Now().UTC().Truncate(time.Second)
	return &Proposal{
		Source:   src,
		Manifest: model.Manifest{Namespace: ns, Tools: []model.Tool{}, FetchedAt: src.AddedAt},
		SignIn:   true,
	}
}

// proposeOpenAPI reads an OpenAPI document and proposes its operations as
// tools, called at the server the person reviews (src.URL).
func (h *Hub) proposeOpenAPI(ctx context.Context, req AddRequest, src model.Source) (*Proposal, error) {
	if req.URL != "" || len(req.Command) > 0 || len(req.Headers) > 0 || req.SecretEnv != "" || req.SecretHeader != "" {
		return nil, fmt.Errorf("adding a source: an OpenAPI document takes no URL, command, headers or secret variable; its security scheme says where the credential goes")
	}
	src.Kind, src.Document = model.KindOpenAPI, req.Document
	if !strings.Contains(req.Document, "://") {
		abs, err := filepath.Abs(req.Document)
		if err != nil {
			return nil, fmt.Errorf("adding a source: %w", err)
		}
		src.Document = abs
	} else if u, err := url.Parse(req.Document); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("adding a source: %q is not an http(s) URL or a file", req.Document)
	}
	if req.Server != "" {
		u, err := url.Parse(req.Server)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("adding a source: the server %q is not an http(s) URL", req.Server)
		}
		src.URL = req.Server
	}
	if req.Namespace != "" {
		if err := model.NewNamespace(req.Namespace); err != nil {
			return nil, fmt.Errorf("adding a source: %w", err)
		}
		if _, err := h.Source(ctx, req.Namespace); err == nil {
			return nil, fmt.Errorf("adding a source: namespace %q is already used; pick another with --namespace or remove it with `capabilities hub remove %s`", req.Namespace, req.Namespace)
		}
	}
	s, err := source.ConnectWith(ctx, src, nil, h.sourceOptions()) // no namespace yet, as in Propose
	if err != nil {
		return nil, fmt.Errorf("adding a source: %w", err)
	}
	defer s.Close()
	api := s.OpenAPI()
	src.URL, src.DocumentServer = api.Base.String(), api.Named
	switch a := api.Auth; {
	case a == nil:
	case a.Scheme == "oauth2":
		// Signed in to, not pasted: `hub auth` runs the document's flow,
		// and a call before that waits for the connection.
		src.Auth = model.AuthOAuth
	default:
		src.AuthScheme = a.Scheme
		if a.Scheme == "apiKey" {
			src.AuthScheme += " " + a.In + " " + a.Name
		}
	}
	m, err := s.ListTools(ctx)
	if err != nil {
		return nil, fmt.Errorf("adding a source: %w", err)
	}
	ns := req.Namespace
	if ns == "" {
		probe := src
		probe.Kind, probe.URL = model.KindHTTP, src.URL
		if ns, err = h.proposeNamespace(ctx, m.ServerName, &probe); err != nil {
			return nil, fmt.Errorf("adding a source: %w", err)
		}
	}
	src.Namespace = ns
	src.AddedAt = time.Now().UTC().Truncate(time.Second)
	m.Namespace = ns
	m.Tools = readdress(ns, m.Tools)
	notes := append(slices.Clone(api.Skipped), api.Warnings...)
	return &Proposal{Source: src, Manifest: *m, Notes: notes}, nil
}

// readdress puts tools listed with no namespace (".tool") under ns.
func readdress(ns string, tools []model.Tool) []model.Tool {
	out := make([]model.Tool, len(tools))
	for i, t := range tools {
		_, tool, _ := strings.Cut(t.Address, ".")
		t.Address = ns + "." + tool
		out[i] = t
	}
	return out
}

// proposeNamespace derives a free namespace from the server's name, or from
// the command or host when the name gives nothing.
func (h *Hub) proposeNamespace(ctx context.Context, serverName string, src *model.Source) (string, error) {
	cands := []string{model.SanitizeNamespace(serverName)}
	if src.Kind == model.KindHTTP {
		if u, err := url.Parse(src.URL); err == nil {
			cands = append(cands, model.SanitizeNamespace(strings.Split(u.Hostname(), ".")[0]))
		}
	} else {
		for i := len(src.Args) - 1; i >= 0; i-- {
			if !strings.HasPrefix(src.Args[i], "-") {
				cands = append(cands, model.SanitizeNamespace(strings.TrimSuffix(filepath.Base(src.Args[i]), filepath.Ext(src.Args[i]))))
			}
		}
		cands = append(cands, model.SanitizeNamespace(filepath.Base(src.Command)))
	}
	base := ""
	for _, c := range cands {
		if c != "" && model.NewNamespace(c) == nil {
			base = c
			break
		}
	}
	if base == "" {
		base = "source"
	}
	for i := 1; i < 1000; i++ {
		ns := base
		if i > 1 {
			suffix := strconv.Itoa(i)
			ns = base[:min(len(base), model.MaxNamespaceLen-len(suffix))] + suffix
		}
		var probe model.Source
		err := h.store.Get(ctx, store.Sources, ns, &probe)
		if errors.Is(err, store.ErrNotFound) {
			return ns, nil
		}
	}
	return "", fmt.Errorf("no free namespace near %q; pass --namespace", base)
}

// Accept stores a proposal: the source and its manifest. It fails if the
// namespace was taken meanwhile.
func (h *Hub) Accept(ctx context.Context, p *Proposal) error {
	if h.opts.Source.RemoteOnly && p.Source.Kind == model.KindStdio {
		return fmt.Errorf("adding %s: %w", p.Source.Namespace, source.ErrStdioRefused)
	}
	err := store.UpdateJSON(ctx, h.store, store.Sources, p.Source.Namespace, func(old *model.Source) (*model.Source, error) {
		if old != nil {
			return nil, fmt.Errorf("adding %s: the namespace was taken meanwhile; pick another with --namespace", p.Source.Namespace)
		}
		return &p.Source, nil
	})
	if err != nil {
		return err
	}
	m := Manifest{Manifest: p.Manifest, Health: "ok", CheckedAt: p.Manifest.FetchedAt}
	if err := h.store.Put(ctx, store.Manifests, p.Source.Namespace, m); err != nil {
		return fmt.Errorf("adding %s: %w", p.Source.Namespace, err)
	}
	h.Invalidate()
	return nil
}

// Remove deletes a source with everything that was about it: its manifest,
// its connections and their credentials, and the policy's rules, reviews
// and command consent for it (a source added later under the same
// namespace starts unreviewed, with no rule of the old one), and stops its
// upstream. The source record goes last, so a failure leaves it to remove
// again.
func (h *Hub) Remove(ctx context.Context, ns string) error {
	var corrupt *store.CorruptError
	if _, err := h.Source(ctx, ns); err != nil && !errors.As(err, &corrupt) { // a corrupt record can go
		return fmt.Errorf("removing: %w", err)
	}
	h.pool.Drop(ns)
	p, err := h.Policy(ctx)
	if err != nil {
		return fmt.Errorf("removing %s: %w", ns, err)
	}
	if mentions(p, ns) {
		if err := h.updatePolicy(ctx, func(p *policy.Policy) error {
			forget(p, ns)
			return nil
		}); err != nil {
			return fmt.Errorf("removing %s: %w", ns, err)
		}
	}
	conns, err := store.Get[model.Connections](ctx, h.store, store.Connections, ns)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("removing %s: %w", ns, err)
	}
	if conns != nil {
		for _, c := range conns.Items {
			if err := h.Secrets().Delete(ctx, c.SecretRef); err != nil && !errors.Is(err, secret.ErrNotFound) {
				return fmt.Errorf("removing %s: deleting the credential of %s/%s: %w", ns, ns, c.Name, err)
			}
		}
	}
	for _, k := range []store.Kind{store.Connections, store.Manifests, store.Sources} {
		if err := h.store.Delete(ctx, k, ns); err != nil {
			return fmt.Errorf("removing %s: %w", ns, err)
		}
	}
	h.Invalidate()
	return nil
}

// forget drops the policy's rules, reviews and consent for a namespace.
func forget(p *policy.Policy, ns string) {
	p.Rules = slices.DeleteFunc(p.Rules, func(r policy.Rule) bool { return ofNamespace(r.Target, ns) })
	for addr := range p.Reviewed {
		if ofNamespace(addr, ns) {
			delete(p.Reviewed, addr)
		}
	}
	delete(p.Consented, ns)
}

// mentions reports whether the policy has a rule, review or consent for a
// namespace.
func mentions(p *policy.Policy, ns string) bool {
	if _, ok := p.Consented[ns]; ok {
		return true
	}
	for addr := range p.Reviewed {
		if ofNamespace(addr, ns) {
			return true
		}
	}
	return slices.ContainsFunc(p.Rules, func(r policy.Rule) bool { return ofNamespace(r.Target, ns) })
}

// ofNamespace reports whether a rule target or tool address is ns or one of
// its tools.
func ofNamespace(target, ns string) bool {
	return target == ns || strings.HasPrefix(target, ns+".")
}

// Change is what a refresh found for one namespace.
type Change struct {
	Namespace string   `json:"namespace"`
	Added     []string `json:"added"`
	Removed   []string `json:"removed"`
	Changed   []string `json:"changed"`
	Tools     int      `json:"tools"`
	Error     string   `json:"error,omitempty"`
}

// Refresh re-reads the tool lists of one namespace, or of all when ns is
// empty, stores them and reports what was added, removed and changed. A
// source that cannot be reached keeps its cached manifest and is marked
// unhealthy; its error is in the Change.
func (h *Hub) Refresh(ctx context.Context, ns string) ([]Change, error) {
	var nss []string
	if ns != "" {
		if _, err := h.Source(ctx, ns); err != nil {
			return nil, fmt.Errorf("refreshing: %w", err)
		}
		nss = []string{ns}
	} else {
		ids, err := h.store.List(ctx, store.Sources)
		if err != nil {
			return nil, fmt.Errorf("refreshing: %w", err)
		}
		nss = ids
	}
	changes := make([]Change, len(nss))
	for i, ns := range nss {
		changes[i] = h.refreshOne(ctx, ns)
	}
	return changes, nil
}

func (h *Hub) refreshOne(ctx context.Context, ns string) Change {
	c := Change{Namespace: ns, Added: []string{}, Removed: []string{}, Changed: []string{}}
	src, err := h.Source(ctx, ns)
	if err != nil {
		c.Error = err.Error()
		return c
	}
	old, err := h.Manifest(ctx, ns)
	var corrupt *store.CorruptError
	if errors.As(err, &corrupt) {
		old, err = nil, nil // only a cache: listing the tools again writes it anew
	}
	if err != nil {
		c.Error = err.Error()
		return c
	}
	protocol := ""
	if old != nil {
		protocol = old.Protocol
	}
	m, err := h.fetch(ctx, src, protocol)
	if err != nil {
		c.Error = err.Error()
		if h.upstreamsPerProcess() {
			// What failed here may run on the other processes (a stdio
			// command this machine lacks): the shared manifest keeps what
			// the last listing that worked found.
			h.log.Warn("refreshing a source failed on this process; its shared health is left as it was", "namespace", ns, "err", h.Scrub(err.Error()))
			return c
		}
		_ = store.UpdateJSON(ctx, h.store, store.Manifests, ns, func(cur *Manifest) (*Manifest, error) {
			if cur == nil {
				cur = &Manifest{Manifest: model.Manifest{Namespace: ns, Tools: []model.Tool{}}}
			}
			cur.Health, cur.LastError, cur.CheckedAt = "error", err.Error(), time.Now().UTC()
			return cur, nil
		})
		return c
	}
	c.Added, c.Removed, c.Changed = diff(old, m)
	c.Tools = len(m.Tools)
	rec := Manifest{Manifest: *m, Health: "ok", CheckedAt: m.FetchedAt}
	if err := h.store.Put(ctx, store.Manifests, ns, rec); err != nil {
		c.Error = err.Error()
	}
	h.Invalidate()
	return c
}

// noteHealth records in a source's manifest how its last start went, when
// that differs from what the manifest says: hub list shows a server that
// failed to start for a call as such, and as ok again once one starts.
func (h *Hub) noteHealth(ns string, err error) {
	ctx := context.Background()
	m, merr := h.Manifest(ctx, ns)
	if merr != nil || m == nil {
		return // not added yet (Propose), or unreadable: nothing to note in
	}
	msg := ""
	if err != nil {
		msg = h.Scrub(err.Error())
	}
	if h.upstreamsPerProcess() {
		// Each process starts its own upstreams: a start that failed here
		// says nothing of the others, so it is not written to the manifest
		// every process reads. The call that needed it says why.
		if err != nil {
			h.log.Warn("a source did not start on this process", "namespace", ns, "err", msg)
		}
		return
	}
	if (err == nil && m.Health != "error") || (err != nil && m.Health == "error" && m.LastError == msg) {
		return
	}
	uerr := store.UpdateJSON(ctx, h.store, store.Manifests, ns, func(cur *Manifest) (*Manifest, error) {
		if cur == nil {
			return nil, errNoChange
		}
		cur.CheckedAt = time.Now().UTC()
		if err != nil {
			cur.Health, cur.LastError = "error", msg
		} else {
			cur.Health, cur.LastError = "ok", ""
		}
		return cur, nil
	})
	if uerr != nil && !errors.Is(uerr, errNoChange) {
		h.log.Warn("noting a source's health", "namespace", ns, "err", uerr)
	}
}

// upstreamsPerProcess reports whether the hub's store is shared by hub
// processes that may run on other machines (a database store): each runs
// its own upstream clients, so the health of an upstream's start or
// listing on one process is not recorded for all. The file store's
// processes share one machine, and its health.
func (h *Hub) upstreamsPerProcess() bool {
	_, ok := h.store.(sharedTokenStore)
	return ok
}

// UpstreamsPerProcess is upstreamsPerProcess, for hub list.
func (h *Hub) UpstreamsPerProcess() bool { return h.upstreamsPerProcess() }

// errNoChange leaves a record as it is (UpdateJSON writes nothing).
var errNoChange = errors.New("no change")

// fetch lists a source's tools through the pool's session, starting it if
// needed.
func (h *Hub) fetch(ctx context.Context, src *model.Source, protocol string) (*model.Manifest, error) {
	cred, err := h.credential(ctx, src, "")
	var ce *ConnectionError
	if errors.As(err, &ce) {
		cred, err = nil, nil // list tools without a credential
	}
	if err != nil {
		return nil, err
	}
	s, err := h.pool.Session(ctx, *src, protocol, cred)
	if err != nil {
		return nil, errors.New(h.Scrub(err.Error()))
	}
	m, err := s.ListTools(ctx)
	if err != nil {
		return nil, errors.New(h.Scrub(err.Error()))
	}
	return m, nil
}

// diff compares two manifests by upstream name: a renamed tool is a new one.
func diff(old *Manifest, cur *model.Manifest) (added, removed, changed []string) {
	added, removed, changed = []string{}, []string{}, []string{} // [] in JSON, not null
	before := map[string]*model.Tool{}
	if old != nil {
		for i := range old.Tools {
			before[old.Tools[i].Name] = &old.Tools[i]
		}
	}
	for i := range cur.Tools {
		t := &cur.Tools[i]
		switch b := before[t.Name]; {
		case b == nil:
			added = append(added, t.Address)
		case b.Contract != t.Contract:
			changed = append(changed, t.Address)
		}
		delete(before, t.Name)
	}
	for _, t := range before {
		removed = append(removed, t.Address)
	}
	slices.Sort(added)
	slices.Sort(removed)
	slices.Sort(changed)
	return
}

// sourceOptions are the options for a one-off connection (a probe): no
// reaction to list changes of a source not yet stored.
func (h *Hub) sourceOptions() source.Options {
	o := h.pool.Options()
	o.OnToolsChanged = nil
	return o
}
