package mcpserver

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/store"
)

// TestListedOnceAfterTheFirstList: Options.Listed is called once the
// client has listed the tools (serve --stdio then prepares the sandbox),
// not at the handshake, and only once however often the client lists
// them, in code mode and in direct mode.
func TestListedOnceAfterTheFirstList(t *testing.T) {
	for _, profile := range []*hub.Profile{nil, {Name: "direct", Mode: hub.ModeDirect}} {
		h := hub.New(store.NewMem(), hub.Options{})
		defer h.Close()
		var calls atomic.Int32
		ctx := context.Background()
		cs := connectInMemory(t, New(h, Options{Profile: profile, Listed: func() { calls.Add(1) }}))
		if err := cs.Ping(ctx, nil); err != nil {
			t.Fatal(err)
		}
		if n := calls.Load(); n != 0 {
			t.Errorf("profile %v: Listed called %d time(s) before the tools were listed", profile, n)
		}
		for range 3 {
			if _, err := cs.ListTools(ctx, nil); err != nil {
				t.Fatal(err)
			}
		}
		if n := calls.Load(); n != 1 {
			t.Errorf("profile %v: Listed called %d time(s) after three lists; want once", profile, n)
		}
	}
}
