package source_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/source"
	"github.com/capabilities-sh/capabilities/internal/testenv"
)

// TestPoolWakesRecentUpstreams: Wake pings a local upstream whose last
// call answered a moment ago and that the coming run names, and neither one
// the runs never called nor one called lately that the run does not name
// (an execute costs the same however many upstreams are live); the session
// stays alive and its next call is served.
func TestPoolWakesRecentUpstreams(t *testing.T) {
	dir := t.TempDir()
	called, idle, other := filepath.Join(dir, "called"), filepath.Join(dir, "idle"), filepath.Join(dir, "other")
	p := source.NewPool(source.Options{})
	t.Cleanup(p.Close)
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(60*time.Second))
	defer cancel()
	s, err := p.Session(ctx, stdio("called", testenv.Scripted(t), map[string]string{"SCRIPTED_EVENTS": called}), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Session(ctx, stdio("idle", testenv.Scripted(t), map[string]string{"SCRIPTED_EVENTS": idle}), "", nil); err != nil {
		t.Fatal(err)
	}
	o, err := p.Session(ctx, stdio("other", testenv.Scripted(t), map[string]string{"SCRIPTED_EVENTS": other}), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range []*source.Session{s, o} {
		if _, err := x.CallTool(ctx, "echo", json.RawMessage(`{"message":"one"}`)); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(20 * time.Millisecond) // quiet for longer than a run's own calls leave it warm
	p.Wake(func(ns string) bool { return ns != "other" })
	pings := func(file string) int {
		b, _ := os.ReadFile(file)
		return strings.Count(string(b), "ping\n")
	}
	deadline := time.Now().Add(testenv.Timeout(10 * time.Second))
	for pings(called) == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if n := pings(called); n != 1 {
		t.Errorf("the upstream called a moment ago got %d pings from one Wake, want 1", n)
	}
	time.Sleep(100 * time.Millisecond) // a wrong ping would have landed by now
	if n := pings(idle); n != 0 {
		t.Errorf("the upstream no run called got %d pings, want 0", n)
	}
	if n := pings(other); n != 0 {
		t.Errorf("the upstream the coming run does not name got %d pings, want 0", n)
	}
	if !s.Alive() {
		t.Fatal("the session died after a ping")
	}
	res, err := s.CallTool(ctx, "echo", json.RawMessage(`{"message":"two"}`))
	if err != nil {
		t.Fatalf("the call after a wake: %v", err)
	}
	if got := text(t, res); got != "Echo: two" {
		t.Errorf("echo = %q", got)
	}
}
