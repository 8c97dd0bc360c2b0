package hub_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/secret"
	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/capabilities-sh/capabilities/store"
)

// events counts the lines of the scripted upstream's SCRIPTED_EVENTS file
// by kind (start, tools/list, list_changed).
func events(t *testing.T, path string) map[string]int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	n := map[string]int{}
	for _, l := range strings.Split(string(data), "\n") {
		if l != "" {
			n[l]++
		}
	}
	return n
}

// waitFor polls cond until it holds; the bound is generous and only a
// failure bound, never what the test asserts.
func waitFor(t *testing.T, what string, cond func() bool, state func() string) {
	t.Helper()
	wait := testenv.Timeout(30 * time.Second)
	deadline := time.Now().Add(wait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still waiting after %v for %s; now: %s", wait, what, state())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestToolListChangedLoopCoalescesAndCloseReturns: an upstream that
// announces tools/list_changed every few milliseconds, with and without a
// stored credential. The hub's refreshes coalesce (far fewer tool lists than
// announcements), reuse the running upstream instead of starting a new one
// each time, and Close returns while the announcements go on.
func TestToolListChangedLoopCoalescesAndCloseReturns(t *testing.T) {
	for _, tc := range []struct {
		name   string
		secret string
	}{
		{"no credential", ""},
		{"a stored credential", "loop-token-value"},
	} {
		t.Run(tc.name, func(t *testing.T) { testToolListChangedLoop(t, tc.secret) })
	}
}

func testToolListChangedLoop(t *testing.T, secretValue string) {
	st, _, err := store.Init(filepath.Join(t.TempDir(), "hub"))
	if err != nil {
		t.Fatal(err)
	}
	evFile := filepath.Join(t.TempDir(), "events")
	h := hub.New(st, hub.Options{Secrets: secret.NewMemory(nil)})
	closed := false
	t.Cleanup(func() {
		if !closed {
			h.Close()
		}
	})
	ctx := context.Background()
	secretEnv := ""
	if secretValue != "" {
		secretEnv = "LOOP_TOKEN"
	}
	p, err := h.Propose(ctx, hub.AddRequest{
		Command:   testenv.Scripted(t),
		Namespace: "loop",
		SecretEnv: secretEnv,
		Env:       map[string]string{"SCRIPTED_MODE": "listchanged", "SCRIPTED_EVENTS": evFile},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Accept(ctx, p); err != nil {
		t.Fatal(err)
	}
	if secretValue != "" {
		if _, err := h.Auth(ctx, hub.AuthRequest{Namespace: "loop", Value: secretValue}); err != nil {
			t.Fatal(err)
		}
	}
	startsBefore := events(t, evFile)["start"]

	res, err := h.Call(ctx, "loop.echo", json.RawMessage(`{"message":"hi"}`), "")
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError {
		t.Fatalf("echo failed: %+v", res)
	}
	// Let the announcements pile up and the refreshes they cause run (or,
	// when every refresh restarts the upstream, the restarts pile up).
	waitFor(t, "500 announcements and 3 refreshes, or 20 restarts", func() bool {
		n := events(t, evFile)
		return n["list_changed"] >= 500 && n["tools/list"] >= 3 || n["start"]-startsBefore >= 20
	}, func() string { return fmt.Sprint(events(t, evFile)) })

	m, err := h.Manifest(ctx, "loop")
	if err != nil {
		t.Fatal(err)
	}
	if m == nil || m.Health != "ok" || len(m.Tools) != 3 {
		t.Errorf("while it refreshes the manifest is %+v, want 3 tools and health ok", m)
	}

	done := make(chan struct{})
	go func() {
		h.Close()
		close(done)
	}()
	select {
	case <-done:
		closed = true
	case <-time.After(testenv.Timeout(30 * time.Second)):
		t.Fatalf("Close did not return in time while the upstream announced list changes")
	}

	n := events(t, evFile)
	t.Logf("events: %v", n)
	if starts := n["start"] - startsBefore; starts != 1 {
		t.Errorf("the upstream was started %d times for one call and its refreshes, want 1 (a refresh must reuse the running session)", starts)
	}
	if lists := n["tools/list"]; lists*10 > n["list_changed"] {
		t.Errorf("%d tool lists for %d announcements: the refreshes did not coalesce", lists, n["list_changed"])
	}
}
