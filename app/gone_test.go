package app

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/store"
	"github.com/google/go-cmp/cmp"
)

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestHubGoneIsTold: the hub's folder removed while the app runs, its run
// record first (rm -rf removes runs/ before hub.json as often as after),
// the app says so in one notification that names the folder and the call
// that was waiting (not withdrawn in silence), offers "Set up a new hub
// here" and "Quit", and answers agents with the error; it recreates
// nothing by itself. "Set up a new hub here" sets one up and quits with
// ErrRestart.
func TestHubGoneIsTold(t *testing.T) {
	dir, st, h := memoryHub(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	now := time.Now().UTC()
	r := model.Run{ID: "r" + store.NewID()[:20], Status: model.RunAwaitingApproval, Code: "return 1", CreatedAt: now, UpdatedAt: now,
		Pending: []model.Pending{{ID: "c1", Kind: model.PendingApproval, Seq: 1, Address: "memory.createEntities", Message: "it asks"}}}
	if err := st.Put(ctx, store.Runs, r.ID, r); err != nil {
		t.Fatal(err)
	}
	f := &fakeNotifications{}
	withdrawn := 0
	var stderr strings.Builder
	a := &App{
		log:     slog.New(slog.DiscardHandler),
		st:      st,
		hub:     h,
		dir:     dir,
		hubID:   st.Hub().ID,
		stderr:  &stderr,
		notes:   &notifier{obj: f, actions: true},
		win:     noWindows{&withdrawn},
		pending: map[string]*call{},
		byNote:  map[uint32]string{},
		events:  make(chan func(), 64),
		quit:    make(chan struct{}),
	}
	released := make(chan struct{})
	a.release = func() { close(released) }
	done := make(chan error, 1)
	go func() { done <- a.loop(ctx) }()
	calls := func() []string {
		f.mu.Lock()
		defer f.mu.Unlock()
		return slices.Clone(f.calls)
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("still waiting for %s; the notification server was called %q", what, calls())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitFor("the call's notification", func() bool { return slices.Contains(calls(), "Notify 1") })
	if a.unavailable() != nil {
		t.Fatal("unavailable with the hub there")
	}
	must(t, os.Remove(st.Path(store.Runs, r.ID)))
	waitFor("the call's notification withdrawn as its run went", func() bool { return slices.Contains(calls(), "Close 1") })
	// Again when it fails, as a person would: the store refills runs/ with
	// empty spare files in the background after a write.
	waitFor("the hub's folder to be deleted", func() bool { return os.RemoveAll(dir) == nil })
	waitFor("the notification of the hub gone", func() bool { return slices.Contains(calls(), "Notify 2") })
	<-released
	f.mu.Lock()
	got := f.sent[2]
	f.mu.Unlock()
	if got.summary != "The hub folder was deleted" || !strings.Contains(got.body, dir+" was deleted or moved away") ||
		!strings.Contains(got.body, "1 call waiting for your approval went with it: memory.createEntities (run "+r.ID+", call c1)") {
		t.Errorf("the notification of the hub gone: %q\n%s\nwant it to name the folder and the call that waited", got.summary, got.body)
	}
	if diff := cmp.Diff([]string{actionSetUp, "Set up a new hub here", actionQuit, "Quit"}, got.actions); diff != "" {
		t.Errorf("its actions (-want +got):\n%s", diff)
	}
	if err := a.unavailable(); err == nil || !strings.Contains(err.Error(), "the hub at "+dir+" was deleted or moved away while the desktop app served it") {
		t.Errorf("an agent's call is answered with %v; want the hub gone, named", err)
	}
	if !strings.Contains(stderr.String(), "The hub folder was deleted: "+dir) {
		t.Errorf("stderr does not say it:\n%s", stderr.String())
	}
	// A console screen picked in the tray raises the notice again (the
	// same notification) instead of a console over no hub.
	a.events <- a.unlessGone(func() { t.Error("a console screen opened over a deleted hub") })
	waitFor("the notice raised again", func() bool { return len(calls()) == 4 })
	if c := calls(); c[3] != "Notify 2" {
		t.Errorf("the notification server was called %q; want the notice replaced in place", c)
	}
	time.Sleep(3*liveCheck/2 + 100*time.Millisecond) // a periodic check passes
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the hub's folder is back (%v) before the person asked for it", err)
	}
	a.events <- func() { a.act(2, actionSetUp) }
	select {
	case err := <-done:
		if !errors.Is(err, ErrRestart) {
			t.Fatalf("Set up a new hub here: the loop returned %v, want ErrRestart", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Set up a new hub here did not end the loop")
	}
	if _, err := os.Stat(filepath.Join(dir, "hub.json")); err != nil {
		t.Errorf("no new hub: %v", err)
	}
}

// TestHubGoneTexts: what the person and the agents are told of a hub
// deleted and of one replaced by another hub (the way back differs: a new
// hub, or the one there now), with the calls lost listed up to five.
func TestHubGoneTexts(t *testing.T) {
	at := time.Date(2026, 12, 2, 10, 2, 3, 0, time.UTC)
	deleted := &hubGone{dir: "/h/hub", what: store.HubDeleted, at: at, lost: []string{"a.w (run r1, call c1)", "a.w (run r2, call c1)", "a.w (run r3, call c1)", "a.w (run r4, call c1)", "a.w (run r5, call c1)", "a.w (run r6, call c1)"}}
	replaced := &hubGone{dir: "/h/hub", what: store.HubReplaced, at: at}
	tests := []struct {
		g                           *hubGone
		summary, wayBack, body, err string
	}{
		{deleted, "The hub folder was deleted", "Set up a new hub here",
			"6 calls waiting for your approval went with it: a.w (run r1, call c1); a.w (run r2, call c1); a.w (run r3, call c1); a.w (run r4, call c1); a.w (run r5, call c1); and 1 more.\nSet up a new hub there (the app starts again on it), or Quit.",
			"the hub at /h/hub was deleted or moved away while the desktop app served it (at 10:02:03 UTC): nothing runs until there is a hub again"},
		{replaced, "The hub folder was replaced", "Start again on the new hub",
			"/h/hub was replaced by another hub while the app ran (" + at.Local().Format("15:04:05") + "): the app's hub, its runs among them, is gone; agents' calls fail until the app starts again on the hub there now.\nStart again on the new hub, or Quit.",
			"the hub at /h/hub was replaced by another hub while the desktop app served it (at 10:02:03 UTC): nothing runs until the app starts again on the hub there now"},
	}
	for _, tt := range tests {
		if got := tt.g.summary(); got != tt.summary {
			t.Errorf("summary %q, want %q", got, tt.summary)
		}
		if got := tt.g.wayBack(); got != tt.wayBack {
			t.Errorf("way back %q, want %q", got, tt.wayBack)
		}
		if got := tt.g.body(true); !strings.HasSuffix(got, tt.body) {
			t.Errorf("body:\n%s\nwant it to end with:\n%s", got, tt.body)
		}
		if got := tt.g.Error(); !strings.HasPrefix(got, tt.err) {
			t.Errorf("error:\n%s\nwant it to start with:\n%s", got, tt.err)
		}
	}
}

// TestGoneAPI: once the hub is gone, a console page already open is
// answered 410 hub_gone with what happened on every API request but its
// session (the page then stops and shows it), instead of the store's "open
// …/runs: no such file or directory"; before, everything goes through.
func TestGoneAPI(t *testing.T) {
	msg := ""
	h := goneAPI(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "console") }), func() string { return msg })
	get := func(path string) (int, string) {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", path, nil))
		return w.Code, w.Body.String()
	}
	if code, body := get("/api/approvals"); code != 200 || body != "console" {
		t.Errorf("with the hub there: %d %q", code, body)
	}
	msg = "The hub folder was deleted. /h/hub was deleted"
	for _, p := range []string{"/api/approvals", "/api/runs/r1", "/api/sources"} {
		if code, body := get(p); code != http.StatusGone || body != `{"error":{"code":"hub_gone","message":"The hub folder was deleted. /h/hub was deleted"}}`+"\n" {
			t.Errorf("%s with the hub gone: %d %s", p, code, body)
		}
	}
	for _, p := range []string{"/api/session", "/app.js"} {
		if code, body := get(p); code != 200 || body != "console" {
			t.Errorf("%s with the hub gone: %d %q, want it served", p, code, body)
		}
	}
}

// TestHubGoneWayBack: the way back offered is where the app offers it: the
// notification's actions, else the tray, else quitting and `hub init`.
func TestHubGoneWayBack(t *testing.T) {
	tests := []struct {
		what          string
		actions, tray bool
		want          string
	}{
		{store.HubDeleted, true, true, "Set up a new hub there (the app starts again on it), or Quit."},
		{store.HubDeleted, false, true, "Set up a new hub there from the tray (the app starts again on it), or quit the app, run `capabilities hub init` and start it again."},
		{store.HubDeleted, false, false, "Quit the app (Ctrl-C or SIGTERM), run `capabilities hub init` and start it again."},
		{store.HubReplaced, false, true, "Start again on the new hub from the tray, or quit the app and start it again."},
		{store.HubReplaced, false, false, "Quit the app (Ctrl-C or SIGTERM) and start it again."},
	}
	for _, tt := range tests {
		g := &hubGone{dir: "/h/hub", what: tt.what, tray: tt.tray}
		if got := g.body(tt.actions); !strings.HasSuffix(got, "\n"+tt.want) {
			t.Errorf("%s, actions %v, tray %v:\n%s\nwant it to end with:\n%s", tt.what, tt.actions, tt.tray, got, tt.want)
		}
	}
}

// closed is a window's stdin: it counts its closes.
type closed struct{ n *int }

func (closed) Write(b []byte) (int, error) { return len(b), nil }
func (c closed) Close() error              { *c.n++; return nil }

// TestHubGoneClosesTheWindow: the app's window, on any screen (not only
// the approvals, which Withdraw takes away), is closed once the hub is
// gone (its process opened the hub itself and every screen would fail), but
// not where there is no tray (it is the one way to the app).
func TestHubGoneClosesTheWindow(t *testing.T) {
	for _, noTray := range []bool{false, true} {
		n := 0
		w := &windowProcess{log: slog.New(slog.DiscardHandler), cmd: &exec.Cmd{}, in: closed{&n}, screen: "runs", noTray: noTray}
		w.hubGone()
		if want := map[bool]int{false: 1, true: 0}[noTray]; n != want {
			t.Errorf("no tray %v: the window's stdin closed %d times, want %d", noTray, n, want)
		}
	}
}
