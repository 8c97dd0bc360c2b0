package app

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/approval"
	"github.com/capabilities-sh/capabilities/engine/hostedlogin"
	"github.com/capabilities-sh/capabilities/engine/inbox"
	"github.com/capabilities-sh/capabilities/engine/inbox/inboxtest"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/google/go-cmp/cmp"
)

// bearer sends a fixed token, and counts the requests.
type bearer struct {
	token string
	n     atomic.Int32
}

func (b *bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	b.n.Add(1)
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

func (b *bearer) client() hostedClient {
	return func(context.Context) (*http.Client, error) { return &http.Client{Transport: b}, nil }
}

// hostedApp is an app with fake notifications whose loop only runs its
// events, following hosted hubs.
type hostedApp struct {
	*App
	f      *fakeNotifications
	stderr *testenv.Buffer
	mu     sync.Mutex
	opened []string
}

func newHostedApp(t *testing.T, ctx context.Context) *hostedApp {
	t.Helper()
	_, _, h := memoryHub(t)
	ha := &hostedApp{f: &fakeNotifications{}, stderr: &testenv.Buffer{}}
	withdrawn := 0
	ha.App = &App{
		log:     slog.New(slog.DiscardHandler),
		hub:     h,
		ctx:     ctx,
		notes:   &notifier{obj: ha.f, actions: true},
		win:     noWindows{&withdrawn},
		pending: map[string]*call{},
		byNote:  map[uint32]string{},
		events:  make(chan func(), 64),
		quit:    make(chan struct{}),
		stderr:  ha.stderr,
	}
	ha.remote = newRemotes(func(link string) error {
		ha.mu.Lock()
		defer ha.mu.Unlock()
		ha.opened = append(ha.opened, link)
		return nil
	})
	ha.remote.done = ctx.Done()
	ha.remote.minPause, ha.remote.maxPause = 10*time.Millisecond, 40*time.Millisecond
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case f := <-ha.events:
				f()
			case <-ctx.Done():
				return
			}
		}
	}()
	t.Cleanup(func() {
		<-done
		ha.records.Wait()
	})
	return ha
}

// in runs f in the app's loop and waits for it.
func (ha *hostedApp) in(f func()) {
	ch := make(chan struct{})
	ha.events <- func() { f(); close(ch) }
	<-ch
}

// waitFor polls cond, in the loop, within a generous time.
func (ha *hostedApp) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testenv.Timeout(60 * time.Second))
	for {
		var ok bool
		ha.in(func() { ok = cond() })
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within the test's timeout; notifications: %q; stderr: %s", what, ha.calls(), ha.stderr)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (ha *hostedApp) calls() []string {
	ha.f.mu.Lock()
	defer ha.f.mu.Unlock()
	return append([]string(nil), ha.f.calls...)
}

// note is the notification raised for a hosted call, 0 if none.
func (ha *hostedApp) note(base, runID, callID string) uint32 {
	if h := ha.remote.calls[base+" "+runID+"/"+callID]; h != nil {
		return h.call.note
	}
	return 0
}

// TestHostedCallIsNotified: with the app following a hosted hub's inbox
// (engine/inbox over a real hub), a write that asks there raises the same
// notification as a local call (its address, arguments, reason, and the
// hub named); its "Open" opens the hub's dashboard at the call; its "Allow
// once" posts the decision, which the hub records via desktop by the
// person's account and goes on with: the upstream acts exactly once, and
// the notification is withdrawn when the hub says the call is settled. A
// stream the network drops is followed again: a call that asks after is
// raised too.
func TestHostedCallIsNotified(t *testing.T) {
	s := inboxtest.New(t, inbox.Options{Heartbeat: 50 * time.Millisecond}, "tnA")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ha := newHostedApp(t, ctx)
	tok := &bearer{token: inboxtest.Token("tnA")}
	ha.follow(ctx, s.URL, tok.client())
	a := s.Tenants["tnA"]
	runID, callID := a.Pending(t, `return await up.record({item: "from the hosted hub"})`)
	asked := time.Now()

	var note uint32
	ha.waitFor(t, "the hosted call's notification", func() bool {
		note = ha.note(s.URL, runID, callID)
		return note != 0
	})
	// Polled every 10 ms: an upper bound, logged, never asserted.
	t.Logf("measured: hosted call paused → notification raised within %v", time.Since(asked).Round(time.Millisecond))
	ha.f.mu.Lock()
	sent := ha.f.sent[note]
	ha.f.mu.Unlock()
	if sent.summary != "Approve up.record?" {
		t.Errorf("the notification's summary: %q", sent.summary)
	}
	for _, want := range []string{`"item":"from the hosted hub"`, "on the hosted hub " + strings.TrimPrefix(s.URL, "http://"), "run " + runID + ", call " + callID} {
		if !strings.Contains(sent.body, want) {
			t.Errorf("the notification's body lacks %q:\n%s", want, sent.body)
		}
	}
	if strings.Join(sent.actions, ",") != "default,Open,once,Allow once,deny,Deny" {
		t.Errorf("the notification's actions: %q", sent.actions)
	}

	ha.in(func() { ha.act(note, actionDefault) })
	ha.mu.Lock()
	opened := append([]string(nil), ha.opened...)
	ha.mu.Unlock()
	if want := s.URL + "/#approvals/" + runID + "/" + callID; len(opened) != 1 || opened[0] != want {
		t.Errorf("Open opened %q, want the dashboard at the call %q", opened, want)
	}

	ha.in(func() { ha.act(note, actionOnce) })
	ha.waitFor(t, "the notification withdrawn once the call is settled", func() bool {
		return ha.note(s.URL, runID, callID) == 0 && len(ha.remote.byNote) == 0
	})
	ha.records.Wait()
	r := a.Run(t, runID)
	if r.Status != model.RunCompleted {
		t.Errorf("the hosted run is %s after Allow once, want completed (%+v)", r.Status, r.Error)
	}
	if d := r.PendingItem(callID).Decision; d == nil || d.Channel != approval.ChannelDesktop || d.By != "tnA" || d.Choice != model.ChoiceOnce {
		t.Errorf("the decision recorded on the hosted hub: %+v; want once via desktop by tnA", d)
	}
	if n := a.UpstreamCalls(t); n != 1 {
		t.Errorf("the upstream acted %d times, want exactly once", n)
	}
	closed := false
	for _, c := range ha.calls() {
		closed = closed || c == fmt.Sprintf("Close %d", note)
	}
	if !closed {
		t.Errorf("the notification %d was not closed: %q", note, ha.calls())
	}

	// The network drops the stream: the app follows again.
	s.DropStreams()
	run2, call2 := a.Pending(t, `return await up.record({item: "after the drop"})`)
	ha.waitFor(t, "a call raised after the stream was dropped", func() bool {
		return ha.note(s.URL, run2, call2) != 0
	})
	if ha.stderr.String() != "" {
		t.Errorf("the app told the person: %s", ha.stderr)
	}
}

// TestHostedSignedOut: a hosted hub that refuses the sign-in (401) is told
// once, "signed out of <url>: run capabilities hub login <url>", however
// often the app tries again; its calls are not raised.
func TestHostedSignedOut(t *testing.T) {
	s := inboxtest.New(t, inbox.Options{}, "tnA")
	s.Tenants["tnA"].Pending(t, `return await up.record({item: "x"})`)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ha := newHostedApp(t, ctx)
	tok := &bearer{token: inboxtest.Token("tnA")}
	s.Revoke(tok.token)
	ha.follow(ctx, s.URL, tok.client())
	ha.waitFor(t, "three tries", func() bool { return tok.n.Load() >= 3 })
	want := "capabilities-desktop: signed out of " + s.URL + ": run capabilities hub login " + s.URL + "\n"
	if got := ha.stderr.String(); got != want {
		t.Errorf("after %d tries the app said %q, want once %q", tok.n.Load(), got, want)
	}
	ha.in(func() {
		if len(ha.remote.calls) != 0 || len(ha.calls()) != 0 {
			t.Errorf("a signed-out hub's calls were raised: %v %q", ha.remote.calls, ha.calls())
		}
	})
	// Unfollowed (`hub logout`): no more tries.
	ha.unfollow(s.URL)
	time.Sleep(100 * time.Millisecond) // let a try in flight end
	n := tok.n.Load()
	time.Sleep(200 * time.Millisecond) // over 4 of the longest pauses: no try is made
	if m := tok.n.Load(); m != n {
		t.Errorf("after unfollowing, the app tried %d more times", m-n)
	}
}

// TestHostedLoginList: the app follows the hosted hubs of `hub login`'s
// list in the hub's folder (hostedlogin): one whose tokens are gone from
// the secret store is told once as signed out; taken off the list (`hub
// logout`), it is no longer tried.
func TestHostedLoginList(t *testing.T) {
	s := inboxtest.New(t, inbox.Options{}, "tnA")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ha := newHostedApp(t, ctx)
	ha.dir = t.TempDir()
	t.Setenv("NO_KEYRING", "1")
	ha.remote.secrets = loginSecrets(ha.dir, ha.log) // as hub login keeps them: the file in the hub's folder
	defer func(d time.Duration) { relist = d }(relist)
	relist = 20 * time.Millisecond
	list := filepath.Join(ha.dir, hostedlogin.ListFile)
	if err := os.WriteFile(list, []byte(`{"logins":[{"url":"`+s.URL+`","clientId":"c1","at":"2026-12-05T09:00:00Z"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	ha.listHosted(ctx)
	want := "capabilities-desktop: signed out of " + s.URL + ": run capabilities hub login " + s.URL + "\n"
	deadline := time.Now().Add(testenv.Timeout(30 * time.Second))
	for ha.stderr.String() == "" && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // more tries, over ten relists: still said once
	if got := ha.stderr.String(); got != want {
		t.Errorf("the app said %q, want once %q", got, want)
	}
	if diff := cmp.Diff([]string{s.URL}, ha.followed()); diff != "" {
		t.Errorf("followed (-want +got):\n%s", diff)
	}
	if err := os.WriteFile(list, []byte(`{"logins":[]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for len(ha.followed()) != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := ha.followed(); len(got) != 0 {
		t.Errorf("after hub logout the app still follows %q", got)
	}
}
