// Package console is the hub's screens for a person: one http.Handler that
// serves the web assets (frontend, embedded) and a small JSON API over the
// hub — pending approvals and the decision on them, the review inbox, runs
// and sources. The desktop app mounts the handler as its asset server (no
// network); `capabilities hub console` serves it on loopback behind a Guard
// (one-time link, session cookie, CSRF token, Host, Origin and peer
// checks).
//
// A decision is recorded through engine/approval with the handler's
// channel; this package is one of the person channels the import-graph test
// allows to reach the recorder.
package console

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/capabilities-sh/capabilities/engine/approval"
	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/policy"
	"github.com/capabilities-sh/capabilities/engine/run"
	"github.com/capabilities-sh/capabilities/engine/skill"
	"github.com/capabilities-sh/capabilities/engine/typegen"
	"github.com/capabilities-sh/capabilities/frontend"
	"github.com/capabilities-sh/capabilities/store"
)

// MaxArgsBytes caps the arguments of a pending call as the page shows them.
const MaxArgsBytes = 4 << 10

// maxBodyBytes bounds a request body: a decision or a review's list.
const maxBodyBytes = 256 << 10

// Options configure a Handler. The zero value is useful.
type Options struct {
	Logger *slog.Logger
	// Channel is recorded with every decision (approval.ChannelPage when
	// empty; the desktop app passes approval.ChannelDesktop).
	Channel string
	// By is recorded with every decision as who decided (approval.Request.By):
	// on the hosted hub's dashboard, the signed-in person's tenant. Empty on
	// a local hub.
	By string
	// Run narrows the console to one run: only its pending calls are listed
	// and decided, only it is shown among runs, and the review inbox is
	// read-only. Empty: every run.
	Run string
	// OpenURL hands an OAuth authorization page to the system's browser
	// when a sign-in starts (the desktop app's window, whose web view opens
	// no other window); nil: the page opens it itself.
	OpenURL func(authURL string) error
	// Now is the clock decisions are recorded at (time.Now).
	Now func() time.Time
	// Assets replaces the embedded screens (frontend.Files).
	Assets fs.FS
	// SkillFolders are the agents' skills folders the Review screen offers
	// to import from (tests); nil: every harness's on this machine.
	SkillFolders func() []skill.Folder
}

// Handler serves the console: the screens and the API under /api/.
type Handler struct {
	hub  *hub.Hub
	opts Options
	log  *slog.Logger
	mux  *http.ServeMux
}

// New returns the console over h. It checks no session, CSRF token, Host or
// peer: serve it on a network only behind a Guard.
func New(h *hub.Hub, opts Options) *Handler {
	if opts.Channel == "" {
		opts.Channel = approval.ChannelPage
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Assets == nil {
		opts.Assets = frontend.Files()
	}
	c := &Handler{hub: h, opts: opts, log: opts.Logger, mux: http.NewServeMux()}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	c.mux.HandleFunc("GET /api/session", c.session)
	c.signInRoutes() // GET /api/signins, POST /api/signin
	c.mux.HandleFunc("GET /api/approvals", c.approvals)
	c.mux.HandleFunc("POST /api/approvals/{run}/{call}", c.decide)
	c.mux.HandleFunc("GET /api/approvals/{run}/{call}/args", c.fullArgs)
	c.mux.HandleFunc("GET /api/review", c.review)
	c.mux.HandleFunc("POST /api/review", c.acceptReview)
	c.mux.HandleFunc("GET /api/runs", c.runs)
	c.mux.HandleFunc("GET /api/runs/{run}", c.runDetail)
	c.mux.HandleFunc("POST /api/runs/{run}/resume", c.resumeRun)
	c.mux.HandleFunc("POST /api/runs/{run}/cancel", c.cancelRun)
	c.mux.HandleFunc("GET /api/sources", c.sources)
	c.mux.HandleFunc("GET /api/import", c.imports)
	c.mux.HandleFunc("POST /api/import", c.importSkills)
	c.mux.HandleFunc("GET /api/settings", c.settings)
	c.mux.HandleFunc("POST /api/settings", c.setSettings)
	c.mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		Fail(w, http.StatusNotFound, "not_found", fmt.Sprintf("no API route %s %s", r.Method, r.URL.Path))
	})
	c.mux.HandleFunc("/", c.asset)
	return c
}

// ServeHTTP serves the request with the console's security headers.
func (c *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	secure(w.Header())
	c.mux.ServeHTTP(w, r)
}

// csp lets the page load only its own scripts, styles and API, never be
// framed, and (Trusted Types) never turn a string into HTML.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'; require-trusted-types-for 'script'; trusted-types 'none'"

// secure sets the headers every response of the console carries.
func secure(h http.Header) {
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
}

// Error is the body of every refusal under /api/ (and of engine/inbox's,
// which answers in the console's shape).
type Error struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// Fail answers a refusal: status, and an Error of code and msg as JSON.
func Fail(w http.ResponseWriter, status int, code, msg string) {
	var e Error
	e.Error.Code, e.Error.Message = code, msg
	WriteJSON(w, status, e)
}

// WriteJSON answers status and v as JSON (one line, ending in a newline).
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(true) // <, > and & travel as \u escapes: never markup, even if sniffed
	_ = enc.Encode(v)
}

// asset serves the screens; "/" is index.html.
func (c *Handler) asset(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	name := strings.TrimPrefix(path.Clean(r.URL.Path), "/")
	if name == "" {
		name = "index.html"
	}
	b, err := fs.ReadFile(c.opts.Assets, name)
	if err != nil || strings.HasSuffix(name, ".go") {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	ct := mime.TypeByExtension(path.Ext(name))
	switch path.Ext(name) {
	case ".js":
		ct = "text/javascript; charset=utf-8"
	case ".html":
		ct = "text/html; charset=utf-8"
	case ".css":
		ct = "text/css; charset=utf-8"
	}
	if ct == "" {
		ct = "application/octet-stream"
	}
	w.Header().Set("Content-Type", ct)
	_, _ = w.Write(b)
}

// Session is what GET /api/session returns: how the page decides and until
// when it works.
type Session struct {
	Channel string `json:"channel"`
	// Run is the one run this page is about; empty for every run.
	Run string `json:"run,omitempty"`
	// CSRF is the token the page sends as X-CSRF-Token with every decision
	// (empty when the console is not behind a Guard).
	CSRF string `json:"csrf,omitempty"`
	// ExpiresAt is when the page stops working (zero: never).
	ExpiresAt time.Time `json:"expiresAt,omitzero"`
}

func (c *Handler) session(w http.ResponseWriter, r *http.Request) {
	s := Session{Channel: c.opts.Channel, Run: c.opts.Run}
	if gs := sessionFrom(r.Context()); gs != nil {
		s.CSRF, s.ExpiresAt = gs.csrf, gs.expires
	}
	WriteJSON(w, http.StatusOK, s)
}

// Approval is one call waiting for a person's decision.
type Approval struct {
	Run        string `json:"run"`
	ID         string `json:"id"`   // the pending call (c3)
	Kind       string `json:"kind"` // approval, or in_flight: the call may have happened
	Address    string `json:"address"`
	Connection string `json:"connection"` // "default" for the source's default
	// Summary is the first sentence of the tool's description.
	Summary string `json:"summary"`
	// Effect is write or destructive (by the tool's annotations), when the
	// tool is still known.
	Effect model.Effect `json:"effect,omitempty"`
	// Args are the call's arguments, scrubbed of secrets, within 4 KB:
	// every field, long values shortened (run.PreviewArgs).
	Args json.RawMessage `json:"args,omitempty"`
	// ArgsSize is the whole arguments' size in bytes when Args shows them
	// shortened: GET /api/approvals/{run}/{call}/args reads them.
	ArgsSize int    `json:"argsSize,omitempty"`
	Reason   string `json:"reason,omitempty"` // the policy's reason code
	Message  string `json:"message"`          // why it asks, in a sentence
	// Changes are, for a call that asks because its tool changed upstream
	// since it was reviewed, line diffs of what changed (as the Review
	// screen shows them): the person decides on what the tool says now.
	Changes   []string  `json:"changes,omitempty"`
	ExpiresAt time.Time `json:"expiresAt,omitzero"`
	// Choices are what the person may answer: once, run, always, deny; a
	// call that was in flight takes once (retry) or deny (skip).
	Choices []model.Choice `json:"choices"`
}

// Approvals is GET /api/approvals: the queue, soonest to expire first, and
// the runs interrupted, newest first.
type Approvals struct {
	Approvals []Approval `json:"approvals"`
	// Interrupted are the runs whose process stopped (killed, crashed)
	// while they ran: a person resumes or cancels each.
	Interrupted []Interrupted `json:"interrupted"`
}

// Interrupted is a run recorded running that no process runs any more
// (run.Engine.Effective): POST /api/runs/{run}/resume goes on with it from
// its journal, where a call that was in flight asks first (it may have
// happened); POST /api/runs/{run}/cancel ends it.
type Interrupted struct {
	Run       string    `json:"run"`
	Attempts  int       `json:"attempts"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
	// InFlight are the addresses of the calls that were in flight when
	// the process stopped: each may have happened, and asks on resume.
	InFlight []string `json:"inFlight"`
}

func (c *Handler) approvals(w http.ResponseWriter, r *http.Request) {
	list, interrupted, err := c.pending(r.Context())
	if err != nil {
		c.internal(w, "listing pending approvals", err)
		return
	}
	WriteJSON(w, http.StatusOK, Approvals{Approvals: list, Interrupted: interrupted})
}

// pending lists every call awaiting a decision, and every run interrupted,
// in the console's scope.
func (c *Handler) pending(ctx context.Context) ([]Approval, []Interrupted, error) {
	eng, err := c.hub.Runs()
	if err != nil {
		return nil, nil, err
	}
	var runs, stopped []model.Run
	if c.opts.Run != "" {
		r, err := eng.Get(ctx, c.opts.Run)
		if err != nil {
			return nil, nil, err
		}
		runs = []model.Run{*r}
		if eng.Effective(ctx, r) == model.RunInterrupted {
			stopped = runs
		}
	} else {
		ws, err := eng.Waiting(ctx) // a run awaiting a connection may also wait on an approval
		if err != nil {
			return nil, nil, err
		}
		runs, stopped = ws.Paused, ws.Interrupted
	}
	interrupted := []Interrupted{}
	for _, r := range stopped {
		in := Interrupted{Run: r.ID, Attempts: r.Attempts, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, InFlight: []string{}}
		if journal, err := eng.Journal(ctx, r.ID); err == nil {
			in.InFlight = inFlight(journal)
		}
		interrupted = append(interrupted, in)
	}
	sc := c.hub.Scrubber()
	out := []Approval{}
	reviews := map[string]*hub.Review{} // by namespace, read once a request
	for _, r := range runs {
		if !r.Status.Paused() {
			continue
		}
		for _, p := range r.Pending {
			if !p.AwaitsDecision() {
				continue
			}
			a := Approval{
				Run: r.ID, ID: p.ID, Kind: p.Kind, Address: p.Address, Connection: p.Connection,
				Summary: c.hub.Scrub(p.Summary), Reason: p.Reason, Message: c.hub.Scrub(p.Message),
				ExpiresAt: p.ExpiresAt, Choices: model.Choices,
			}
			if a.Connection == "" {
				a.Connection = "default"
			}
			if len(p.Args) > 0 {
				a.Args = capArgs(sc.JSON(p.Args))
			}
			a.ArgsSize = p.ArgsSize
			if p.Kind == model.PendingInFlight {
				a.Choices = []model.Choice{model.ChoiceOnce, model.ChoiceDeny}
			}
			if _, t, _, err := c.hub.Tool(ctx, p.Address); err == nil {
				a.Effect = t.Effect()
			}
			if p.Reason == policy.ReasonChanged {
				a.Changes = c.changes(ctx, reviews, &p)
			}
			out = append(out, a)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].ExpiresAt.Before(out[j].ExpiresAt) })
	return out, interrupted, nil
}

// inFlight lists the addresses of a journal's calls whose intent has no
// outcome: they may have happened.
func inFlight(journal []model.JournalEntry) []string {
	settled := map[int]bool{}
	for _, je := range journal {
		if !je.Intent {
			settled[je.Seq] = true
		}
	}
	out, seen := []string{}, map[int]bool{}
	for _, je := range journal {
		if je.Intent && !settled[je.Seq] && !seen[je.Seq] {
			seen[je.Seq] = true
			out = append(out, je.Address)
		}
	}
	return out
}

// changes is what changed in the tool of a call that asks because it
// changed upstream: its review item's diffs, scrubbed; nil when the tool
// changed again since the call (the Review screen shows the newest).
func (c *Handler) changes(ctx context.Context, reviews map[string]*hub.Review, p *model.Pending) []string {
	ns, _, _ := model.SplitAddress(p.Address)
	r, ok := reviews[ns]
	if !ok {
		r, _ = c.hub.PendingReview(ctx, ns)
		reviews[ns] = r
	}
	if r == nil {
		return nil
	}
	for _, it := range r.Items {
		if it.Tool.Address != p.Address || it.Tool.Contract != p.Contract {
			continue
		}
		out := make([]string, len(it.Changes))
		for i, ch := range it.Changes {
			out[i] = c.hub.Scrub(ch)
		}
		return out
	}
	return nil
}

// capArgs keeps arguments within MaxArgsBytes (scrubbing may have made
// them longer), every field shown (run.PreviewArgs).
func capArgs(raw json.RawMessage) json.RawMessage {
	return run.PreviewArgs(raw, MaxArgsBytes)
}

// FullArgs is the body of GET /api/approvals/{run}/{call}/args.
type FullArgs struct {
	Args json.RawMessage `json:"args"`
}

// fullArgs is GET /api/approvals/{run}/{call}/args: the whole arguments of
// a pending call whose preview shortened them, scrubbed again, so that a
// person reads all of what they approve.
func (c *Handler) fullArgs(w http.ResponseWriter, r *http.Request) {
	runID, callID := r.PathValue("run"), r.PathValue("call")
	if c.opts.Run != "" && runID != c.opts.Run {
		Fail(w, http.StatusForbidden, "other_run", fmt.Sprintf("this page shows only run %s, not %s", c.opts.Run, runID))
		return
	}
	eng, err := c.hub.Runs()
	if err != nil {
		c.internal(w, "reading a call's arguments", err)
		return
	}
	args, err := eng.FullArgs(r.Context(), runID, callID)
	if errors.Is(err, store.ErrNotFound) {
		Fail(w, http.StatusNotFound, "not_found", fmt.Sprintf("run %s keeps no whole arguments for call %s: its preview shows them all", runID, callID))
		return
	}
	if err != nil {
		c.internal(w, "reading a call's arguments", err)
		return
	}
	WriteJSON(w, http.StatusOK, FullArgs{Args: c.hub.Scrubber().JSON(args)})
}

// Decision is the body of POST /api/approvals/{run}/{call}.
type Decision struct {
	Choice model.Choice `json:"choice"`
}

// Decided is what a decision answers: what was recorded and what happens
// next.
type Decided struct {
	Run     string       `json:"run"`
	Call    string       `json:"call"`
	Choice  model.Choice `json:"choice"`
	Channel string       `json:"channel"`
	// Status is the run's status after the decision.
	Status string `json:"status"`
	// Waiting counts the run's calls still awaiting a decision.
	Waiting int `json:"waiting"`
	// Next says what happens now, for the person.
	Next string `json:"next"`
}

func (c *Handler) decide(w http.ResponseWriter, r *http.Request) {
	runID, callID := r.PathValue("run"), r.PathValue("call")
	if c.opts.Run != "" && runID != c.opts.Run {
		Fail(w, http.StatusForbidden, "other_run", fmt.Sprintf("this page decides only run %s, not %s", c.opts.Run, runID))
		return
	}
	var d Decision
	if !readJSON(w, r, &d) {
		return
	}
	choice, err := approval.ParseChoice(string(d.Choice))
	if err != nil {
		Fail(w, http.StatusBadRequest, "bad_choice", err.Error())
		return
	}
	ctx := r.Context()
	eng, err := c.hub.Runs()
	if err != nil {
		c.internal(w, "deciding", err)
		return
	}
	cur, err := eng.Get(ctx, runID)
	if errors.Is(err, run.ErrUnknownRun) {
		Fail(w, http.StatusNotFound, "not_found", fmt.Sprintf("no run %s", runID))
		return
	}
	if err != nil {
		c.internal(w, "deciding", err)
		return
	}
	p := cur.PendingItem(callID)
	switch {
	case p == nil || (p.Kind != model.PendingApproval && p.Kind != model.PendingInFlight):
		Fail(w, http.StatusNotFound, "not_found", fmt.Sprintf("run %s has no pending call %s", runID, callID))
		return
	case p.Decision != nil:
		Fail(w, http.StatusConflict, "decided", fmt.Sprintf("call %s of run %s was already decided (%s via %s)", callID, runID, p.Decision.Choice, p.Decision.Channel))
		return
	case cur.Status.Done():
		status := http.StatusConflict
		if cur.Status == model.RunExpired {
			status = http.StatusGone
		}
		Fail(w, status, string(cur.Status), fmt.Sprintf("run %s is %s: it waits for no decision", runID, cur.Status))
		return
	case p.Kind == model.PendingInFlight && choice != model.ChoiceOnce && choice != model.ChoiceDeny:
		Fail(w, http.StatusBadRequest, "bad_choice", fmt.Sprintf("call %s was in flight when the hub stopped and may have happened: choose once (retry) or deny (skip), not %s", callID, choice))
		return
	}
	updated, err := approval.Record(ctx, c.hub.Store(), approval.Request{RunID: runID, CallID: callID, Choice: choice, Channel: c.opts.Channel, By: c.opts.By, Now: c.opts.Now()})
	switch {
	case errors.Is(err, approval.ErrExpired):
		Fail(w, http.StatusGone, "expired", fmt.Sprintf("the approval of %s expired before this decision; run %s is now expired (the agent can run its code again to ask again)", p.Address, runID))
		return
	case errors.Is(err, approval.ErrNotAwaiting):
		Fail(w, http.StatusConflict, "not_awaiting", err.Error())
		return
	case err != nil && updated == nil:
		// Decided meanwhile through another channel?
		if again, gerr := eng.Get(ctx, runID); gerr == nil {
			if q := again.PendingItem(callID); q != nil && q.Decision != nil {
				Fail(w, http.StatusConflict, "decided", fmt.Sprintf("call %s of run %s was already decided (%s via %s)", callID, runID, q.Decision.Choice, q.Decision.Channel))
				return
			}
		}
		c.internal(w, "recording the decision", err)
		return
	case err != nil:
		c.internal(w, "recording the decision", err)
		return
	}
	c.log.Info("decision recorded", "run", runID, "call", callID, "choice", choice, "channel", c.opts.Channel)
	waiting := 0
	for _, q := range updated.Pending {
		if q.AwaitsDecision() {
			waiting++
		}
	}
	WriteJSON(w, http.StatusOK, Decided{
		Run: runID, Call: callID, Choice: choice, Channel: c.opts.Channel,
		Status: string(updated.Status), Waiting: waiting, Next: next(runID, p, choice, waiting),
	})

}

// next says, for the person, what happens after a decision.
func next(runID string, p *model.Pending, choice model.Choice, waiting int) string {
	var what string
	switch {
	case p.Kind == model.PendingInFlight && choice == model.ChoiceOnce:
		what = "The call will be made again"
	case p.Kind == model.PendingInFlight:
		what = "The call is skipped: the code gets ToolError skipped_in_flight"
	case choice == model.ChoiceOnce:
		what = "This call will run"
	case choice == model.ChoiceRun:
		what = "This call, and every call of " + p.Address + " for the rest of the run, will run"
	case choice == model.ChoiceAlways:
		what = "This call will run, and a rule now allows this version of " + p.Address + " from now on"
	default:
		what = "The call is denied: the code gets ToolError approval_denied"
	}
	if waiting > 0 {
		return fmt.Sprintf("%s. %d more call(s) of run %s wait for a decision; the run continues once every one is decided.", what, waiting, runID)
	}
	return fmt.Sprintf("%s when the agent continues the run: it calls execute with {resume: %q}. If the agent is no longer waiting, ask it to resume run %s.", what, runID, runID)
}

// ReviewItem is one new or changed tool in the inbox.
type ReviewItem struct {
	Address     string        `json:"address"`
	Contract    string        `json:"contract"` // send it back with the acceptance
	Title       string        `json:"title,omitempty"`
	Summary     string        `json:"summary"`
	Description string        `json:"description"`
	Effect      model.Effect  `json:"effect"`
	Status      string        `json:"status"`   // new or changed
	Proposal    policy.Action `json:"proposal"` // allow for read-only, ask otherwise
	// Changes are, for a changed tool, line diffs against the reviewed
	// contract ("description:\n  - old\n  + new").
	Changes []string `json:"changes,omitempty"`
	// SourceRule is the rule on the whole source that decides the tool
	// instead once it is reviewed (hub.ReviewItem.SourceRule).
	SourceRule *SourceRule `json:"sourceRule,omitempty"`
}

// SourceRule is a rule on a whole source, as the review page shows it.
type SourceRule struct {
	Target string        `json:"target"`
	Action policy.Action `json:"action"`
}

// Inbox is GET /api/review.
type Inbox struct {
	Items    []ReviewItem         `json:"items"`
	Commands []hub.CommandConsent `json:"commands"` // stdio commands awaiting consent
	Removed  []hub.RemovedTool    `json:"removed"`  // reviewed tools their source no longer lists
	// ReadOnly is set when this page may not accept (a page about one run).
	ReadOnly bool `json:"readOnly,omitempty"`
}

func (c *Handler) review(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	rv, err := c.hub.PendingReview(ctx, "")
	if err != nil {
		c.internal(w, "reading the review inbox", err)
		return
	}
	removed, err := c.hub.RemovedTools(ctx)
	if err != nil {
		c.internal(w, "reading the review inbox", err)
		return
	}
	in := Inbox{Items: []ReviewItem{}, Commands: []hub.CommandConsent{}, Removed: removed, ReadOnly: c.opts.Run != ""}
	for _, cmd := range rv.Commands {
		// The page shows the command with its arguments' credentials
		// masked, and consents to it by its digest: the real command line
		// never reaches the page.
		in.Commands = append(in.Commands, hub.CommandConsent{Namespace: cmd.Namespace, Command: commandKey(cmd.Command), Shown: cmd.Shown})
	}
	for _, it := range rv.Items {
		item := ReviewItem{
			Address: it.Tool.Address, Contract: it.Tool.Contract, Title: it.Tool.Title,
			Summary: typegen.FirstSentence(it.Tool.Description), Description: it.Tool.Description,
			Effect: it.Effect, Status: it.Status, Proposal: it.Proposal, Changes: it.Changes,
		}
		if r := it.SourceRule; r != nil {
			item.SourceRule = &SourceRule{Target: r.Target, Action: r.Action}
		}
		in.Items = append(in.Items, item)
	}
	WriteJSON(w, http.StatusOK, in)
}

// Acceptance is the body of POST /api/review: what the person saw and
// accepts. A tool is accepted only at the contract shown; a command only as
// shown.
type Acceptance struct {
	Items []struct {
		Address  string `json:"address"`
		Contract string `json:"contract"`
		// Action is allow, ask or deny; empty takes the proposal.
		Action policy.Action `json:"action,omitempty"`
	} `json:"items"`
	Commands []hub.CommandConsent `json:"commands"`
	Removed  []string             `json:"removed"` // addresses whose removal the person saw
}

// refuseOnRunPage answers 403 read_only, saying how to do it instead, when
// the page is about one run (run != ""): such a page decides that run's
// calls and changes nothing else.
func refuseOnRunPage(w http.ResponseWriter, run, instead string) bool {
	if run == "" {
		return false
	}
	Fail(w, http.StatusForbidden, "read_only", fmt.Sprintf("this page decides run %s only; %s", run, instead))
	return true
}

// Accepted is what POST /api/review answers.
type Accepted struct {
	Accepted int `json:"accepted"`
	Commands int `json:"commands"`
	Removed  int `json:"removed"`
}

func (c *Handler) acceptReview(w http.ResponseWriter, r *http.Request) {
	if refuseOnRunPage(w, c.opts.Run, "review tools with `capabilities hub console` or `capabilities hub review`") {
		return
	}
	var a Acceptance
	if !readJSON(w, r, &a) {
		return
	}
	ctx := r.Context()
	cur, err := c.hub.PendingReview(ctx, "")
	if err != nil {
		c.internal(w, "accepting the review", err)
		return
	}
	sel := &hub.Review{Items: []hub.ReviewItem{}, Commands: []hub.CommandConsent{}}
	decisions := map[string]policy.Action{}
	for _, want := range a.Items {
		i := slices.IndexFunc(cur.Items, func(it hub.ReviewItem) bool { return it.Tool.Address == want.Address })
		if i < 0 || cur.Items[i].Tool.Contract != want.Contract {
			Fail(w, http.StatusConflict, "changed", fmt.Sprintf("%s changed (or was reviewed) since it was shown; reload the inbox", want.Address))
			return
		}
		if want.Action != "" {
			act, err := policy.ParseAction(string(want.Action))
			if err != nil {
				Fail(w, http.StatusBadRequest, "bad_action", err.Error())
				return
			}
			decisions[want.Address] = act
		}
		sel.Items = append(sel.Items, cur.Items[i])
	}
	for _, want := range a.Commands {
		i := slices.IndexFunc(cur.Commands, func(c hub.CommandConsent) bool {
			return c.Namespace == want.Namespace && commandKey(c.Command) == want.Command
		})
		if i < 0 {
			Fail(w, http.StatusConflict, "changed", fmt.Sprintf("the command of %s changed (or was consented to) since it was shown; reload the inbox", want.Namespace))
			return
		}
		sel.Commands = append(sel.Commands, cur.Commands[i])
	}
	if len(sel.Items) > 0 || len(sel.Commands) > 0 {
		if err := c.hub.AcceptReview(ctx, sel, decisions, c.opts.Channel); err != nil {
			c.internal(w, "accepting the review", err)
			return
		}
	}
	forgot, err := c.hub.ForgetRemoved(ctx, a.Removed)
	if err != nil {
		c.internal(w, "accepting the review", err)
		return
	}
	c.log.Info("review accepted", "tools", len(sel.Items), "commands", len(sel.Commands), "removed", len(forgot), "channel", c.opts.Channel)
	WriteJSON(w, http.StatusOK, Accepted{Accepted: len(sel.Items), Commands: len(sel.Commands), Removed: len(forgot)})
}

// RunRow is one run in GET /api/runs.
type RunRow struct {
	ID        string    `json:"id"`
	Status    string    `json:"status"`
	Attempts  int       `json:"attempts"`
	Waiting   int       `json:"waiting"` // items awaiting a person
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// Runs is GET /api/runs, newest first.
type Runs struct {
	Runs []RunRow `json:"runs"`
	// More says that older runs matching the filters are left out by the
	// limit.
	More bool `json:"more"`
}

// RunsLimit is how many runs GET /api/runs lists when its query names no
// limit: a week of an agent's work is thousands, and the screen shows the
// newest first.
const RunsLimit = 50

// maxRunsLimit bounds the limit a query may ask for (0 asks for all).
const maxRunsLimit = 1_000_000

// runFilter reads GET /api/runs's query: status (one of hub.RunStatuses),
// since (an RFC 3339 time, or an age: 90m, 24h, 7d) and namespace — the
// filters of `hub runs` — and limit, how many to list (RunsLimit when
// absent, 0 for all).
func runFilter(q url.Values, now time.Time) (f hub.RunFilter, limit int, err error) {
	f, err = runFilterOf(q, now)
	if err != nil {
		return f, 0, err
	}
	limit = RunsLimit
	if s, ok := q["limit"]; ok {
		n, err := strconv.Atoi(s[0])
		if err != nil || n < 0 || n > maxRunsLimit || len(s) > 1 {
			return f, 0, fmt.Errorf("limit %q: write how many runs to list, a whole number from 1 to %d, or 0 for all", strings.Join(s, ","), maxRunsLimit)
		}
		limit = n
	}
	return f, limit, nil
}

func runFilterOf(q url.Values, now time.Time) (hub.RunFilter, error) {
	for k := range q {
		if k != "status" && k != "since" && k != "namespace" && k != "limit" {
			return hub.RunFilter{}, fmt.Errorf("unknown filter %q: filter by status, since or namespace, and limit how many", k)
		}
	}
	f := hub.RunFilter{Status: q.Get("status"), Namespace: q.Get("namespace")}
	if f.Status != "" && !slices.Contains(hub.RunStatuses, f.Status) {
		return f, fmt.Errorf("status %q is not a status: use one of %s", f.Status, strings.Join(hub.RunStatuses, ", "))
	}
	if f.Namespace != "" && model.ValidNamespace(f.Namespace) != nil {
		return f, fmt.Errorf("namespace %q is not a namespace", f.Namespace)
	}
	if s := q.Get("since"); s != "" {
		if t, err := time.Parse(time.RFC3339, s); err == nil {
			f.Since = t
		} else if d, err := parseAge(s); err == nil {
			f.Since = now.Add(-d)
		} else {
			return f, fmt.Errorf("since %q: write an age (90m, 24h, 7d) or an RFC 3339 time", s)
		}
	}
	return f, nil
}

// parseAge reads an age: whole days (7d) or a Go duration (90m, 36h).
func parseAge(s string) (time.Duration, error) {
	if d, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(d)
		if err != nil || n < 0 || n > 36500 {
			return 0, fmt.Errorf("%q is not an age", s)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%q is not an age", s)
	}
	return d, nil
}

func (c *Handler) runs(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	f, limit, err := runFilter(r.URL.Query(), time.Now())
	if err != nil {
		Fail(w, http.StatusBadRequest, "bad_request", err.Error())
		return
	}
	if limit > 0 && c.opts.Run == "" { // a page about one run lists it, however old
		f.Limit = limit + 1 // one more: are older runs left out?
	}
	list, err := c.hub.ListRuns(ctx, f)
	if errors.Is(err, hub.ErrUnknownNamespace) {
		Fail(w, http.StatusBadRequest, "bad_request", err.Error())
		return
	}
	if err != nil {
		c.internal(w, "listing runs", err)
		return
	}
	out := Runs{Runs: []RunRow{}}
	if f.Limit > 0 && len(list) > limit {
		list, out.More = list[:limit], true
	}
	for _, rr := range list {
		if c.opts.Run != "" && rr.ID != c.opts.Run {
			continue
		}
		row := RunRow{ID: rr.ID, Status: string(rr.Status), Attempts: rr.Attempts, CreatedAt: rr.CreatedAt, UpdatedAt: rr.UpdatedAt, Waiting: waiting(&rr)}
		out.Runs = append(out.Runs, row)
	}
	WriteJSON(w, http.StatusOK, out)
}

// Call is one call of a run: its journal line with the person's decision on
// it, if it asked.
type Call struct {
	Seq        int              `json:"seq"`
	Address    string           `json:"address"`
	Connection string           `json:"connection,omitempty"`
	OK         bool             `json:"ok"`
	Error      *model.ToolError `json:"error,omitempty"`
	Ms         int64            `json:"ms"`
	At         time.Time        `json:"at"`
	// InFlight marks a call whose intent was journaled and whose outcome
	// was not (it may have happened).
	InFlight bool            `json:"inFlight,omitempty"`
	Decision *model.Decision `json:"decision,omitempty"`
	// Repeated marks a read made again on resume: an attempt that was
	// interrupted had sent it (model.JournalEntry.Repeated).
	Repeated bool `json:"repeated,omitempty"`
}

// RunDetail is GET /api/runs/{run}.
type RunDetail struct {
	Run      RunRow        `json:"run"`
	Code     string        `json:"code"`
	Envelope *run.Envelope `json:"envelope"`
	Calls    []Call        `json:"calls"`
}

func (c *Handler) runDetail(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id := r.PathValue("run")
	if c.opts.Run != "" && id != c.opts.Run {
		Fail(w, http.StatusForbidden, "other_run", fmt.Sprintf("this page shows only run %s", c.opts.Run))
		return
	}
	eng, err := c.hub.Runs()
	if err != nil {
		c.internal(w, "reading the run", err)
		return
	}
	rr, err := eng.Get(ctx, id)
	if errors.Is(err, run.ErrUnknownRun) {
		Fail(w, http.StatusNotFound, "not_found", fmt.Sprintf("no run %s", id))
		return
	}
	if err != nil {
		c.internal(w, "reading the run", err)
		return
	}
	journal, err := eng.Journal(ctx, id)
	if err != nil {
		c.internal(w, "reading the run", err)
		return
	}
	env, err := eng.Envelope(ctx, id)
	if err != nil {
		c.internal(w, "reading the run", err)
		return
	}
	// The run may have been made in another process: scrub the secrets of
	// the connections its calls went through.
	sc := c.hub.RunScrubber(ctx, journal)
	rr = run.ScrubRun(sc, rr)
	journal = run.ScrubJournal(sc, journal)
	d := RunDetail{
		Run:      RunRow{ID: rr.ID, Status: string(rr.Status), Attempts: rr.Attempts, CreatedAt: rr.CreatedAt, UpdatedAt: rr.UpdatedAt},
		Code:     sc.String(rr.Code),
		Envelope: env.Scrubbed(sc),
		Calls:    []Call{},
	}
	decisions := map[int]*model.Decision{}
	for _, p := range rr.Pending {
		if p.Decision != nil && (p.Kind == model.PendingApproval || p.Kind == model.PendingInFlight) {
			decisions[p.Seq] = p.Decision
		}
	}
	d.Run.Waiting = waiting(rr)
	if eng.Effective(ctx, rr) == model.RunInterrupted {
		d.Run.Status = string(model.RunInterrupted)
		d.Envelope.Status = d.Run.Status
	}
	// A "run" choice lets the tool through for the rest of the run: its
	// later calls were allowed by that decision, not by a policy.
	byRun := map[string]*model.Decision{}
	for _, p := range rr.Pending {
		if p.Decision != nil && p.Decision.Choice == model.ChoiceRun {
			if prev, ok := byRun[p.Address]; !ok || p.Seq < decidedSeq(rr, prev) {
				byRun[p.Address] = p.Decision
			}
		}
	}
	settled := map[int]bool{}
	for _, je := range journal {
		if !je.Intent {
			settled[je.Seq] = true
		}
	}
	for _, je := range journal {
		if je.Address == "hub.search" || je.Address == "hub.describe" || (je.Intent && settled[je.Seq]) {
			continue
		}
		dec := decisions[je.Seq]
		if r := byRun[je.Address]; dec == nil && r != nil && je.Seq > decidedSeq(rr, r) {
			dec = r
		}
		d.Calls = append(d.Calls, Call{
			Seq: je.Seq, Address: je.Address, Connection: je.Connection, OK: je.OK, Error: je.Error,
			Ms: je.Millis, At: je.At, InFlight: je.Intent, Decision: dec, Repeated: je.Repeated,
		})
	}
	WriteJSON(w, http.StatusOK, d)
}

// waiting counts the items of a run that wait for a person: none once the
// run is over (expired, cancelled), whatever it left undecided.
func waiting(rr *model.Run) int {
	if !rr.Status.Paused() {
		return 0
	}
	n := 0
	for _, p := range rr.Pending {
		if p.Decision == nil {
			n++
		}
	}
	return n
}

// decidedSeq is the seq of the pending item d decided.
func decidedSeq(rr *model.Run, d *model.Decision) int {
	for _, p := range rr.Pending {
		if p.Decision == d {
			return p.Seq
		}
	}
	return 0
}

// SourceInfo is one source in GET /api/sources: never a credential, an
// environment value or a header value.
type SourceInfo struct {
	Namespace     string           `json:"namespace"`
	Kind          string           `json:"kind"`
	ServerName    string           `json:"serverName,omitempty"`
	ServerVersion string           `json:"serverVersion,omitempty"`
	URL           string           `json:"url,omitempty"`     // an HTTP source's endpoint, without user info
	Command       string           `json:"command,omitempty"` // a stdio source's command line
	Health        string           `json:"health"`            // ok, error, or unknown (never listed)
	LastError     string           `json:"lastError,omitempty"`
	CheckedAt     time.Time        `json:"checkedAt,omitzero"`
	Tools         []ToolInfo       `json:"tools"`
	Connections   []ConnectionInfo `json:"connections"`
}

// ToolInfo is one tool of a source.
type ToolInfo struct {
	Address string       `json:"address"`
	Title   string       `json:"title,omitempty"`
	Summary string       `json:"summary"`
	Effect  model.Effect `json:"effect"`
}

// ConnectionInfo names a connection; its secret stays in the keychain.
type ConnectionInfo struct {
	Name      string    `json:"name"`
	Default   bool      `json:"default"`
	CreatedAt time.Time `json:"createdAt"`
}

// Sources is GET /api/sources.
type Sources struct {
	Sources []SourceInfo `json:"sources"`
}

func (c *Handler) sources(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	recs, err := c.hub.Sources(ctx)
	if err != nil {
		c.internal(w, "listing sources", err)
		return
	}
	out := Sources{Sources: []SourceInfo{}}
	for _, rec := range recs {
		s := rec.Source
		si := SourceInfo{Namespace: s.Namespace, Kind: s.Kind, Command: c.hub.Scrub(s.ShownCommandLine()), Health: "unknown", Tools: []ToolInfo{}, Connections: []ConnectionInfo{}}
		if s.URL != "" {
			si.URL = c.hub.Scrub(withoutUserInfo(s.ShownURL()))
		}
		if m := rec.Manifest; m != nil {
			si.ServerName, si.ServerVersion = m.ServerName, m.ServerVersion
			si.Health, si.LastError, si.CheckedAt = m.Health, c.hub.Scrub(m.LastError), m.CheckedAt
			for _, t := range m.Tools {
				si.Tools = append(si.Tools, ToolInfo{Address: t.Address, Title: t.Title, Summary: typegen.FirstSentence(t.Description), Effect: t.Effect()})
			}
		}
		conns, err := c.hub.Connections(ctx, s.Namespace)
		if err != nil {
			c.internal(w, "listing sources", err)
			return
		}
		for _, cn := range conns.Items {
			si.Connections = append(si.Connections, ConnectionInfo{Name: cn.Name, Default: cn.Name == conns.Default, CreatedAt: cn.CreatedAt})
		}
		out.Sources = append(out.Sources, si)
	}
	WriteJSON(w, http.StatusOK, out)
}

// SettingsInfo is GET /api/settings and what POST /api/settings answers:
// the person's settings, and whether the hub is paused.
type SettingsInfo struct {
	// RaiseApprovals brings the approval window to the front when a call
	// waits (the desktop app).
	RaiseApprovals bool `json:"raiseApprovals"`
	// Paused: every call asks, nothing runs unseen.
	Paused bool `json:"paused"`
	// RunRetentionDays and RunRetentionMB: run history older, or beyond
	// that size (oldest first), is deleted; a run waiting for a person is
	// kept. The values in force (the defaults when never set).
	RunRetentionDays int `json:"runRetentionDays"`
	RunRetentionMB   int `json:"runRetentionMB"`
}

// settingsChange is POST /api/settings: the settings to change (an absent
// one stays).
type settingsChange struct {
	RaiseApprovals   *bool `json:"raiseApprovals"`
	Paused           *bool `json:"paused"`
	RunRetentionDays *int  `json:"runRetentionDays"`
	RunRetentionMB   *int  `json:"runRetentionMB"`
}

func (c *Handler) settings(w http.ResponseWriter, r *http.Request) {
	s, err := c.hub.Settings()
	if err != nil {
		c.internal(w, "reading the settings", err)
		return
	}
	ret := s.Retention()
	WriteJSON(w, http.StatusOK, SettingsInfo{RaiseApprovals: s.RaiseApprovals, Paused: c.hub.Paused(),
		RunRetentionDays: int(ret.Age / (24 * time.Hour)), RunRetentionMB: int(ret.Bytes >> 20)})

}

func (c *Handler) setSettings(w http.ResponseWriter, r *http.Request) {
	if refuseOnRunPage(w, c.opts.Run, "change settings with `capabilities hub console` or the desktop app") {
		return
	}
	var ch settingsChange
	if !readJSON(w, r, &ch) {
		return
	}
	if ch.RaiseApprovals == nil && ch.Paused == nil && ch.RunRetentionDays == nil && ch.RunRetentionMB == nil {
		Fail(w, http.StatusBadRequest, "bad_request", "name a setting to change: raiseApprovals, paused, runRetentionDays or runRetentionMB")
		return
	}
	if ch.RunRetentionDays != nil && *ch.RunRetentionDays < 1 || ch.RunRetentionMB != nil && *ch.RunRetentionMB < 1 {
		Fail(w, http.StatusBadRequest, "bad_request", "keep runs at least 1 day and 1 MB")
		return
	}
	if ch.RaiseApprovals != nil || ch.RunRetentionDays != nil || ch.RunRetentionMB != nil {
		var bad error
		err := c.hub.UpdateSettings(func(s *hub.Settings) error {
			if ch.RaiseApprovals != nil {
				s.RaiseApprovals = *ch.RaiseApprovals
			}
			if ch.RunRetentionDays != nil {
				s.RunRetentionDays = *ch.RunRetentionDays
			}
			if ch.RunRetentionMB != nil {
				s.RunRetentionMB = *ch.RunRetentionMB
			}
			bad = s.Check()
			return bad
		})
		if bad != nil {
			Fail(w, http.StatusBadRequest, "bad_request", bad.Error())
			return
		}
		if err != nil {
			c.internal(w, "writing the settings", err)
			return
		}
	}
	if ch.Paused != nil {
		if err := c.hub.SetPaused(*ch.Paused); err != nil {
			c.internal(w, "pausing the hub", err)
			return
		}
		if !*ch.Paused {
			go func() { // beyond this request: the runs' calls take their time
				ctx := context.WithoutCancel(r.Context())
				if _, err := c.hub.ContinuePaused(ctx); err != nil {
					c.log.Warn("resuming the runs that waited for the pause", "err", err)
				}
			}()
		}
	}
	c.log.Info("settings changed", "raiseApprovals", ch.RaiseApprovals, "paused", ch.Paused, "runRetentionDays", ch.RunRetentionDays, "runRetentionMB", ch.RunRetentionMB)
	c.settings(w, r)
}

// readJSON decodes a JSON body of at most maxBodyBytes; it answers the
// refusal itself and returns false when the body is not one.
func readJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		Fail(w, http.StatusUnsupportedMediaType, "bad_request", "send the body as application/json")
		return false
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		Fail(w, http.StatusBadRequest, "bad_request", fmt.Sprintf("reading the request: %v", err))
		return false
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		Fail(w, http.StatusBadRequest, "bad_request", "reading the request: one JSON object only")
		return false
	}
	return true
}

// internal answers a failure of the hub, scrubbed, and logs it.
func (c *Handler) internal(w http.ResponseWriter, doing string, err error) {
	msg := c.hub.Scrub(fmt.Sprintf("%s: %v", doing, err))
	c.log.Warn("console request failed", "err", msg)
	Fail(w, http.StatusInternalServerError, "error", msg)
}

// commandKey is what the review page consents to a command by: the digest
// of its command line, which holds the credentials of its arguments.
func commandKey(line string) string {
	sum := sha256.Sum256([]byte(line))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// RunAction is what POST /api/runs/{run}/resume and /cancel answer.
type RunAction struct {
	Run string `json:"run"`
	// Status is the run's status after the action: awaiting_approval when
	// a call that was in flight asks (Approvals lists it), running when the
	// resumed run goes on beyond resumeWait.
	Status string `json:"status"`
	// Next says what happens now, for the person.
	Next string `json:"next"`
}

// resumeWait is how long a resume is waited for before the answer says the
// run goes on: a run with a call in flight asks at once; one without may
// call upstreams for long.
const resumeWait = 5 * time.Second

// runAction reads the run of a resume or cancel, refusing one outside the
// page's run; nil when it answered.
func (c *Handler) runAction(w http.ResponseWriter, r *http.Request, doing string) (*run.Engine, *model.Run) {
	id := r.PathValue("run")
	if c.opts.Run != "" && id != c.opts.Run {
		Fail(w, http.StatusForbidden, "other_run", fmt.Sprintf("this page acts only on run %s, not %s", c.opts.Run, id))
		return nil, nil
	}
	eng, err := c.hub.Runs()
	if err != nil {
		c.internal(w, doing, err)
		return nil, nil
	}
	rr, err := eng.Get(r.Context(), id)
	if errors.Is(err, run.ErrUnknownRun) {
		Fail(w, http.StatusNotFound, "not_found", fmt.Sprintf("no run %s", id))
		return nil, nil
	}
	if err != nil {
		c.internal(w, doing, err)
		return nil, nil
	}
	return eng, rr
}

// resumeRun is POST /api/runs/{run}/resume: a run that was interrupted
// goes on from its journal in this process. No call is made twice (I6): a
// call that was in flight becomes a pending item (retry or skip) that the
// queue shows. Only an interrupted run is resumed here; a paused one goes
// on when its calls are decided.
func (c *Handler) resumeRun(w http.ResponseWriter, r *http.Request) {
	eng, rr := c.runAction(w, r, "resuming the run")
	if rr == nil {
		return
	}
	if st := eng.Effective(r.Context(), rr); st != model.RunInterrupted {
		Fail(w, http.StatusConflict, "not_interrupted", fmt.Sprintf("run %s is %s, not interrupted: there is nothing to resume here", rr.ID, st))
		return
	}
	type result struct {
		env *hub.Envelope
		err error
	}
	done := make(chan result, 1)
	go func() { // beyond this request: the run's calls take their time
		env, err := c.hub.Resume(context.WithoutCancel(r.Context()), rr.ID)
		if err != nil {
			c.log.Warn("resuming an interrupted run", "run", rr.ID, "err", c.hub.Scrub(err.Error()))
		}
		done <- result{env, err}
	}()
	c.log.Info("resuming an interrupted run", "run", rr.ID, "channel", c.opts.Channel)
	select {
	case res := <-done:
		switch {
		case errors.Is(res.err, run.ErrRunningElsewhere):
			Fail(w, http.StatusConflict, "running_elsewhere", fmt.Sprintf("run %s went on in another process meanwhile (an agent resumed it)", rr.ID))
		case res.err != nil:
			c.internal(w, "resuming the run", res.err)
		default:
			WriteJSON(w, http.StatusOK, RunAction{Run: rr.ID, Status: res.env.Status, Next: resumed(res.env)})
		}
	case <-time.After(resumeWait):
		WriteJSON(w, http.StatusAccepted, RunAction{Run: rr.ID, Status: string(model.RunRunning), Next: "The run goes on in the hub; the Runs screen shows how it ends."})
	}
}

// resumed says, for the person, where a resumed run stands.
func resumed(env *hub.Envelope) string {
	for _, p := range env.Pending {
		if p.Kind == model.PendingInFlight {
			return fmt.Sprintf("%s was in flight when the run stopped and may have happened: retry or skip it in the queue.", p.Address)
		}
	}
	switch model.RunStatus(env.Status) {
	case model.RunAwaitingApproval:
		return "The run waits for a decision on a call: it is in the queue."
	case model.RunAwaitingConnection:
		return "The run waits for a credential: sign in from the Sources screen."
	}
	return fmt.Sprintf("The run went on and is %s; the agent reads its result by resuming it.", env.Status)
}

// cancelRun is POST /api/runs/{run}/cancel: a run that has not finished
// ends, as `capabilities hub cancel` ends it.
func (c *Handler) cancelRun(w http.ResponseWriter, r *http.Request) {
	eng, rr := c.runAction(w, r, "cancelling the run")
	if rr == nil {
		return
	}
	if rr.Status.Done() {
		Fail(w, http.StatusConflict, string(rr.Status), fmt.Sprintf("run %s is already %s", rr.ID, rr.Status))
		return
	}
	env, err := eng.Cancel(r.Context(), rr.ID)
	if err != nil {
		c.internal(w, "cancelling the run", err)
		return
	}
	c.log.Info("run cancelled", "run", rr.ID, "channel", c.opts.Channel)
	WriteJSON(w, http.StatusOK, RunAction{Run: rr.ID, Status: env.Status, Next: "The run is cancelled: the agent that resumes it is told so."})
}
