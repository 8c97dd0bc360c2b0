package app

import (
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
	"github.com/google/go-cmp/cmp"
)

// fakeNotifications stands for the notification server: it records the
// methods called and answers Notify with the next id.
type fakeNotifications struct {
	dbus.BusObject
	calls []string
	next  uint32
}

func (f *fakeNotifications) Call(method string, _ dbus.Flags, args ...any) *dbus.Call {
	switch method {
	case notifyName + ".Notify":
		f.next++
		f.calls = append(f.calls, fmt.Sprintf("Notify %d", f.next))
		return &dbus.Call{Body: []any{f.next}}
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
// the rest, and raises none on the way out (it used to give the next
// calls a notification of their own as each was withdrawn, which flashed
// on the screen and stayed in the server's history).
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
	f.calls = nil
	a.withdrawAll()
	closed := map[string]bool{}
	for _, c := range f.calls {
		closed[c] = true
	}
	if diff := cmp.Diff(map[string]bool{"Close 1": true, "Close 2": true, "Close 3": true, "Close 4": true}, closed); diff != "" {
		t.Errorf("quitting (-want +got):\n%s\nall calls: %q", diff, f.calls)
	}
	if len(a.pending) != 0 || len(a.byNote) != 0 || a.moreNote != 0 || withdrawn != 1 {
		t.Errorf("after quitting: %d pending, %d notifications known, more %d, window withdrawn %d times; want none and once", len(a.pending), len(a.byNote), a.moreNote, withdrawn)
	}
}
