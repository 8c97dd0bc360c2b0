package app

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/harness/watch"
	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/secret"
	"github.com/capabilities-sh/capabilities/store"

	"github.com/godbus/dbus/v5"
	"github.com/google/go-cmp/cmp"
)

// fakeNotifications stands for the notification server: it records the
// methods called and answers Notify with the next id.
type fakeNotifications struct {
	dbus.BusObject
	mu    sync.Mutex
	calls []string
	next  uint32
	sent  map[uint32]sentNote // what each notification said last
}

// sentNote is what a notification said.
type sentNote struct {
	summary, body string
	actions       []string
}

func (f *fakeNotifications) Call(method string, _ dbus.Flags, args ...any) *dbus.Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch method {
	case notifyName + ".Notify":
		id, _ := args[1].(uint32)
		if id == 0 {
			f.next++
			id = f.next
		}
		f.calls = append(f.calls, fmt.Sprintf("Notify %d", id))
		if f.sent == nil {
			f.sent = map[uint32]sentNote{}
		}
		summary, _ := args[3].(string)
		body, _ := args[4].(string)
		actions, _ := args[5].([]string)
		f.sent[id] = sentNote{summary, body, actions}
		return &dbus.Call{Body: []any{id}}
	case notifyName + ".CloseNotification":
		f.calls = append(f.calls, fmt.Sprintf("Close %d", args[0]))
	}
	return &dbus.Call{}
}

// noWindows is the windows of an app without any.
type noWindows struct{ withdrawn *int }

func (noWindows) Show(string, bool) error { return nil }
func (w noWindows) Withdraw()             { *w.withdrawn++ }
func (noWindows) NoTray()                 {}
func (noWindows) Close()                  {}

// TestWithdrawAllRaisesNothing: as the app quits with more calls pending
// than have a notification, it closes each notification and the one of
// the rest, and raises none on the way out (it used to give the next calls
// a notification of their own as each was withdrawn, which flashed on the
// screen and stayed in the server's history). It closes the import offers
// and sign-ins too (an offer's "Add" stayed on the screen, reaching no one).
func TestWithdrawAllRaisesNothing(t *testing.T) {
	f := &fakeNotifications{}
	withdrawn := 0
	a := &App{
		log:     slog.New(slog.DiscardHandler),
		notes:   &notifier{obj: f, actions: true},
		win:     noWindows{&withdrawn},
		pending: map[string]*call{},
		byNote:  map[uint32]string{},
	}
	start := time.Now()
	for i := range 6 {
		c := &call{run: fmt.Sprintf("r%d", i), id: "c1", address: "memory.createEntities", message: "it asks", created: start.Add(time.Duration(i) * time.Second)}
		a.pending[c.key()] = c
	}
	a.fillNotes()
	if diff := cmp.Diff([]string{"Notify 1", "Notify 2", "Notify 3", "Notify 4"}, f.calls); diff != "" {
		t.Fatalf("raising 6 calls (-want +got):\n%s", diff)
	}
	// An import offer and a sign-in, resident: their actions would reach
	// no one after the app.
	a.offers = map[uint32]watch.Offer{7: {}}
	a.sign = &signIns{shown: map[string]uint32{"linear/default": 8}, byNote: map[uint32]string{8: "linear/default"}}
	f.calls = nil
	a.withdrawAll()
	closed := map[string]bool{}
	for _, c := range f.calls {
		closed[c] = true
	}
	if diff := cmp.Diff(map[string]bool{"Close 1": true, "Close 2": true, "Close 3": true, "Close 4": true, "Close 7": true, "Close 8": true}, closed); diff != "" {
		t.Errorf("quitting (-want +got):\n%s\nall calls: %q", diff, f.calls)
	}
	if len(a.pending) != 0 || len(a.byNote) != 0 || a.moreNote != 0 || withdrawn != 1 {
		t.Errorf("after quitting: %d pending, %d notifications known, more %d, window withdrawn %d times; want none and once", len(a.pending), len(a.byNote), a.moreNote, withdrawn)
	}
}

// TestExpiredCallIsWithdrawn: a call that expires undecided loses its
// notification when it expires, though nothing writes its run then (it
// stayed, offering "Allow once" on a call that could no longer be
// allowed, until something else touched the run).
func TestExpiredCallIsWithdrawn(t *testing.T) {
	dir, st, h := memoryHub(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	now := time.Now().UTC()
	r := model.Run{ID: "r" + store.NewID()[:20], Status: model.RunAwaitingApproval, Code: "return 1", CreatedAt: now, UpdatedAt: now,
		Pending: []model.Pending{{ID: "c1", Kind: model.PendingApproval, Seq: 1, Address: "memory.createEntities", Message: "it asks", ExpiresAt: now.Add(time.Second)}}}
	if err := st.Put(ctx, store.Runs, r.ID, r); err != nil {
		t.Fatal(err)
	}
	f := &fakeNotifications{}
	withdrawn := 0
	a := &App{
		log:     slog.New(slog.DiscardHandler),
		st:      st,
		hub:     h,
		dir:     dir,
		notes:   &notifier{obj: f, actions: true},
		win:     noWindows{&withdrawn},
		pending: map[string]*call{},
		byNote:  map[uint32]string{},
		events:  make(chan func(), 64),
		quit:    make(chan struct{}),
	}
	done := make(chan error, 1)
	go func() { done <- a.loop(ctx) }()
	calls := func() []string {
		f.mu.Lock()
		defer f.mu.Unlock()
		return slices.Clone(f.calls)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !slices.Contains(calls(), "Close 1") && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if got := calls(); !slices.Equal(got, []string{"Notify 1", "Close 1"}) {
		t.Errorf("a call expiring undecided: the notification server was called %q, want it notified, then closed when the call expired", got)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// memoryHub is a hub over a new store in a temporary directory, its
// secrets in memory; both are closed when the test ends.
func memoryHub(t *testing.T) (dir string, st *store.File, h *hub.Hub) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "hub")
	st, _, err := store.Init(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	h = hub.New(st, hub.Options{Secrets: secret.NewMemory(nil)})
	t.Cleanup(h.Close)
	return dir, st, h
}
