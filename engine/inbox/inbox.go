// Package inbox is the hosted hub's inbox for the person's own machine: the
// calls of their tenant that wait for a decision, a stream of those calls
// as they come and go, and the decision on one. The person's desktop app,
// signed in with `capabilities hub login <url>`, follows the stream and
// raises the same notification and window for a hosted call as for a local
// one; a decision made there comes back here.
//
//	GET  /api/inbox          the pending calls (console.Approvals, as the console's GET /api/approvals)
//	GET  /api/inbox/events   Server-Sent Events: "inbox" (the whole list, first),
//	                         "added" (a console.Approval), "settled" ({run, call})
//	POST /api/inbox/decide   {run, call, decision: once|run|always|deny}
//
// Every request carries a bearer token the hosted server verified (go-sdk's
// auth.TokenInfo in the request's context): its UserID is the tenant, and
// it must hold the scope "hub", checked here too. A run or call of another
// tenant is unknown here, refused exactly as an id that never existed. A
// decision is recorded through engine/approval with the channel desktop and
// the account that decided; this package is one of the person channels the
// import-graph test allows to reach the recorder (I2): it is mounted only
// behind the person's token with the scope "hub", which no MCP client gets
// without asking for it and the person consenting.
package inbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"time"

	"github.com/capabilities-sh/capabilities/engine/approval"
	"github.com/capabilities-sh/capabilities/engine/console"
	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/run"
	"github.com/capabilities-sh/capabilities/store"
	"github.com/modelcontextprotocol/go-sdk/auth"
)

// Scope is the OAuth scope the person's own API needs.
const Scope = "hub"

// maxBodyBytes bounds a decision's body.
const maxBodyBytes = 16 << 10

// HubFor resolves a tenant's hub (hosted.Server.Hub).
type HubFor func(ctx context.Context, tenant string) (*hub.Hub, error)

// Options configure New. The zero value is useful.
type Options struct {
	Logger *slog.Logger
	// Heartbeat is how often the event stream sends a comment line when
	// nothing happens, so that proxies keep it open and the client knows
	// it is alive (DefaultHeartbeat).
	Heartbeat time.Duration
	// Poll is how often the stream reads the inbox again on a store with
	// no change feed (DefaultPoll).
	Poll time.Duration
}

// DefaultHeartbeat and DefaultPoll are Options' defaults.
const (
	DefaultHeartbeat = 15 * time.Second
	DefaultPoll      = 2 * time.Second
)

// Handler serves the inbox under /api/inbox with the default options.
func Handler(hubFor func(ctx context.Context, tenant string) (*hub.Hub, error)) http.Handler {
	return New(hubFor, Options{})
}

type handler struct {
	hubFor HubFor
	opts   Options
	log    *slog.Logger
	mux    *http.ServeMux
}

// New serves the inbox under /api/inbox.
func New(hubFor HubFor, opts Options) http.Handler {
	if opts.Heartbeat <= 0 {
		opts.Heartbeat = DefaultHeartbeat
	}
	if opts.Poll <= 0 {
		opts.Poll = DefaultPoll
	}
	h := &handler{hubFor: hubFor, opts: opts, log: opts.Logger, mux: http.NewServeMux()}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	h.mux.HandleFunc("GET /api/inbox", h.list)
	h.mux.HandleFunc("GET /api/inbox/events", h.events)
	h.mux.HandleFunc("POST /api/inbox/decide", h.decide)
	h.mux.HandleFunc("/api/inbox/", func(w http.ResponseWriter, r *http.Request) {
		console.Fail(w, http.StatusNotFound, "not_found", fmt.Sprintf("no inbox route %s %s: use GET /api/inbox, GET /api/inbox/events or POST /api/inbox/decide", r.Method, r.URL.Path))
	})
	h.mux.HandleFunc("/api/inbox", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", "GET")
		console.Fail(w, http.StatusMethodNotAllowed, "method_not_allowed", fmt.Sprintf("%s /api/inbox: use GET", r.Method))
	})
	return h
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	h.mux.ServeHTTP(w, r)
}

// Error is the body of every refusal: the console's (console.Fail writes
// it).
type Error = console.Error

// tenant is the request's tenant and hub, or false once it has answered the
// refusal: no token (the server mounted this without its middleware), no
// account, or no scope "hub".
func (h *handler) tenant(w http.ResponseWriter, r *http.Request) (string, *hub.Hub, bool) {
	ti := auth.TokenInfoFromContext(r.Context())
	if ti == nil || ti.UserID == "" {
		w.Header().Set("WWW-Authenticate", `Bearer scope="`+Scope+`"`)
		console.Fail(w, http.StatusUnauthorized, "unauthorized", "this needs a bearer token of a signed-in person: run `capabilities hub login <url>`")
		return "", nil, false
	}
	if !slices.Contains(ti.Scopes, Scope) {
		w.Header().Set("WWW-Authenticate", `Bearer error="insufficient_scope", scope="`+Scope+`"`)
		console.Fail(w, http.StatusForbidden, "insufficient_scope", `this token lacks the scope "hub" (the person's own API: inbox and decisions); sign in again with `+"`capabilities hub login <url>`")
		return "", nil, false
	}
	hb, err := h.hubFor(r.Context(), ti.UserID)
	if err != nil {
		h.log.Warn("opening a tenant's hub for the inbox", "tenant", ti.UserID, "err", err)
		console.Fail(w, http.StatusServiceUnavailable, "unavailable", "the hub is not available right now; try again")
		return "", nil, false
	}
	return ti.UserID, hb, true
}

// pending reads the tenant's inbox as the console's GET /api/approvals
// answers it: the same shape, scrubbed and shortened the same way.
func pending(ctx context.Context, hb *hub.Hub) (console.Approvals, error) {
	c := console.New(hb, console.Options{Channel: approval.ChannelDesktop})
	req := httptest.NewRequestWithContext(ctx, http.MethodGet, "/api/approvals", nil)
	rec := httptest.NewRecorder()
	c.ServeHTTP(rec, req)
	var out console.Approvals
	if rec.Code != http.StatusOK {
		var e Error
		_ = json.Unmarshal(rec.Body.Bytes(), &e)
		return out, fmt.Errorf("listing the pending calls: %s", e.Error.Message)
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
		return out, fmt.Errorf("listing the pending calls: %w", err)
	}
	if out.Approvals == nil {
		out.Approvals = []console.Approval{}
	}
	if out.Interrupted == nil {
		out.Interrupted = []console.Interrupted{}
	}
	return out, nil
}

// list is GET /api/inbox.
func (h *handler) list(w http.ResponseWriter, r *http.Request) {
	tenant, hb, ok := h.tenant(w, r)
	if !ok {
		return
	}
	in, err := pending(r.Context(), hb)
	if err != nil {
		h.internal(w, hb, tenant, err)
		return
	}
	console.WriteJSON(w, http.StatusOK, in)
}

func (h *handler) internal(w http.ResponseWriter, hb *hub.Hub, tenant string, err error) {
	msg := hb.Scrub(err.Error())
	h.log.Warn("inbox request failed", "tenant", tenant, "err", msg)
	console.Fail(w, http.StatusInternalServerError, "error", msg)
}

// Decide is the body of POST /api/inbox/decide.
type Decide struct {
	Run      string `json:"run"`
	Call     string `json:"call"`
	Decision string `json:"decision"`
}

// Decided is what a decision answers.
type Decided struct {
	Run      string       `json:"run"`
	Call     string       `json:"call"`
	Decision model.Choice `json:"decision"`
	Channel  string       `json:"channel"`
	// Status is the run's status after the decision, and after the run
	// went on when every call it waited for was decided.
	Status string `json:"status"`
	// Waiting counts the run's calls still awaiting a decision.
	Waiting int `json:"waiting"`
}

// readDecide decodes and checks a decision's body, answering the refusal
// itself.
func readDecide(w http.ResponseWriter, r *http.Request) (Decide, model.Choice, bool) {
	var d Decide
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		console.Fail(w, http.StatusUnsupportedMediaType, "bad_request", "send the decision as application/json: {\"run\": …, \"call\": …, \"decision\": \"once|run|always|deny\"}")
		return d, "", false
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		console.Fail(w, http.StatusBadRequest, "bad_request", fmt.Sprintf("reading the decision: %v; send {\"run\": …, \"call\": …, \"decision\": \"once|run|always|deny\"}", err))
		return d, "", false
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		console.Fail(w, http.StatusBadRequest, "bad_request", "reading the decision: one JSON object only")
		return d, "", false
	}
	for _, f := range []struct{ name, v string }{{"run", d.Run}, {"call", d.Call}} {
		if f.v == "" {
			console.Fail(w, http.StatusBadRequest, "bad_request", fmt.Sprintf("the decision names no %s: send {\"run\": …, \"call\": …, \"decision\": …} as GET /api/inbox lists them", f.name))
			return d, "", false
		}
		if err := store.ValidID(f.v); err != nil {
			console.Fail(w, http.StatusBadRequest, "bad_request", fmt.Sprintf("the decision's %s %q is not an id: %v", f.name, f.v, err))
			return d, "", false
		}
	}
	if d.Decision == "" {
		console.Fail(w, http.StatusBadRequest, "bad_choice", "the decision is missing: send \"decision\": once (this call), run (this tool for the rest of the run), always or deny")
		return d, "", false
	}
	choice, err := approval.ParseChoice(d.Decision)
	if err != nil {
		console.Fail(w, http.StatusBadRequest, "bad_choice", "the decision: "+err.Error())
		return d, "", false
	}
	return d, choice, true
}

// decide is POST /api/inbox/decide: the decision recorded through
// engine/approval (channel desktop, by the token's account), then the run
// resumed when it waits for nothing more.
func (h *handler) decide(w http.ResponseWriter, r *http.Request) {
	tenant, hb, ok := h.tenant(w, r)
	if !ok {
		return
	}
	d, choice, ok := readDecide(w, r)
	if !ok {
		return
	}
	ctx := r.Context()
	eng, err := hb.Runs()
	if err != nil {
		h.internal(w, hb, tenant, fmt.Errorf("deciding: %w", err))
		return
	}
	// Unknown, and another tenant's (not in this tenant's store): the same
	// answer.
	unknown := func() {
		console.Fail(w, http.StatusNotFound, "not_found", fmt.Sprintf("no pending call %s of run %s: GET /api/inbox lists the calls waiting", d.Call, d.Run))
	}
	cur, err := eng.Get(ctx, d.Run)
	if errors.Is(err, run.ErrUnknownRun) || errors.Is(err, store.ErrNotFound) {
		unknown()
		return
	}
	if err != nil {
		h.internal(w, hb, tenant, fmt.Errorf("deciding: %w", err))
		return
	}
	p := cur.PendingItem(d.Call)
	switch {
	case p == nil || (p.Kind != model.PendingApproval && p.Kind != model.PendingInFlight):
		unknown()
		return
	case p.Decision != nil:
		console.Fail(w, http.StatusConflict, "decided", fmt.Sprintf("call %s of run %s was already decided (%s via %s)", d.Call, d.Run, p.Decision.Choice, p.Decision.Channel))
		return
	case cur.Status.Done():
		status := http.StatusConflict
		if cur.Status == model.RunExpired {
			status = http.StatusGone
		}
		console.Fail(w, status, string(cur.Status), fmt.Sprintf("run %s is %s: it waits for no decision", d.Run, cur.Status))
		return
	case p.Kind == model.PendingInFlight && choice != model.ChoiceOnce && choice != model.ChoiceDeny:
		console.Fail(w, http.StatusBadRequest, "bad_choice", fmt.Sprintf("call %s was in flight when the hub stopped and may have happened: decide once (retry) or deny (skip), not %s", d.Call, choice))
		return
	}
	updated, err := approval.Record(ctx, hb.Store(), approval.Request{RunID: d.Run, CallID: d.Call, Choice: choice, Channel: approval.ChannelDesktop, By: tenant})
	switch {
	case errors.Is(err, approval.ErrExpired):
		console.Fail(w, http.StatusGone, "expired", fmt.Sprintf("the approval of %s expired before this decision; run %s is now expired", p.Address, d.Run))
		return
	case errors.Is(err, approval.ErrNotAwaiting):
		console.Fail(w, http.StatusConflict, "not_awaiting", hb.Scrub(err.Error()))
		return
	case err != nil:
		if again, gerr := eng.Get(ctx, d.Run); gerr == nil {
			if q := again.PendingItem(d.Call); q != nil && q.Decision != nil {
				console.Fail(w, http.StatusConflict, "decided", fmt.Sprintf("call %s of run %s was already decided (%s via %s)", d.Call, d.Run, q.Decision.Choice, q.Decision.Channel))
				return
			}
		}
		h.internal(w, hb, tenant, fmt.Errorf("recording the decision: %w", err))
		return
	}
	h.log.Info("decision recorded", "tenant", tenant, "run", d.Run, "call", d.Call, "choice", choice, "channel", approval.ChannelDesktop)
	status := string(updated.Status)
	if hub.Decided(updated) {
		// Every call it waited for is decided: it goes on now, not when the
		// agent comes back. Not cut short if the person's app hangs up: a
		// run stopped in the middle would be interrupted. Another process
		// of the hosted hub that heard the decision first may hold it
		// (FinishDecided): it finishes it there.
		env, err := hb.Resume(context.WithoutCancel(ctx), d.Run)
		switch {
		case errors.Is(err, run.ErrRunningElsewhere):
			status = string(model.RunRunning)
		case err != nil:
			h.log.Warn("resuming a run after a decision", "tenant", tenant, "run", d.Run, "err", hb.Scrub(err.Error()))
		default:
			status = env.Status
		}
	}
	waiting := 0
	for _, q := range updated.Pending {
		if q.AwaitsDecision() {
			waiting++
		}
	}
	console.WriteJSON(w, http.StatusOK, Decided{Run: d.Run, Call: d.Call, Decision: choice, Channel: approval.ChannelDesktop, Status: status, Waiting: waiting})
}

// Settled is the data of a "settled" event: a call that no longer waits
// (decided anywhere, expired, its run gone).
type Settled struct {
	Run  string `json:"run"`
	Call string `json:"call"`
}

// events is GET /api/inbox/events: the inbox first ("inbox"), then each
// call as it starts waiting ("added") and stops ("settled"), read again
// on every change of the tenant's runs (the store's change feed); a
// comment line every Heartbeat. It ends when the client goes or the
// tenant's hub closes (the client connects again).
func (h *handler) events(w http.ResponseWriter, r *http.Request) {
	tenant, hb, ok := h.tenant(w, r)
	if !ok {
		return
	}
	rc := http.NewResponseController(w)
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	var feed <-chan store.Change
	if c, ok := hb.Store().(store.Changer); ok {
		f, err := c.Changes(ctx)
		if err != nil {
			h.internal(w, hb, tenant, fmt.Errorf("following the inbox: %w", err))
			return
		}
		feed = f
	}
	// Read after the feed is open: nothing falls between.
	in, err := pending(ctx, hb)
	if err != nil {
		h.internal(w, hb, tenant, err)
		return
	}
	hdr := w.Header()
	hdr.Set("Content-Type", "text/event-stream")
	hdr.Set("X-Accel-Buffering", "no") // nginx: pass each event on at once
	w.WriteHeader(http.StatusOK)
	send := func(event string, v any) bool {
		var b bytes.Buffer
		data, err := json.Marshal(v)
		if err != nil {
			return false
		}
		fmt.Fprintf(&b, "event: %s\ndata: %s\n\n", event, data)
		if _, err := w.Write(b.Bytes()); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !send("inbox", in) {
		return
	}
	shown := map[string]bool{}
	for _, a := range in.Approvals {
		shown[a.Run+"/"+a.ID] = true
	}
	heartbeat := time.NewTicker(h.opts.Heartbeat)
	defer heartbeat.Stop()
	var poll <-chan time.Time
	if feed == nil {
		t := time.NewTicker(h.opts.Poll)
		defer t.Stop()
		poll = t.C
	}
	var debounce <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-heartbeat.C:
			if _, err := io.WriteString(w, ": heartbeat\n\n"); err != nil || rc.Flush() != nil {
				return
			}
		case c, ok := <-feed:
			if !ok {
				// The store closed (the tenant's hub went idle, the
				// server stops): the client connects again.
				return
			}
			if (c.Resync || c.Kind == store.Runs) && debounce == nil {
				debounce = time.After(20 * time.Millisecond)
			}
		case <-poll:
			debounce = time.After(0)
		case <-debounce:
			debounce = nil
			now, err := pending(ctx, hb)
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				h.log.Warn("reading the inbox for its stream", "tenant", tenant, "err", hb.Scrub(err.Error()))
				continue
			}
			still := map[string]bool{}
			for _, a := range now.Approvals {
				k := a.Run + "/" + a.ID
				still[k] = true
				if !shown[k] {
					if !send("added", a) {
						return
					}
					shown[k] = true
				}
			}
			for k := range shown {
				if still[k] {
					continue
				}
				delete(shown, k)
				run, call, _ := strings.Cut(k, "/")
				if !send("settled", Settled{Run: run, Call: call}) {
					return
				}
			}
		}
	}
}
