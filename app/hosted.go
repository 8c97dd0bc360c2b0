package app

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"sort"
	"sync"
	"time"

	"github.com/capabilities-sh/capabilities/app/screen"
	"github.com/capabilities-sh/capabilities/engine/console"
	"github.com/capabilities-sh/capabilities/engine/inbox"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/oauth"
	"github.com/capabilities-sh/capabilities/engine/run"
	"github.com/capabilities-sh/capabilities/engine/secret"
)

// The hosted hubs the person signed in to with `capabilities hub login
// <url>`: the app follows each one's inbox (GET /api/inbox/events, engine/
// inbox) and raises the same notification for a hosted call as for a local
// one, its arguments and reason shown the same way, the hub named. "Allow
// once" and "Deny" post the decision to the hub (POST /api/inbox/decide:
// recorded there with the channel desktop and the person's account);
// "Open" opens the hosted hub's dashboard at that call in the browser. A
// stream that ends is opened again after a pause that doubles up to a
// minute; a sign-in the hub refuses is told once ("signed out of <url>:
// run capabilities hub login <url>") and tried again at the longest pause,
// so that a new `hub login` is picked up.

// errSignedOut: the hosted hub refuses the sign-in (401), or there is none
// any more.
var errSignedOut = errors.New("signed out")

// hostedClient reaches one hosted hub: an HTTP client that signs its
// requests in (hostedlogin's, read again at each connection so that a new
// sign-in is used), or errSignedOut.
type hostedClient func(ctx context.Context) (*http.Client, error)

// remotes is the app's state of the hosted hubs, owned by the loop
// goroutine (its maps); the followers post to a.events.
type remotes struct {
	open     func(link string) error // the browser
	minPause time.Duration           // first pause before connecting again
	maxPause time.Duration           // longest pause
	idle     time.Duration           // a stream silent this long (no heartbeat) is dropped
	done     <-chan struct{}         // the app is ending: nothing more is posted to its loop
	secrets  secret.Store            // where hub login keeps the tokens (nil: the hub's)

	mu      sync.Mutex                    // guards follows and clients
	follows map[string]context.CancelFunc // hub URL → its follower
	clients map[string]hostedClient       // hub URL → how to reach it

	calls  map[string]*hostedCall // hub URL + " " + run/call → the call
	byNote map[uint32]string      // notification id → calls' key
}

// hostedCall is one call of a hosted hub waiting for the person.
type hostedCall struct {
	hub  string // the hosted hub's URL
	call call   // as a local call is shown
}

func (h *hostedCall) key() string { return h.hub + " " + h.call.key() }

func newRemotes(open func(string) error) *remotes {
	return &remotes{
		open: open, minPause: time.Second, maxPause: time.Minute, idle: 3 * inbox.DefaultHeartbeat,
		follows: map[string]context.CancelFunc{}, clients: map[string]hostedClient{}, calls: map[string]*hostedCall{}, byNote: map[uint32]string{},
	}
}

// follow starts following the hosted hub at base, unless it is followed
// already; it ends with ctx or unfollow.
func (a *App) follow(ctx context.Context, base string, client hostedClient) {
	r := a.remote
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.follows[base]; ok {
		return
	}
	ctx, cancel := context.WithCancel(ctx)
	r.follows[base] = cancel
	r.clients[base] = client
	go a.followLoop(ctx, base, client)
}

// unfollow stops following base (signed out with `hub logout`) and
// withdraws its calls.
func (a *App) unfollow(base string) {
	r := a.remote
	r.mu.Lock()
	cancel, ok := r.follows[base]
	delete(r.follows, base)
	delete(r.clients, base)
	r.mu.Unlock()
	if ok {
		cancel()
	}
	a.post(func() { a.hostedReplace(base, nil) })
}

// followed is the hosted hubs followed.
func (a *App) followed() []string {
	r := a.remote
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for u := range r.follows {
		out = append(out, u)
	}
	sort.Strings(out)
	return out
}

// post hands f to the loop, unless the app is ending.
func (a *App) post(f func()) {
	select {
	case a.events <- f:
	case <-a.quit:
	case <-a.remote.done:
	}
}

// followLoop connects to base's event stream again and again until ctx
// ends.
func (a *App) followLoop(ctx context.Context, base string, client hostedClient) {
	r := a.remote
	pause := r.minPause
	told := false // "signed out" said since the last good connection
	for ctx.Err() == nil {
		connected, err := a.stream(ctx, base, client)
		switch {
		case ctx.Err() != nil:
			return
		case errors.Is(err, errSignedOut):
			if !told {
				told = true
				a.say(fmt.Sprintf("signed out of %s: run capabilities hub login %s", base, base))
			}
			// Its calls cannot be decided from here any more.
			a.post(func() { a.hostedReplace(base, nil) })
			pause = r.maxPause
		case connected:
			told = false
			pause = r.minPause
			a.log.Info("the hosted hub's inbox stream ended; connecting again", "hub", base, "err", err)
		default:
			a.log.Warn("following a hosted hub's inbox", "hub", base, "err", err, "again in", pause)
		}
		// Jitter: many apps of one hub do not come back at once.
		wait := pause/2 + rand.N(pause/2+1)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		if !connected {
			pause = min(pause*2, r.maxPause)
		}
	}
}

// say tells the person something they must act on (stderr, and the log).
func (a *App) say(msg string) {
	a.log.Warn(msg)
	if a.stderr != nil {
		fmt.Fprintln(a.stderr, "capabilities-desktop: "+msg)
	}
}

// stream reads base's inbox events until the stream ends; connected says
// whether it got as far as the first event.
func (a *App) stream(ctx context.Context, base string, client hostedClient) (connected bool, err error) {
	c, err := client(ctx)
	if err != nil {
		return false, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/inbox/events", nil)
	if err != nil {
		return false, fmt.Errorf("following %s: %w", base, err)
	}
	req.Header.Set("Accept", "text/event-stream")
	res, err := c.Do(req)
	if err != nil {
		if signedOut(err) {
			return false, errSignedOut
		}
		return false, fmt.Errorf("following %s: %w", base, err)
	}
	defer res.Body.Close()
	switch {
	case res.StatusCode == http.StatusUnauthorized || res.StatusCode == http.StatusForbidden:
		return false, errSignedOut
	case res.StatusCode != http.StatusOK:
		b, _ := io.ReadAll(io.LimitReader(res.Body, 512))
		return false, fmt.Errorf("following %s: %s: %s", base, res.Status, bytes.TrimSpace(b))
	}
	// A stream that goes silent (a proxy that dropped it without closing)
	// is given up after idle: the hub sends a heartbeat more often.
	alive := time.AfterFunc(a.remote.idle, cancel)
	defer alive.Stop()
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	var name string
	var data []byte
	for sc.Scan() {
		alive.Reset(a.remote.idle)
		line := sc.Bytes()
		switch {
		case len(line) == 0:
			if name != "" {
				if err := a.hostedEvent(base, name, data); err != nil {
					return connected, err
				}
				connected = true
			}
			name, data = "", nil
		case line[0] == ':':
		case bytes.HasPrefix(line, []byte("event:")):
			name = string(bytes.TrimSpace(line[len("event:"):]))
		case bytes.HasPrefix(line, []byte("data:")):
			data = append(data, bytes.TrimPrefix(line[len("data:"):], []byte(" "))...)
		}
	}
	if err := sc.Err(); err != nil && ctx.Err() == nil {
		return connected, fmt.Errorf("following %s: %w", base, err)
	}
	return connected, nil
}

// signedOut reports whether a request failed because the sign-in is gone
// or refused (a refresh the hub refused: oauth.SignInError).
func signedOut(err error) bool {
	var se *oauth.SignInError
	return errors.As(err, &se) || errors.Is(err, errSignedOut)
}

// hostedEvent hands one event of base's stream to the loop.
func (a *App) hostedEvent(base, name string, data []byte) error {
	switch name {
	case "inbox":
		var in console.Approvals
		if err := json.Unmarshal(data, &in); err != nil {
			return fmt.Errorf("reading %s's inbox: %w", base, err)
		}
		a.post(func() { a.hostedReplace(base, in.Approvals) })
	case "added":
		var ap console.Approval
		if err := json.Unmarshal(data, &ap); err != nil {
			return fmt.Errorf("reading %s's inbox: %w", base, err)
		}
		a.post(func() { a.hostedAdd(base, []console.Approval{ap}) })
	case "settled":
		var s inbox.Settled
		if err := json.Unmarshal(data, &s); err != nil {
			return fmt.Errorf("reading %s's inbox: %w", base, err)
		}
		a.post(func() { a.hostedSettle(base, s.Run, s.Call) })
	}
	return nil
}

// hostedReplace makes base's calls those listed (nil: none): the others
// are withdrawn, the new ones raised.
func (a *App) hostedReplace(base string, list []console.Approval) {
	keep := map[string]bool{}
	for _, ap := range list {
		keep[base+" "+ap.Run+"/"+ap.ID] = true
	}
	for k, h := range a.remote.calls {
		if h.hub == base && !keep[k] {
			a.hostedForget(h)
		}
	}
	a.hostedAdd(base, list)
}

// hostedAdd raises the calls not shown yet.
func (a *App) hostedAdd(base string, list []console.Approval) {
	var fresh []*hostedCall
	for _, ap := range list {
		h := &hostedCall{hub: base, call: call{
			run: ap.Run, id: ap.ID, address: ap.Address, connection: ap.Connection,
			summary: ap.Summary, message: ap.Message + "\non the hosted hub " + hostName(base),
			expires: ap.ExpiresAt, created: time.Now(),
		}}
		if h.call.connection == "default" {
			h.call.connection = ""
		}
		if len(ap.Args) > 0 {
			h.call.args = string(run.PreviewArgs(ap.Args, noteArgsBytes))
		}
		if a.remote.calls[h.key()] != nil {
			continue
		}
		a.remote.calls[h.key()] = h
		fresh = append(fresh, h)
	}
	if len(fresh) == 0 {
		return
	}
	s, err := a.hub.Settings()
	if err != nil {
		a.log.Warn("reading the settings", "err", err)
	}
	if a.notes == nil || s.RaiseApprovals {
		// The approval window of a hosted call is the hub's dashboard.
		a.openHosted(fresh[0])
	}
	a.hostedFill()
}

// hostedSettle withdraws a call decided (anywhere), expired or gone.
func (a *App) hostedSettle(base, runID, callID string) {
	if h := a.remote.calls[base+" "+runID+"/"+callID]; h != nil {
		a.hostedForget(h)
		a.hostedFill()
	}
}

// hostedForget forgets a call and closes its notification.
func (a *App) hostedForget(h *hostedCall) {
	delete(a.remote.calls, h.key())
	if h.call.note != 0 {
		delete(a.remote.byNote, h.call.note)
		if a.notes != nil {
			a.notes.close(h.call.note)
		}
		a.log.Info("withdrew the notification of a hosted call", "hub", h.hub, "run", h.call.run, "call", h.call.id, "notification", h.call.note)
	}
}

// hostedFill raises the hosted calls' notifications, oldest first, up to
// maxNotes shown at once (a budget of their own beside the local calls'):
// the others are raised as places free up, and the dashboard lists them
// all.
func (a *App) hostedFill() {
	if a.notes == nil {
		return
	}
	shown := len(a.remote.byNote)
	list := make([]*hostedCall, 0, len(a.remote.calls))
	for _, h := range a.remote.calls {
		list = append(list, h)
	}
	sort.Slice(list, func(i, j int) bool {
		if !list[i].call.created.Equal(list[j].call.created) {
			return list[i].call.created.Before(list[j].call.created)
		}
		return list[i].key() < list[j].key()
	})
	for _, h := range list {
		if shown >= maxNotes {
			return
		}
		if h.call.raised {
			continue
		}
		h.call.raised = true
		id, err := a.notes.notify(&h.call)
		if err != nil {
			a.log.Warn("raising the notification of a hosted call", "hub", h.hub, "run", h.call.run, "call", h.call.id, "err", err)
			continue
		}
		shown++
		h.call.note, h.call.notified = id, time.Now()
		a.remote.byNote[id] = h.key()
		a.log.Info("notified", "hub", h.hub, "run", h.call.run, "call", h.call.id, "address", h.call.address, "notification", id)
	}
}

// actHosted handles an action picked in a hosted call's notification;
// false when note is not one.
func (a *App) actHosted(note uint32, action string) bool {
	if a.remote == nil {
		return false
	}
	k, ok := a.remote.byNote[note]
	if !ok {
		return false
	}
	h := a.remote.calls[k]
	switch action {
	case actionOnce, actionDeny:
		base, runID, callID := h.hub, h.call.run, h.call.id
		client := a.remote.client(base)
		a.records.Go(func() {
			if err := decideHosted(a.ctx, client, base, runID, callID, model.Choice(action)); err != nil {
				if errors.Is(err, errSignedOut) {
					a.say(fmt.Sprintf("signed out of %s: run capabilities hub login %s", base, base))
				}
				a.log.Warn("recording the decision from a notification", "hub", base, "run", runID, "call", callID, "err", err)
				return
			}
			a.log.Info("recorded the decision from a notification", "hub", base, "run", runID, "call", callID, "choice", action)
		})
	case actionDefault:
		a.openHosted(h)
	}
	return true
}

// closedHosted forgets a hosted call's notification the server closed;
// the call stays pending, and another gets its place.
func (a *App) closedHosted(note uint32) {
	if a.remote == nil {
		return
	}
	if k, ok := a.remote.byNote[note]; ok {
		delete(a.remote.byNote, note)
		if h := a.remote.calls[k]; h != nil {
			h.call.note = 0
		}
		a.hostedFill()
	}
}

// withdrawHosted closes every hosted call's notification as the app quits.
func (a *App) withdrawHosted() {
	if a.remote == nil {
		return
	}
	for _, h := range a.remote.calls {
		a.hostedForget(h)
	}
}

// openHosted opens the hosted hub's dashboard at h's call in the browser.
func (a *App) openHosted(h *hostedCall) {
	link := h.hub + "/#" + screen.Call(h.call.run, h.call.id)
	if a.remote.open == nil {
		return
	}
	if err := a.remote.open(link); err != nil {
		a.log.Warn("opening the hosted hub's dashboard", "hub", h.hub, "err", err)
	}
}

// client is how to reach base, as its follower does.
func (r *remotes) client(base string) hostedClient {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c, ok := r.clients[base]; ok {
		return c
	}
	return func(context.Context) (*http.Client, error) { return nil, errSignedOut }
}

// decideHosted posts a decision to the hosted hub's inbox.
func decideHosted(ctx context.Context, client hostedClient, base, runID, callID string, choice model.Choice) error {
	c, err := client(ctx)
	if err != nil {
		return err
	}
	body, err := json.Marshal(inbox.Decide{Run: runID, Call: callID, Decision: string(choice)})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/inbox/decide", bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("deciding on %s: %w", base, err)
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := c.Do(req)
	if err != nil {
		if signedOut(err) {
			return errSignedOut
		}
		return fmt.Errorf("deciding on %s: %w", base, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(res.Body, 4<<10))
	switch {
	case res.StatusCode == http.StatusUnauthorized || res.StatusCode == http.StatusForbidden:
		return errSignedOut
	case res.StatusCode != http.StatusOK:
		var e inbox.Error
		if json.Unmarshal(b, &e) == nil && e.Error.Message != "" {
			return fmt.Errorf("deciding on %s: %s", base, e.Error.Message)
		}
		return fmt.Errorf("deciding on %s: %s", base, res.Status)
	}
	return nil
}

// hostName is base's host, as a notification names the hub.
func hostName(base string) string {
	if u, err := url.Parse(base); err == nil && u.Host != "" {
		return u.Host
	}
	return base
}
