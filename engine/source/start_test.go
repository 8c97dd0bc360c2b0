package source_test

import (
	"context"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/source"
	"github.com/capabilities-sh/capabilities/internal/testenv"
)

// slowStart is testdata/upstreams/slow-start.mjs: a server that takes
// SLOW_START_MS to start, writing download-like progress on stderr
// meanwhile (as npx does on a cold cache), or hangs silently.
func slowStart(t *testing.T) []string {
	return []string{testenv.Node(t), testenv.Root(t) + "/testdata/upstreams/slow-start.mjs"}
}

// statuses collects what OnStart is told.
type statuses struct {
	mu   sync.Mutex
	seen []source.StartStatus
}

func (s *statuses) add(st source.StartStatus) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen = append(s.seen, st)
}

func (s *statuses) find(f func(source.StartStatus) bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range s.seen {
		if f(st) {
			return true
		}
	}
	return false
}

// TestSlowStartIsNotCutOff: a server that is visibly still working at its
// start (it writes progress on stderr and has not read the handshake yet)
// is given more than the connect timeout, and OnStart is told how it goes:
// what the hub waits for and the last line of its stderr. The server here
// takes two connect timeouts to start; before, the start failed at the
// first ("did not answer the MCP handshake in time").
func TestSlowStartIsNotCutOff(t *testing.T) {
	timeout := testenv.Timeout(time.Second)
	var got statuses
	src := stdio("slow", slowStart(t), map[string]string{"SLOW_START_MS": strconv.FormatInt(2*timeout.Milliseconds(), 10)})
	s, err := source.Connect(context.Background(), src, source.Options{ConnectTimeout: timeout, OnStart: got.add})
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	defer s.Close()
	m, err := s.ListTools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Tools) != 3 {
		t.Errorf("%d tools, want scripted's 3", len(m.Tools))
	}
	if !got.find(func(st source.StartStatus) bool { return st.Elapsed > timeout }) {
		t.Errorf("no status past the connect timeout %v: %+v", timeout, got.seen)
	}
	if !got.find(func(st source.StartStatus) bool { return strings.HasPrefix(st.Stderr, "fetching package-") }) {
		t.Errorf("no status with the server's stderr: %+v", got.seen)
	}
	if runtime.GOOS == "linux" && !got.find(func(st source.StartStatus) bool {
		return st.Waiting == "waiting for it to read the MCP handshake" && strings.Contains(st.Command, "slow-start.mjs")
	}) {
		t.Errorf("no status saying the server has not read the handshake yet: %+v", got.seen)
	}
}

// TestSilentStartFails: a server that hangs at its start, reading nothing,
// writing nothing and spending no CPU time, fails once the connect timeout
// passed, saying what the hub waited for and that it showed no sign of
// work.
func TestSilentStartFails(t *testing.T) {
	timeout := testenv.Timeout(500 * time.Millisecond)
	var got statuses
	src := stdio("silent", slowStart(t), map[string]string{"SLOW_START_MODE": "silent"})
	s, err := source.Connect(context.Background(), src, source.Options{ConnectTimeout: timeout, OnStart: got.add})
	if err == nil {
		s.Close()
		t.Fatal("Connect succeeded")
	}
	t.Log(err)
	want := []string{"connecting to silent (", "the server did not answer the MCP handshake in time: ", "with no sign of work (no output, no CPU time) for the last", "more time with `capabilities hub add --timeout`"}
	if runtime.GOOS == "linux" {
		want = append(want, "after its start it had not read it yet")
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not say %q", err, w)
		}
	}
	if runtime.GOOS == "linux" && !got.find(func(st source.StartStatus) bool { return st.Waiting == "waiting for it to read the MCP handshake" }) {
		t.Errorf("no status saying the server has not read the handshake: %+v", got.seen)
	}
}
