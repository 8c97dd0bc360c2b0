package app

import (
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/app/screen"
	"github.com/capabilities-sh/capabilities/engine/harness"
	"github.com/capabilities-sh/capabilities/engine/harness/watch"
	"github.com/google/go-cmp/cmp"
)

// shownWindows records the screens the app asks to show.
type shownWindows struct{ shown []string }

func (w *shownWindows) Show(s string, _ bool) error { w.shown = append(w.shown, s); return nil }
func (*shownWindows) Withdraw()                     {}
func (*shownWindows) NoTray()                       {}
func (*shownWindows) Close()                        {}

// TestOpensTheCallPicked: a notification's Open, or a call's item in the
// tray's menu, opens the call the person picked, not the oldest of the
// calls waiting (whose "Allow once" they would be deciding unawares).
func TestOpensTheCallPicked(t *testing.T) {
	f := &fakeNotifications{}
	win := &shownWindows{}
	a := &App{
		log:     slog.New(slog.DiscardHandler),
		notes:   &notifier{obj: f, actions: true},
		win:     win,
		pending: map[string]*call{},
		byNote:  map[uint32]string{},
	}
	start := time.Now()
	for i := range 3 {
		c := &call{run: fmt.Sprintf("r%d", i), id: "c1", address: "memory.createEntities", message: "it asks", created: start.Add(time.Duration(i) * time.Second)}
		a.pending[c.key()] = c
	}
	a.fillNotes()
	var second uint32
	for note, k := range a.byNote {
		if a.pending[k].run == "r1" {
			second = note
		}
	}
	if second == 0 {
		t.Fatalf("no notification for the second call: %v", a.byNote)
	}
	a.act(second, "default")
	a.openCall(2)
	a.openCall(7) // gone since the menu was drawn
	want := []string{screen.Call("r1", "c1"), screen.Call("r2", "c1"), ""}
	if diff := cmp.Diff(want, win.shown); diff != "" {
		t.Errorf("screens shown (-want +got):\n%s", diff)
	}
	for _, s := range want {
		if !screen.Valid(s) {
			t.Errorf("%q is not a screen the window shows", s)
		}
	}
}

// TestOwnEndpointIsNotOffered: an agent's config that names this app's own
// MCP endpoint (by any loopback name) is not offered for import; another
// port or host is.
func TestOwnEndpointIsNotOffered(t *testing.T) {
	a := &App{endpoint: "http://127.0.0.1:4790/mcp"}
	for raw, want := range map[string]bool{
		"http://127.0.0.1:4790/mcp":     true,
		"http://localhost:4790/mcp":     true,
		"http://[::1]:4790/mcp/default": true,
		"http://127.0.0.1:4791/mcp":     false,
		"http://example.com:4790/mcp":   false,
		"":                              false,
	} {
		if got := a.ownEndpoint(raw); got != want {
			t.Errorf("ownEndpoint(%q) = %v, want %v", raw, got, want)
		}
	}
	f := &fakeNotifications{}
	a.log, a.notes, a.offers = slog.New(slog.DiscardHandler), &notifier{obj: f, actions: true}, map[uint32]watch.Offer{}
	a.offer(watch.Offer{Harness: "claude-code", Server: harness.Server{Name: "hub", URL: "http://localhost:4790/mcp"}})
	a.offer(watch.Offer{Harness: "claude-code", Server: harness.Server{Name: "other", URL: "http://127.0.0.1:9999/mcp"}})
	if diff := cmp.Diff([]string{"Notify 1"}, f.calls); diff != "" {
		t.Errorf("offers raised (-want +got):\n%s", diff)
	}
}
