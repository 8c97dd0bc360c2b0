package console

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/capabilities-sh/capabilities/engine/hub"
)

// SignInTimeout bounds one sign-in started from the console: how long the
// hub waits for the person to come back from the authorization page (as
// `capabilities hub auth`'s --timeout default).
const SignInTimeout = 5 * time.Minute

// signInURLWait is how long POST /api/signin waits for the authorization
// URL (the server's metadata is fetched first) before it answers without
// it; the page then reads it from GET /api/signins.
const signInURLWait = 20 * time.Second

// keepEnded is how long an ended sign-in (signed in, or failed) stays in
// GET /api/signins, for the page to say how it ended.
const keepEnded = 15 * time.Minute

// Sign-in states in GET /api/signins.
const (
	SignInNeeded   = "needed"    // waits for a person; nothing started
	SignInWaiting  = "waiting"   // started: the authorization page is open
	SignInFailed   = "failed"    // the last sign-in started here failed
	SignInSignedIn = "signed_in" // the last sign-in started here worked
)

// SignIn is one connection of GET /api/signins: one that needs a person to
// sign in (OAuth), or one whose sign-in was started from the console.
type SignIn struct {
	Namespace  string `json:"namespace"`
	Connection string `json:"connection"`
	// Reason says why it needs a sign-in ("not signed in yet", or why its
	// tokens stopped working); empty once it no longer needs one.
	Reason string `json:"reason,omitempty"`
	State  string `json:"state"`
	// AuthURL is the authorization page to open while the state is
	// waiting (http or https only).
	AuthURL string `json:"authUrl,omitempty"`
	// Opened: the hub handed AuthURL to the system's browser itself (the
	// desktop app's window, whose web view opens no other window); else
	// the page opens it.
	Opened bool   `json:"opened,omitempty"`
	Error  string `json:"error,omitempty"`
	// Tools is how many tools the source lists once signed in, when it had
	// none before (they wait for review).
	Tools     *int      `json:"tools,omitempty"`
	StartedAt time.Time `json:"startedAt,omitzero"`
	EndedAt   time.Time `json:"endedAt,omitzero"`
}

// SignIns is GET /api/signins.
type SignIns struct {
	SignIns []SignIn `json:"signIns"`
	// ReadOnly: this page cannot start a sign-in (a page about one run).
	ReadOnly bool `json:"readOnly,omitempty"`
}

// signInRequest is POST /api/signin.
type signInRequest struct {
	Namespace  string `json:"namespace"`
	Connection string `json:"connection"`
	// ClientID of a client registered with the authorization server by
	// hand (`hub auth --client-id`), for a server that registers none.
	ClientID string `json:"clientId"`
}

// signIns runs the sign-ins started from one console: at most one per
// connection (a new one cancels the one before), each in the background
// and bounded by SignInTimeout.
type signIns struct {
	hub  *hub.Hub
	log  *slog.Logger
	open func(string) error // nil: the page opens the authorization URL
	run  string             // a page about one run starts none
	now  func() time.Time

	mu       sync.Mutex
	attempts map[string]*attempt // namespace/connection
}

type attempt struct {
	SignIn
	cancel context.CancelFunc
	ready  chan struct{} // closed once AuthURL is known or the attempt ended
	once   sync.Once
}

func (a *attempt) markReady() { a.once.Do(func() { close(a.ready) }) }

// signInRoutes adds GET /api/signins and POST /api/signin.
func (c *Handler) signInRoutes() {
	s := &signIns{hub: c.hub, log: c.log, open: c.opts.OpenURL, run: c.opts.Run, now: c.opts.Now, attempts: map[string]*attempt{}}
	c.mux.HandleFunc("GET /api/signins", func(w http.ResponseWriter, r *http.Request) {
		list, err := s.list(r.Context())
		if err != nil {
			c.internal(w, "listing the sign-ins", err)
			return
		}
		WriteJSON(w, http.StatusOK, SignIns{SignIns: list, ReadOnly: s.run != ""})
	})
	c.mux.HandleFunc("POST /api/signin", func(w http.ResponseWriter, r *http.Request) {
		if refuseOnRunPage(w, s.run, "sign in with `capabilities hub console`, the desktop app or `capabilities hub auth`") {
			return
		}
		var req signInRequest
		if !readJSON(w, r, &req) {
			return
		}
		if req.Connection == "" {
			req.Connection = hub.DefaultConnection
		}
		src, err := c.hub.Source(r.Context(), req.Namespace)
		if err != nil {
			Fail(w, http.StatusNotFound, "not_found", c.hub.Scrub(err.Error()))
			return
		}
		if src.URL == "" {
			Fail(w, http.StatusBadRequest, "bad_request", fmt.Sprintf("%s is not a remote MCP server: OAuth sign-in is for streamable-HTTP sources (store a credential with `capabilities hub auth %s`)", req.Namespace, req.Namespace))
			return
		}
		a := s.start(req)
		select {
		case <-a.ready:
		case <-r.Context().Done():
		case <-time.After(signInURLWait):
		}
		WriteJSON(w, http.StatusAccepted, s.snapshot(a))
	})
}

// start begins a sign-in in the background, cancelling one still running
// for the same connection.
func (s *signIns) start(req signInRequest) *attempt {
	key := req.Namespace + "/" + req.Connection
	ctx, cancel := context.WithTimeoutCause(context.Background(), SignInTimeout,
		fmt.Errorf("nobody signed in within %s", SignInTimeout))
	a := &attempt{
		SignIn: SignIn{Namespace: req.Namespace, Connection: req.Connection, State: SignInWaiting, StartedAt: s.now().UTC()},
		cancel: cancel,
		ready:  make(chan struct{}),
	}
	s.mu.Lock()
	if old := s.attempts[key]; old != nil && old.State == SignInWaiting {
		old.cancel()
	}
	s.attempts[key] = a
	s.mu.Unlock()
	s.log.Info("sign-in started from the console", "namespace", req.Namespace, "connection", req.Connection)
	go s.run1(ctx, a, req)
	return a
}

// run1 runs one sign-in to its end, then lists the source's tools when it
// had none (as `hub auth` does).
func (s *signIns) run1(ctx context.Context, a *attempt, req signInRequest) {
	defer a.cancel()
	defer a.markReady()
	_, err := s.hub.SignIn(ctx, hub.SignInRequest{
		Namespace:  req.Namespace,
		Connection: req.Connection,
		ClientID:   req.ClientID,
		Open:       func(u string) error { return s.opened(a, u) },
	})
	var tools *int
	if err == nil {
		if m, _ := s.hub.Manifest(context.Background(), req.Namespace); m == nil || len(m.Tools) == 0 {
			rctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			ch, rerr := s.hub.Refresh(rctx, req.Namespace)
			cancel()
			if rerr == nil && len(ch) == 1 && ch[0].Error == "" {
				n := ch[0].Tools
				tools = &n
			}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	a.EndedAt = s.now().UTC()
	a.AuthURL = ""
	if err != nil {
		a.State = SignInFailed
		if errors.Is(err, context.Canceled) && s.attempts[a.key()] != a {
			a.Error = "cancelled: a new sign-in was started"
		} else {
			a.Error = s.hub.Scrub(err.Error())
		}
		s.log.Warn("sign-in from the console failed", "namespace", a.Namespace, "connection", a.Connection, "err", a.Error)
		return
	}
	a.State, a.Tools = SignInSignedIn, tools
	s.log.Info("signed in from the console", "namespace", a.Namespace, "connection", a.Connection)
}

func (a *attempt) key() string { return a.Namespace + "/" + a.Connection }

// opened is the sign-in's Open hook: the authorization URL goes to the page
// (and to the system's browser when the console opens it itself).
func (s *signIns) opened(a *attempt, authURL string) error {
	u, err := url.Parse(authURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return fmt.Errorf("the authorization server's page %q is not an http(s) address: refused", authURL)
	}
	opened := false
	if s.open != nil {
		if err := s.open(authURL); err != nil {
			s.log.Warn("opening the authorization page in the browser", "namespace", a.Namespace, "err", err)
		} else {
			opened = true
		}
	}
	s.mu.Lock()
	a.AuthURL, a.Opened = authURL, opened
	s.mu.Unlock()
	a.markReady()
	return nil
}

// snapshot is an attempt as the API shows it.
func (s *signIns) snapshot(a *attempt) SignIn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return a.SignIn
}

// list is every connection needing a sign-in, with the sign-in started
// here for it, then the sign-ins started here that ended lately for
// connections that need none now.
func (s *signIns) list(ctx context.Context) ([]SignIn, error) {
	needs, err := s.hub.SignInNeeded(ctx)
	if err != nil {
		return nil, err
	}
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, a := range s.attempts {
		if a.State != SignInWaiting && now.Sub(a.EndedAt) > keepEnded {
			delete(s.attempts, k)
		}
	}
	out := []SignIn{}
	seen := map[string]bool{}
	for _, n := range needs {
		key := n.Namespace + "/" + n.Connection
		seen[key] = true
		si := SignIn{Namespace: n.Namespace, Connection: n.Connection, State: SignInNeeded}
		// A sign-in that worked and is needed again since is a new need.
		if a := s.attempts[key]; a != nil && a.State != SignInSignedIn {
			si = a.SignIn
		}
		si.Reason = s.hub.Scrub(n.Reason)
		out = append(out, si)
	}
	var ended []SignIn
	for key, a := range s.attempts {
		if !seen[key] {
			ended = append(ended, a.SignIn)
		}
	}
	slices.SortFunc(ended, func(x, y SignIn) int {
		return strings.Compare(x.Namespace+"/"+x.Connection, y.Namespace+"/"+y.Connection)
	})
	return append(out, ended...), nil
}
