package push

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing/fstest"
	"time"

	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/stack"
	"github.com/capabilities-sh/capabilities/store"
	"github.com/modelcontextprotocol/go-sdk/auth"
)

// maxBody bounds a request's bundle.
const maxBody = 32 << 20

// holdID is the claim an apply holds in the tenant's store.
const holdID = "push-apply"

// Change is one item a push changes on the hosted hub.
type Change struct {
	Kind   string `json:"kind"` // stack.KindSource, KindRule, KindProfile, KindSkill, or KindSecret
	Name   string `json:"name"`
	Op     string `json:"op"` // stack.OpAdd, OpChange, OpRemove
	Detail string `json:"detail,omitempty"`
}

// Key names the item: "source github".
func (c Change) Key() string { return c.Kind + " " + c.Name }

// Plan is what applying a bundle would change, and the hash that applying
// it needs.
type Plan struct {
	Hash    string   `json:"hash"`
	Changes []Change `json:"changes"`
	// Notes say what the push leaves as it is on the hosted hub, and why
	// (a connection whose secret was not sent…).
	Notes []string `json:"notes,omitempty"`
}

// ApplyRequest is a bundle and the hash of the plan the person saw.
type ApplyRequest struct {
	Bundle
	Hash string `json:"hash"`
}

// Result is what an apply did.
type Result struct {
	Applied []Change  `json:"applied"`
	Failed  []Failure `json:"failed,omitempty"`
	Notes   []string  `json:"notes,omitempty"`
}

// Failure is a change that was not applied, and why.
type Failure struct {
	Change
	Error string `json:"error"`
}

// Status is the hosted hub's state, as GET /api/status answers it.
type Status struct {
	Tenant  string         `json:"tenant"`
	Sources []SourceStatus `json:"sources"`
	// Unreviewed counts the tools no person reviewed yet (they ask).
	Unreviewed int           `json:"unreviewed"`
	Pending    []PendingCall `json:"pending"`
	Runs       []RunSummary  `json:"runs"`
}

// SourceStatus is one source of the hosted hub.
type SourceStatus struct {
	Namespace string `json:"namespace"`
	Kind      string `json:"kind"`
	Where     string `json:"where"` // the URL or document
	Tools     int    `json:"tools"`
	Health    string `json:"health"` // "ok", "error", or "unknown" (never listed)
	LastError string `json:"lastError,omitempty"`
}

// PendingCall is a call waiting for a person's decision.
type PendingCall struct {
	Run       string    `json:"run"`
	ID        string    `json:"id"`
	Address   string    `json:"address"`
	Summary   string    `json:"summary,omitempty"`
	ExpiresAt time.Time `json:"expiresAt,omitzero"`
}

// RunSummary is one recent run.
type RunSummary struct {
	ID        string    `json:"id"`
	Status    string    `json:"status"`
	CreatedAt time.Time `json:"createdAt"`
}

type server struct {
	hubFor func(ctx context.Context, tenant string) (*hub.Hub, error)
	log    *slog.Logger
	locks  sync.Map // tenant → *sync.Mutex: one plan check and apply at a time
}

// Handler serves POST /api/push/plan, POST /api/push/apply and GET
// /api/status (full paths) for the tenant of the request's bearer token
// (go-sdk auth.TokenInfoFromContext: mount it behind the authorization
// server's middleware); a token without the scope "hub" is refused.
// hubFor resolves the tenant's hub, open at least until ctx is done; the
// Handler never closes it.
func Handler(hubFor func(ctx context.Context, tenant string) (*hub.Hub, error)) http.Handler {
	s := &server{hubFor: hubFor, log: slog.Default()}
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+PathPlan, s.tenant(s.servePlan))
	mux.HandleFunc("POST "+PathApply, s.tenant(s.serveApply))
	mux.HandleFunc("GET "+PathStatus, s.tenant(s.serveStatus))
	return mux
}

// apiError is an answer's error: its status and a sentence for a person.
type apiError struct {
	status int
	msg    string
}

func (e *apiError) Error() string { return e.msg }

func badRequest(format string, args ...any) error {
	return &apiError{http.StatusBadRequest, fmt.Sprintf(format, args...)}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (s *server) fail(w http.ResponseWriter, h *hub.Hub, err error) {
	var ae *apiError
	if errors.As(err, &ae) {
		writeJSON(w, ae.status, map[string]string{"error": ae.msg})
		return
	}
	msg := err.Error()
	if h != nil {
		msg = h.Scrub(msg)
	}
	s.log.Error("push API", "err", msg)
	writeJSON(w, http.StatusInternalServerError, map[string]string{"error": msg})
}

// tenant checks the bearer token's grant (the middleware in front already
// verified it): a tenant, and the scope "hub".
func (s *server) tenant(next func(w http.ResponseWriter, r *http.Request, h *hub.Hub, tenant string)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ti := auth.TokenInfoFromContext(r.Context())
		if ti == nil || ti.UserID == "" {
			w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
			writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "no valid bearer token: sign in with `capabilities hub login <url>`"})
			return
		}
		if !slices.Contains(ti.Scopes, Scope) {
			w.Header().Set("WWW-Authenticate", `Bearer error="insufficient_scope", scope="hub"`)
			writeJSON(w, http.StatusForbidden, map[string]string{"error": "the token lacks the scope \"hub\" (the person's own API): sign in again with `capabilities hub login <url>`"})
			return
		}
		h, err := s.hubFor(r.Context(), ti.UserID)
		if err != nil {
			s.fail(w, nil, fmt.Errorf("opening your hub: %w", err))
			return
		}
		next(w, r, h, ti.UserID)
	}
}

func (s *server) lock(tenant string) func() {
	m, _ := s.locks.LoadOrStore(tenant, &sync.Mutex{})
	mu := m.(*sync.Mutex)
	mu.Lock()
	return mu.Unlock
}

func readJSON(w http.ResponseWriter, r *http.Request, v any) error {
	r.Body = http.MaxBytesReader(w, r.Body, maxBody)
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return &apiError{http.StatusRequestEntityTooLarge, fmt.Sprintf("the bundle is larger than %d MB", maxBody>>20)}
		}
		return badRequest("reading the bundle: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return badRequest("reading the bundle: text after the JSON value")
	}
	return nil
}

// secretsAllowed refuses secret values over plain HTTP from another
// machine: TLS, or a peer on this machine (a TLS-terminating proxy).
func secretsAllowed(r *http.Request, b *Bundle) error {
	if len(b.Secrets) == 0 || r.TLS != nil {
		return nil
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err == nil {
		if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
			return nil
		}
	}
	return badRequest("refusing secrets sent without TLS: push to the hub's https URL")
}

func (s *server) servePlan(w http.ResponseWriter, r *http.Request, h *hub.Hub, tenant string) {
	var b Bundle
	if err := readJSON(w, r, &b); err != nil {
		s.fail(w, h, err)
		return
	}
	if err := secretsAllowed(r, &b); err != nil {
		s.fail(w, h, err)
		return
	}
	p, err := plan(r.Context(), h, &b)
	if err != nil {
		s.fail(w, h, err)
		return
	}
	writeJSON(w, http.StatusOK, p.Plan)
}

func (s *server) serveApply(w http.ResponseWriter, r *http.Request, h *hub.Hub, tenant string) {
	var req ApplyRequest
	if err := readJSON(w, r, &req); err != nil {
		s.fail(w, h, err)
		return
	}
	if err := secretsAllowed(r, &req.Bundle); err != nil {
		s.fail(w, h, err)
		return
	}
	if req.Hash == "" {
		s.fail(w, h, badRequest("no plan hash: ask for a plan first (POST %s) and apply it with its hash", PathPlan))
		return
	}
	defer s.lock(tenant)()
	// One apply at a time for the tenant across the hub's processes too:
	// a claim in its store (a row lease on PostgreSQL).
	release, err := h.Store().Hold(r.Context(), store.Policies, holdID)
	if errors.Is(err, store.ErrBusy) {
		w.Header().Set("Retry-After", "2")
		s.fail(w, h, &apiError{http.StatusServiceUnavailable, "another push is being applied to this hub: nothing was applied; push again in a moment"})
		return
	}
	if err != nil {
		s.fail(w, h, fmt.Errorf("claiming the hub for the push: %w", err))
		return
	}
	defer release()
	p, err := plan(r.Context(), h, &req.Bundle)
	if err != nil {
		s.fail(w, h, err)
		return
	}
	if p.Hash != req.Hash {
		s.fail(w, h, &apiError{http.StatusConflict, "the hosted hub changed since the plan was made (its hash no longer matches): nothing was applied; push again to see the new plan"})
		return
	}
	res := apply(r.Context(), h, p)
	s.log.Info("push applied", "tenant", tenant, "applied", len(res.Applied), "failed", len(res.Failed))
	writeJSON(w, http.StatusOK, res)
}

func (s *server) serveStatus(w http.ResponseWriter, r *http.Request, h *hub.Hub, tenant string) {
	st, err := status(r.Context(), h, tenant)
	if err != nil {
		s.fail(w, h, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

// planned is a plan with what applying it needs.
type planned struct {
	Plan
	hosted  *stack.State
	theirs  *stack.State
	changes []stack.Change          // sources, skills, rules, profiles
	byKey   map[string]stack.Change // the listed ones, by Change.Key
	secrets []Secret                // to store
}

func mapFS(files map[string][]byte) fstest.MapFS {
	m := fstest.MapFS{}
	for p, data := range files {
		m[p] = &fstest.MapFile{Data: data, Mode: 0o600}
	}
	return m
}

// plan compares the bundle with the hub's state.
func plan(ctx context.Context, h *hub.Hub, b *Bundle) (*planned, error) {
	for p := range b.Files {
		if !stack.Owned(p) {
			return nil, badRequest("the bundle's file %s is not one a push carries (sources/, policy.json, profiles/, skills/)", p)
		}
	}
	theirs, err := stack.Read(mapFS(b.Files))
	if err != nil {
		return nil, badRequest("reading the bundle: %v", err)
	}
	for _, ns := range sortedKeys(theirs.Sources) {
		if why := Hostable(theirs.Sources[ns].Source); why != "" {
			return nil, badRequest("refusing the push: the source %s cannot run on a hosted hub: %s. Nothing was changed", ns, why)
		}
	}
	hosted, err := stack.FromHub(ctx, h)
	if err != nil {
		return nil, err
	}
	p := &planned{hosted: hosted, theirs: theirs}
	if _, ok := h.Skills(); !ok && len(theirs.Skills) > 0 {
		p.Notes = append(p.Notes, fmt.Sprintf("skills left out (%s): this hosted hub keeps no skills", strings.Join(sortedKeys(theirs.Skills), ", ")))
		theirs.Skills = map[string]stack.Skill{}
	}
	sent := map[string]Secret{}
	for _, sc := range b.Secrets {
		sf, ok := theirs.Sources[sc.Namespace]
		i := slices.IndexFunc(sf.Connections, func(c stack.Connection) bool { return c.Name == sc.Connection })
		if !ok || i < 0 || sf.Connections[i].Secret != sc.Name || sf.Connections[i].Auth != "" {
			return nil, badRequest("the secret %s names no connection of the bundle that needs it", sc)
		}
		if strings.TrimSpace(sc.Value) == "" {
			return nil, badRequest("the secret %s has no value", sc)
		}
		if _, dup := sent[sc.Key()]; dup {
			return nil, badRequest("the secret of %s is sent twice", sc.Key())
		}
		sent[sc.Key()] = sc
	}
	// Connections: one the hosted hub lacks is made by storing its
	// secret; without it (or for a sign-in), it stays out and is said.
	// One only the hosted hub has is kept (a push removes no credential).
	for _, ns := range sortedKeys(theirs.Sources) {
		sf := theirs.Sources[ns]
		hs, inHosted := hosted.Sources[ns]
		has := func(name string) bool {
			return inHosted && slices.ContainsFunc(hs.Connections, func(c stack.Connection) bool { return c.Name == name })
		}
		var conns []stack.Connection
		for _, c := range sf.Connections {
			switch {
			case has(c.Name):
				conns = append(conns, c)
			case c.Auth == model.AuthOAuth:
				p.Notes = append(p.Notes, fmt.Sprintf("%s/%s is a sign-in: sign in to it on the hosted hub", ns, c.Name))
			case sent[ns+"/"+c.Name].Value != "":
				conns = append(conns, c)
			default:
				p.Notes = append(p.Notes, fmt.Sprintf("%s/%s needs its secret %s, not sent: `capabilities hub push --secrets` sends it", ns, c.Name, c.Secret))
			}
		}
		if inHosted {
			for _, c := range hs.Connections {
				if !slices.ContainsFunc(sf.Connections, func(x stack.Connection) bool { return x.Name == c.Name }) {
					conns = append(conns, c)
					p.Notes = append(p.Notes, fmt.Sprintf("%s/%s is kept on the hosted hub (a push removes no credential)", ns, c.Name))
				}
			}
		}
		if conns == nil {
			conns = []stack.Connection{}
		}
		sf.Connections = conns
		theirs.Sources[ns] = sf
	}
	p.changes = stack.Plan(hosted, hosted, theirs)
	p.byKey = map[string]stack.Change{}
	var listed []Change
	for _, c := range p.changes {
		if c.Kind == stack.KindSource && c.Op == stack.OpChange && stack.SameSource(c.Mine.(stack.SourceFile), c.Theirs.(stack.SourceFile)) {
			// Only connections differ: the secrets below make them.
			continue
		}
		p.byKey[c.Key()] = c
		listed = append(listed, Change{Kind: c.Kind, Name: c.Name, Op: c.Op, Detail: h.Scrub(detail(c))})
	}
	// Secrets: a new connection's, or one whose value differs from the
	// hosted hub's (compared here; never sent back).
	var secrets []Change
	for _, key := range sortedKeys(sent) {
		sc := sent[key]
		op := stack.OpAdd
		if hs, ok := hosted.Sources[sc.Namespace]; ok && slices.ContainsFunc(hs.Connections, func(c stack.Connection) bool { return c.Name == sc.Connection }) {
			same, err := sameSecret(ctx, h, sc)
			if err != nil {
				return nil, err
			}
			if same {
				continue
			}
			op = stack.OpChange
		}
		p.secrets = append(p.secrets, sc)
		secrets = append(secrets, Change{Kind: KindSecret, Name: sc.String(), Op: op})
	}
	// The order they apply in: removals first (profiles and rules before
	// the sources they name), then sources, skills, secrets, rules and
	// profiles.
	for i := len(listed) - 1; i >= 0; i-- {
		if listed[i].Op == stack.OpRemove {
			p.Changes = append(p.Changes, listed[i])
		}
	}
	for _, kind := range []string{stack.KindSource, stack.KindSkill, KindSecret, stack.KindRule, stack.KindProfile} {
		if kind == KindSecret {
			p.Changes = append(p.Changes, secrets...)
			continue
		}
		for _, c := range listed {
			if c.Kind == kind && c.Op != stack.OpRemove {
				p.Changes = append(p.Changes, c)
			}
		}
	}
	if p.Changes == nil {
		p.Changes = []Change{}
	}
	p.Hash = hashOf(hosted, theirs, p.Changes)
	return p, nil
}

func sameSecret(ctx context.Context, h *hub.Hub, sc Secret) (bool, error) {
	conns, err := h.Connections(ctx, sc.Namespace)
	if err != nil {
		return false, err
	}
	for _, c := range conns.Items {
		if c.Name == sc.Connection {
			v, err := h.Secrets().Get(ctx, c.SecretRef)
			if err != nil {
				return false, nil // unreadable: stored anew
			}
			return v == sc.Value, nil
		}
	}
	return false, nil
}

// hashOf digests the hosted state, the state pushed and the changes: a
// plan made against another hosted state has another hash. No secret
// value enters it.
func hashOf(hosted, theirs *stack.State, changes []Change) string {
	hs := sha256.New()
	for _, st := range []*stack.State{hosted, theirs} {
		files, _ := st.Render()
		for _, p := range sortedKeys(files) {
			fmt.Fprintf(hs, "%s\x00%d\x00", p, len(files[p]))
			hs.Write(files[p])
		}
		hs.Write([]byte{0xff})
	}
	b, _ := json.Marshal(changes)
	hs.Write(b)
	return hex.EncodeToString(hs.Sum(nil))
}

// detail is one line about what a change makes of the item.
func detail(c stack.Change) string {
	v := c.Theirs
	if c.Op == stack.OpRemove {
		v = c.Mine
	}
	switch x := v.(type) {
	case stack.SourceFile:
		s := x.Source
		what := s.URL
		if s.Kind == model.KindOpenAPI {
			what = "OpenAPI " + s.Document
		}
		var needs []string
		for _, cn := range x.Connections {
			if cn.Secret != "" {
				needs = append(needs, cn.Secret+" ("+cn.Name+")")
			}
		}
		if len(needs) > 0 {
			what += "; secrets " + strings.Join(needs, ", ")
		}
		return what
	case stack.Rule:
		if c.Op == stack.OpChange {
			return string(c.Mine.(stack.Rule).Action) + " → " + string(x.Action)
		}
		return string(x.Action)
	case hub.Profile:
		what := "every tool"
		if !x.All() {
			what = strings.Join(append(slices.Clone(x.Namespaces), x.Tools...), ", ")
		}
		return x.Mode + " mode, " + what
	case stack.Skill:
		if x.Git != nil {
			return "git " + x.Git.Repo + "@" + x.Git.Commit
		}
		return fmt.Sprintf("%d files", len(x.Files))
	}
	return ""
}

// apply makes the plan's changes, in its order, through the hub's own
// API. A change that fails is said and the others still apply.
func apply(ctx context.Context, h *hub.Hub, p *planned) *Result {
	res := &Result{Applied: []Change{}, Notes: p.Notes}
	sent := map[string]Secret{}
	for _, sc := range p.secrets {
		sent[sc.String()] = sc
	}
	for _, c := range p.Changes {
		var err error
		if c.Kind == KindSecret {
			sc := sent[c.Name]
			if slices.ContainsFunc(res.Failed, func(f Failure) bool { return f.Key() == stack.KindSource+" "+sc.Namespace }) {
				err = errors.New("its source was not added")
			} else {
				err = storeSecret(ctx, h, p.theirs, sc)
			}
		} else {
			err = applyOne(ctx, h, p.byKey[c.Key()], p.secrets)
		}
		if err != nil {
			res.Failed = append(res.Failed, Failure{Change: c, Error: h.Scrub(err.Error())})
			continue
		}
		res.Applied = append(res.Applied, c)
	}
	return res
}

func applyOne(ctx context.Context, h *hub.Hub, c stack.Change, secrets []Secret) error {
	switch c.Kind {
	case stack.KindSkill:
		return stack.ApplySkill(ctx, h, c)
	case stack.KindProfile:
		return stack.ApplyProfile(ctx, h, c)
	case stack.KindRule:
		if c.Theirs == nil {
			m := c.Mine.(stack.Rule)
			return h.RemoveRule(ctx, m.Target, m.Connection)
		}
		t := c.Theirs.(stack.Rule)
		_, err := h.SetRule(ctx, t.Target, t.Action, t.Connection, Channel)
		return err
	}
	if c.Theirs == nil {
		return h.Remove(ctx, c.Name)
	}
	sf := c.Theirs.(stack.SourceFile)
	if c.Mine == nil {
		// The hosted hub reaches the server and lists its tools itself;
		// they go through review there like any new tool.
		req := stack.Request(sf)
		for _, sc := range secrets {
			if sc.Key() == sf.Source.Namespace+"/"+hub.DefaultConnection {
				req.Secret = sc.Value
			}
		}
		prop, err := h.Propose(ctx, req)
		if err != nil {
			return err
		}
		if err := h.Accept(ctx, prop); err != nil {
			return err
		}
		// The record is the one pushed (what a request does not carry,
		// like an OpenAPI source's auth scheme, too): the next push
		// finds nothing to change.
		if !stack.SameSource(stack.SourceFile{Source: stack.FromModel(prop.Source)}, sf) {
			return stack.UpdateSource(ctx, h.Store(), h, sf)
		}
		return nil
	}
	if err := stack.UpdateSource(ctx, h.Store(), h, sf); err != nil {
		return err
	}
	ch, err := h.Refresh(ctx, c.Name)
	if err != nil {
		return err
	}
	if len(ch) == 1 && ch[0].Error != "" {
		return fmt.Errorf("updated, but listing its tools failed: %s", ch[0].Error)
	}
	return nil
}

// storeSecret stores a sent secret through the hosted hub's secret store
// (sealed there) and records its connection.
func storeSecret(ctx context.Context, h *hub.Hub, theirs *stack.State, sc Secret) error {
	sf := theirs.Sources[sc.Namespace]
	req := hub.AuthRequest{Namespace: sc.Namespace, Connection: sc.Connection, Value: sc.Value}
	for _, c := range sf.Connections {
		if c.Name != sc.Connection {
			continue
		}
		if c.Env != sf.Source.SecretEnv && sf.Source.Kind == model.KindStdio {
			req.Env = c.Env
		}
		if c.Header != sf.Source.SecretHeader && !(sf.Source.SecretHeader == "" && strings.EqualFold(c.Header, "Authorization")) {
			req.Header = c.Header
		}
	}
	_, err := h.Auth(ctx, req)
	return err
}

// status is the hosted hub's state.
func status(ctx context.Context, h *hub.Hub, tenant string) (*Status, error) {
	st := &Status{Tenant: tenant, Sources: []SourceStatus{}, Pending: []PendingCall{}, Runs: []RunSummary{}}
	recs, err := h.Sources(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the sources: %w", err)
	}
	for _, rec := range recs {
		s := rec.Source
		ss := SourceStatus{Namespace: s.Namespace, Kind: s.Kind, Where: s.URL, Health: "unknown"}
		if s.Kind == model.KindOpenAPI {
			ss.Where = s.Document
		}
		if m := rec.Manifest; m != nil {
			ss.Tools, ss.Health, ss.LastError = len(m.Tools), m.Health, m.LastError
		}
		ss.Where, ss.LastError = h.Scrub(ss.Where), h.Scrub(ss.LastError)
		st.Sources = append(st.Sources, ss)
	}
	rev, err := h.PendingReview(ctx, "")
	if err != nil {
		return nil, fmt.Errorf("reading the review: %w", err)
	}
	st.Unreviewed = len(rev.Items)
	waiting, err := h.ListRuns(ctx, hub.RunFilter{Status: string(model.RunAwaitingApproval)})
	if err != nil {
		return nil, fmt.Errorf("reading the runs: %w", err)
	}
	for _, r := range waiting {
		for _, pi := range r.Pending {
			if pi.AwaitsDecision() {
				st.Pending = append(st.Pending, PendingCall{Run: r.ID, ID: pi.ID, Address: pi.Address, Summary: h.Scrub(pi.Summary), ExpiresAt: pi.ExpiresAt})
			}
		}
	}
	recent, err := h.ListRuns(ctx, hub.RunFilter{Limit: 10})
	if err != nil {
		return nil, fmt.Errorf("reading the runs: %w", err)
	}
	for _, r := range recent {
		st.Runs = append(st.Runs, RunSummary{ID: r.ID, Status: string(r.Status), CreatedAt: r.CreatedAt})
	}
	return st, nil
}
