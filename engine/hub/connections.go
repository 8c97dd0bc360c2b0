package hub

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/oauth"
	"github.com/capabilities-sh/capabilities/engine/scrub"
	"github.com/capabilities-sh/capabilities/engine/secret"
	"github.com/capabilities-sh/capabilities/engine/source"
	"github.com/capabilities-sh/capabilities/store"
)

// DefaultConnection is the name of a source's first connection.
const DefaultConnection = "default"

// secrets is the secret store, opened on first use; and every secret value
// this process resolved, to scrub from what it shows.
type secrets struct {
	once  sync.Once
	store secret.Store

	mu     sync.Mutex
	values []string
	scrub  *scrub.Scrubber
	refs   map[string]bool // secret references whose value is in values (since the last Invalidate)
	named  map[string]bool // namespace/connection RunScrubber resolved
	// owners is whose each value is: the secret references ("ns/conn")
	// it was read from, and "ns" for a value written in plain text in
	// the source ns's config. Never forgotten: an old value stays its
	// owner's. others caches origin.go's scrubbers, until a value or an
	// owner is added.
	owners map[string][]string
	others map[string]*scrub.Scrubber
}

// Secrets is the hub's secret store: the one in Options; sealed in the
// store when CAPABILITIES_KEK_FILE or CAPABILITIES_KEK is set (or failing,
// saying why, when the store's secrets are sealed and cannot be opened);
// else the OS keychain with a mode-600 file fallback beside the store.
func (h *Hub) Secrets() secret.Store {
	h.secrets.once.Do(func() {
		if h.opts.Secrets != nil {
			h.secrets.store = h.opts.Secrets
			return
		}
		// CAPABILITIES_KEK_FILE or CAPABILITIES_KEK: sealed in the store.
		var hubID string
		if f, ok := h.store.(interface{ Hub() store.Hub }); ok {
			hubID = f.Hub().ID
		}
		if s, err := secret.FromEnv(context.Background(), h.store, hubID); err != nil {
			h.secrets.store = secret.Unusable(err)
			return
		} else if s != nil {
			h.secrets.store = s
			return
		}
		opts := secret.Options{Logger: h.log}
		if f, ok := h.store.(interface{ Dir() string }); ok { // the hub folder on this machine
			opts.File = filepath.Join(f.Dir(), "secrets.json")
		}
		if h.opts.NoKeychain {
			opts.Keychain = noKeychain{}
		}
		h.secrets.store = secret.Open(opts)
	})
	return h.secrets.store
}

// noKeychain is a keychain that is never there (NO_KEYRING=1).
type noKeychain struct{}

var errNoKeychain = errors.New("the keychain is turned off (NO_KEYRING=1)")

func (noKeychain) Get(string, string) (string, error) { return "", errNoKeychain }
func (noKeychain) Set(string, string, string) error   { return errNoKeychain }
func (noKeychain) Delete(string, string) error        { return errNoKeychain }

// SecretStatus says where secrets live, for doctor.
func (h *Hub) SecretStatus() string {
	switch k := h.Secrets().(type) {
	case *secret.Keyring:
		return k.Status().String()
	case fmt.Stringer: // sealed, or unusable
		return k.String()
	}
	return "in memory (tests)"
}

// remember adds a resolved secret (of the secret reference ref, "" for
// none yet) to the values scrubbed from output.
func (h *Hub) remember(ref, v string) { h.rememberOwned(ref, ref, v) }

// rememberOwned is remember, with the value's owner (origin.go) named
// apart from the reference: "ns" for a source's plain credential.
func (h *Hub) rememberOwned(ref, owner, v string) {
	h.secrets.mu.Lock()
	defer h.secrets.mu.Unlock()
	if ref != "" {
		if h.secrets.refs == nil {
			h.secrets.refs = map[string]bool{}
		}
		h.secrets.refs[ref] = true
	}
	if owner != "" && !slices.Contains(h.secrets.owners[v], owner) {
		if h.secrets.owners == nil {
			h.secrets.owners = map[string][]string{}
		}
		h.secrets.owners[v] = append(h.secrets.owners[v], owner)
		h.secrets.others = nil
	}
	for _, x := range h.secrets.values {
		if x == v {
			return
		}
	}
	h.secrets.values = append(h.secrets.values, v)
	h.secrets.scrub = scrub.New(h.secrets.values...)
}

// Scrub replaces every secret this process resolved, in any of its
// encodings, with [secret].
func (h *Hub) Scrub(s string) string {
	h.secrets.mu.Lock()
	sc := h.secrets.scrub
	h.secrets.mu.Unlock()
	return sc.String(s)
}

func (h *Hub) scrubber() *scrub.Scrubber {
	h.secrets.mu.Lock()
	defer h.secrets.mu.Unlock()
	return h.secrets.scrub
}

// Scrubber replaces every secret this process resolved, in any of its
// encodings; JSON through its JSON method. A nil Scrubber scrubs nothing.
func (h *Hub) Scrubber() *scrub.Scrubber { return h.scrubber() }

// upstreamCodes are the codes of the ToolErrors that tools.Call makes of
// what an upstream answered or failed with: their messages come from it.
var upstreamCodes = map[string]bool{"tool_error": true, "upstream_error": true, "upstream_timeout": true, "upstream_unavailable": true}

// RunScrubber is the scrubber of what enters and leaves a run: every secret
// this process resolved, after resolving those of the connections through
// which the journal's calls reached an upstream. A run resumed here may have
// made its calls in another process: code can join parts of a secret that
// entered it clean (two halves), and what leaves must be scrubbed of the
// whole. Calls that never reached an upstream (denied, awaiting a person,
// refused by the hub, search and describe) read no credential, so neither
// does this. A call through the default connection ("") resolves every
// connection of its namespace: the default may have changed since.
func (h *Hub) RunScrubber(ctx context.Context, journal []model.JournalEntry) *scrub.Scrubber {
	for _, je := range journal { // an intent line is neither OK nor an error
		if je.Address == "hub.search" || je.Address == "hub.describe" {
			continue
		}
		if je.OK || (je.Error != nil && upstreamCodes[je.Error.Code]) {
			ns, _, _ := model.SplitAddress(je.Address)
			h.resolveForScrub(ctx, ns, je.Connection)
		}
	}
	return h.scrubber()
}

// resolveForScrub remembers the secrets of a namespace's connection (every
// connection for ""), once per process. A secret that cannot be read (it
// was removed) is logged and left out: its value is no longer known here.
func (h *Hub) resolveForScrub(ctx context.Context, ns, conn string) {
	key := ns + "/" + conn
	h.secrets.mu.Lock()
	done := h.secrets.named[key]
	if h.secrets.named == nil {
		h.secrets.named = map[string]bool{}
	}
	h.secrets.named[key] = true
	h.secrets.mu.Unlock()
	if done {
		return
	}
	conns, err := store.Get[model.Connections](ctx, h.store, store.Connections, ns)
	if err != nil {
		if !errors.Is(err, store.ErrNotFound) {
			h.log.Warn("reading connections to scrub a run's output", "namespace", ns, "err", err)
		}
		return
	}
	h.learn(ctx, conns, conn)
}

// learn remembers the secrets of conns (only the connection conn, unless
// ""), except those already known.
func (h *Hub) learn(ctx context.Context, conns *model.Connections, conn string) {
	for _, c := range conns.Items {
		if conn != "" && c.Name != conn {
			continue
		}
		h.secrets.mu.Lock()
		known := h.secrets.refs[c.SecretRef]
		h.secrets.mu.Unlock()
		if known {
			continue
		}
		v, err := h.Secrets().Get(secret.Quiet(ctx), c.SecretRef)
		if err != nil {
			if !errors.Is(err, secret.ErrNotFound) {
				h.log.Warn("reading a credential to scrub a run's output", "connection", c.SecretRef, "err", err)
			}
			continue
		}
		if tk, ok := oauth.Parse(v); ok && c.Auth == model.AuthOAuth {
			h.rememberTokens(c.SecretRef, tk)
			continue
		}
		for _, x := range model.Secrets(v) {
			h.remember(c.SecretRef, x)
		}
	}
}

// knowEveryCredential makes the scrubber hold every credential the hub
// stores, not only those this process used, and those a source's config
// holds in plain text. What an upstream answers may
// quote any of them: a file tool that reads the fallback secrets.json or a
// harness config that still holds the token it was imported from, another
// upstream's /proc/<pid>/environ. It runs once an upstream has answered,
// once per catalog: again after the store's connections change (Watch),
// when Invalidate has made every reference unknown again (a value may have
// been replaced; the old one stays scrubbed).
func (h *Hub) knowEveryCredential(ctx context.Context) {
	c, err := h.loadCatalog(ctx)
	if err != nil {
		h.log.Warn("reading the catalog to scrub a call's answer", "err", err)
		return
	}
	c.credentials.Do(func() {
		for _, src := range c.sources {
			for _, v := range src.PlainCredentials() {
				h.rememberOwned("", src.Namespace, v)
			}
		}
		ctx := context.WithoutCancel(ctx)
		ids, err := h.store.List(ctx, store.Connections)
		if err != nil {
			h.log.Warn("reading connections to scrub a call's answer", "err", err)
			return
		}
		for _, ns := range ids {
			conns, err := store.Get[model.Connections](ctx, h.store, store.Connections, ns)
			if err != nil {
				h.log.Warn("reading connections to scrub a call's answer", "namespace", ns, "err", err)
				continue
			}
			h.learn(ctx, conns, "")
		}
	})
}

// defaultConnection names the connection a call to ns that names none goes
// through: the source's default, "default" for a source that takes a
// credential but has none stored yet, "" for a source that needs none.
func (h *Hub) defaultConnection(ctx context.Context, ns string) (string, error) {
	conns, err := store.Get[model.Connections](ctx, h.store, store.Connections, ns)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return "", fmt.Errorf("reading the connections of %s: %w", ns, err)
	}
	if conns != nil && conns.Default != "" {
		return conns.Default, nil
	}
	if conns != nil && len(conns.Items) > 0 {
		return DefaultConnection, nil
	}
	c, err := h.loadCatalog(ctx) // in memory: no second read on a call's path
	if err != nil {
		return "", err
	}
	if src := c.sources[ns]; src != nil && (src.SecretEnv != "" || src.SecretHeader != "" || src.AuthScheme != "") {
		return DefaultConnection, nil
	}
	return "", nil
}

// Connections returns a source's connections (an empty set when none).
func (h *Hub) Connections(ctx context.Context, ns string) (*model.Connections, error) {
	if _, err := h.Source(ctx, ns); err != nil {
		return nil, err
	}
	c, err := store.Get[model.Connections](ctx, h.store, store.Connections, ns)
	if errors.Is(err, store.ErrNotFound) {
		return &model.Connections{Namespace: ns, Items: []model.Connection{}}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the connections of %s: %w", ns, err)
	}
	return c, nil
}

// AuthRequest stores one credential.
type AuthRequest struct {
	Namespace  string
	Connection string // "" → "default"
	Value      string
	Env        string // for a stdio source: the variable the server reads
	Header     string // for an HTTP source: the header (default Authorization: Bearer)
}

// Auth stores a credential in the secret store and records the connection
// (a reference, never the value). The first connection becomes the default.
func (h *Hub) Auth(ctx context.Context, req AuthRequest) (*model.Connections, error) {
	src, err := h.Source(ctx, req.Namespace)
	if err != nil {
		return nil, fmt.Errorf("storing a credential: %w", err)
	}
	if req.Connection == "" {
		req.Connection = DefaultConnection
	}
	if err := validConnectionName(req.Connection); err != nil {
		return nil, fmt.Errorf("storing a credential: %w", err)
	}
	if strings.TrimSpace(req.Value) == "" {
		return nil, fmt.Errorf("storing a credential: %w; type or pipe the credential", secret.ErrEmpty)
	}
	if req.Env != "" && req.Header != "" {
		return nil, fmt.Errorf("storing a credential: give --env or --header, not both")
	}
	switch src.Kind {
	case model.KindStdio:
		if req.Header != "" {
			return nil, fmt.Errorf("storing a credential: %s is a local command; it reads its credential from an environment variable (--env VAR), not a header", req.Namespace)
		}
		if req.Env != "" {
			if err := validEnvName(req.Env); err != nil {
				return nil, fmt.Errorf("storing a credential: %w", err)
			}
		} else if src.SecretEnv == "" {
			return nil, fmt.Errorf("storing a credential: say which environment variable %s reads it from, e.g. --env GITHUB_PERSONAL_ACCESS_TOKEN", req.Namespace)
		}
	case model.KindHTTP:
		if req.Env != "" {
			return nil, fmt.Errorf("storing a credential: %s is a remote server; it gets its credential in a header (--header NAME, default Authorization: Bearer), not an environment variable", req.Namespace)
		}
		if req.Header != "" {
			if err := validHeaderName(req.Header); err != nil {
				return nil, fmt.Errorf("storing a credential: %w", err)
			}
		}
	}
	ref := req.Namespace + "/" + req.Connection
	if err := h.Secrets().Set(ctx, ref, req.Value); err != nil {
		return nil, fmt.Errorf("storing a credential: %w", err)
	}
	if req.Env != "" || req.Header != "" {
		err := store.UpdateJSON(ctx, h.store, store.Sources, req.Namespace, func(s *model.Source) (*model.Source, error) {
			if s == nil {
				return nil, fmt.Errorf("the source %s was removed meanwhile", req.Namespace)
			}
			if req.Env != "" {
				s.SecretEnv = req.Env
			}
			if req.Header != "" {
				s.SecretHeader = req.Header
			}
			return s, nil
		})
		if err != nil {
			return nil, fmt.Errorf("storing a credential: %w", err)
		}
	}
	out, err := h.recordConnection(ctx, req.Namespace, req.Connection, ref, "")
	if err != nil {
		return nil, fmt.Errorf("storing a credential: %w", err)
	}
	return out, nil
}

// recordConnection records a connection whose secret was just stored under
// ref: auth "" for a static credential, model.AuthOAuth for a sign-in (a
// need to sign in again is cleared either way); the first connection is the
// default. The pool's sessions of the namespace end, so the next call uses
// the new secret, and search names the connections.
func (h *Hub) recordConnection(ctx context.Context, ns, conn, ref, auth string) (*model.Connections, error) {
	var out *model.Connections
	err := store.UpdateJSON(ctx, h.store, store.Connections, ns, func(c *model.Connections) (*model.Connections, error) {
		if c == nil {
			c = &model.Connections{Namespace: ns}
		}
		if cur := c.Get(conn); cur == nil {
			c.Items = append(c.Items, model.Connection{Name: conn, SecretRef: ref, CreatedAt: time.Now().UTC().Truncate(time.Second), Auth: auth})
		} else {
			cur.Auth, cur.SignIn = auth, ""
		}
		if c.Default == "" {
			c.Default = conn
		}
		out = c
		return c, nil
	})
	if err != nil {
		return nil, err
	}
	h.oauth.forget(ns)
	h.pool.Drop(ns)
	h.Invalidate()
	return out, nil
}

// ConnectionError says a call cannot go ahead for lack of a credential.
type ConnectionError struct {
	Namespace  string
	Connection string
	Unknown    bool // the connection does not exist (vs. has no credential yet)
	Known      []string
	// SignIn says why an OAuth connection's tokens stopped working (the
	// refresh token was refused): a person must sign in again.
	SignIn string
}

func (e *ConnectionError) Error() string {
	if e.SignIn != "" {
		cmd := "capabilities hub auth " + e.Namespace
		if e.Connection != "" && e.Connection != DefaultConnection {
			cmd += " --connection " + e.Connection
		}
		return fmt.Sprintf("%s/%s: %s; sign in again: %s", e.Namespace, e.Connection, e.SignIn, cmd)
	}
	if e.Unknown {
		return fmt.Sprintf("%s has no connection %q (it has: %s)", e.Namespace, e.Connection, strings.Join(e.Known, ", "))
	}
	return fmt.Sprintf("%s/%s has no credential: a person must run `capabilities hub auth %s --connection %s`", e.Namespace, e.Connection, e.Namespace, e.Connection)
}

// credential resolves the secret a call needs, at the moment of the call.
// It returns nil when the source needs none.
func (h *Hub) credential(ctx context.Context, src *model.Source, conn string) (*source.Credential, error) {
	conns, err := store.Get[model.Connections](ctx, h.store, store.Connections, src.Namespace)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("reading the connections of %s: %w", src.Namespace, err)
	}
	needs := src.SecretEnv != "" || (conns != nil && len(conns.Items) > 0)
	if !needs {
		if conn != "" {
			return nil, &ConnectionError{Namespace: src.Namespace, Connection: conn, Unknown: true, Known: []string{"none"}}
		}
		return nil, nil
	}
	c := conns.Get(conn)
	if c == nil {
		name := conn
		if name == "" {
			name = DefaultConnection
		}
		if conn != "" && conns != nil && len(conns.Items) > 0 {
			var known []string
			for _, it := range conns.Items {
				known = append(known, it.Name)
			}
			return nil, &ConnectionError{Namespace: src.Namespace, Connection: conn, Unknown: true, Known: known}
		}
		return nil, &ConnectionError{Namespace: src.Namespace, Connection: name}
	}
	if c.SignIn != "" {
		return nil, &ConnectionError{Namespace: src.Namespace, Connection: c.Name, SignIn: c.SignIn}
	}
	v, err := h.Secrets().Get(ctx, c.SecretRef)
	if errors.Is(err, secret.ErrNotFound) {
		return nil, &ConnectionError{Namespace: src.Namespace, Connection: c.Name}
	}
	if err != nil {
		return nil, fmt.Errorf("reading the credential of %s/%s: %w", src.Namespace, c.Name, err)
	}
	if c.Auth == model.AuthOAuth {
		tk, ok := oauth.Parse(v)
		if !ok {
			return nil, &ConnectionError{Namespace: src.Namespace, Connection: c.Name, SignIn: "the connection holds no OAuth tokens"}
		}
		h.rememberTokens(c.SecretRef, tk)
		return &source.Credential{Connection: c.Name, OAuth: h.oauthSource(src.Namespace, c, tk)}, nil
	}
	for _, x := range model.Secrets(v) {
		h.remember(c.SecretRef, x)
	}
	return &source.Credential{Connection: c.Name, Value: v}, nil
}

// readyToken makes sure an OAuth credential has an access token that is
// valid now, refreshing it first, before the call's request (and its
// journaled intent) goes out: a refused refresh token makes the call wait
// for a sign-in instead of failing in flight.
func readyToken(ctx context.Context, ns string, cred *source.Credential) error {
	if cred == nil || cred.OAuth == nil {
		return nil
	}
	_, err := cred.OAuth.Token(ctx)
	if ce := signInError(ns, cred, err); ce != nil {
		return ce
	}
	return err
}

// ConnectionReady reports whether a call through conn could now get its
// credential (the person ran `hub auth`), without reading the value.
func (h *Hub) ConnectionReady(ctx context.Context, ns, conn string) bool {
	conns, err := store.Get[model.Connections](ctx, h.store, store.Connections, ns)
	if err != nil {
		return false
	}
	c := conns.Get(conn)
	return c != nil && c.SignIn == ""
}

func validEnvName(s string) error {
	if s == "" || len(s) > 128 || s[0] >= '0' && s[0] <= '9' {
		return fmt.Errorf("environment variable %q must be 1 to 128 characters of A-Z, 0-9 and _, not starting with a digit", s)
	}
	for _, r := range s {
		if !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_') {
			return fmt.Errorf("environment variable %q may contain only letters, digits and _", s)
		}
	}
	return nil
}

func validHeaderName(s string) error {
	if s == "" || len(s) > 128 {
		return fmt.Errorf("header %q must be 1 to 128 characters", s)
	}
	for _, r := range s {
		if !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return fmt.Errorf("header %q may contain only letters, digits, - and _", s)
		}
	}
	return nil
}
