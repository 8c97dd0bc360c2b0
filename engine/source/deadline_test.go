package source_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/source"
	"github.com/capabilities-sh/capabilities/internal/testenv"
)

// TestCallDeadline: an upstream that answers its handshake and tool list
// but never a tool call — it hangs, prints only garbage, or answers under
// another request id — fails the call with a *TimeoutError naming the tool
// and the deadline, the source's own (callTimeoutMs) before the pool's
// default. The test's context is only a generous bound on a call that would
// otherwise never return.
func TestCallDeadline(t *testing.T) {
	// Long enough for tools/list, which the deadline bounds too, on a
	// loaded machine; what is asserted is the error, never the time.
	deadline := testenv.Timeout(time.Second)
	for _, mode := range []string{"hang-on-call", "garbage-on-call", "wrong-id"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			p := source.NewPool(source.Options{CallTimeout: time.Hour})
			t.Cleanup(p.Close)
			src := stdio("stuck", testenv.Scripted(t), map[string]string{"SCRIPTED_MODE": mode})
			src.CallTimeoutMs = deadline.Milliseconds()
			ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(60*time.Second))
			defer cancel()
			s, err := p.Session(ctx, src, "", nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.ListTools(ctx); err != nil {
				t.Fatalf("the upstream lists its tools: %v", err)
			}
			_, err = s.CallTool(ctx, "echo", json.RawMessage(`{"message":"hi"}`))
			var te *source.TimeoutError
			if !errors.As(err, &te) || !errors.Is(err, source.ErrCallTimeout) {
				t.Fatalf("CallTool = %v (test context: %v), want a *TimeoutError", err, ctx.Err())
			}
			if te.Tool != "echo" || te.Namespace != "stuck" || te.Timeout != deadline {
				t.Errorf("TimeoutError = %+v, want echo on stuck after %v", te, deadline)
			}
			if msg := err.Error(); !strings.Contains(msg, "calling echo on stuck: the server did not answer within "+source.Seconds(deadline)) {
				t.Errorf("error %q does not say which call waited how long", msg)
			}
			if mode == "garbage-on-call" && te.Strays == 0 {
				t.Errorf("the garbage the upstream printed instead of answering is not mentioned: %v", err)
			}
		})
	}
}

// TestCallerCancelIsNoTimeout: when the caller's context ends first, the
// call fails with the caller's error, not a TimeoutError.
func TestCallerCancelIsNoTimeout(t *testing.T) {
	s := connect(t, stdio("stuck", testenv.Scripted(t), map[string]string{"SCRIPTED_MODE": "hang-on-call"}), source.Options{CallTimeout: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		time.Sleep(100 * time.Millisecond)
		cancel()
	}()
	_, err := s.CallTool(ctx, "echo", json.RawMessage(`{"message":"hi"}`))
	if err == nil || errors.Is(err, source.ErrCallTimeout) || !errors.Is(err, context.Canceled) {
		t.Fatalf("CallTool cancelled by its caller = %v, want context.Canceled", err)
	}
	if !s.Alive() {
		t.Error("a call cancelled by its caller killed the session")
	}
}

// TestPoolRestartsAfterClosedStdout: an upstream that closes its stdout on
// a call (and keeps running) fails that call saying so; the pool drops the
// dead session, and the next call starts the upstream again and succeeds.
func TestPoolRestartsAfterClosedStdout(t *testing.T) {
	dir := t.TempDir()
	events := filepath.Join(dir, "events")
	p := source.NewPool(source.Options{})
	t.Cleanup(p.Close)
	src := stdio("closer", testenv.Scripted(t), map[string]string{
		"SCRIPTED_MODE":   "close-stdout-on-call",
		"SCRIPTED_ONCE":   filepath.Join(dir, "once"),
		"SCRIPTED_EVENTS": events,
	})
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(60*time.Second))
	defer cancel()
	s, err := p.Session(ctx, src, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.CallTool(ctx, "echo", json.RawMessage(`{"message":"one"}`))
	if err == nil || errors.Is(err, source.ErrCallTimeout) {
		t.Fatalf("the call on which the upstream closed its stdout = %v, want a connection error", err)
	}
	if !strings.Contains(err.Error(), "the next call starts it again") {
		t.Errorf("error %q does not say what happened", err)
	}
	if s.Alive() {
		t.Error("the session whose upstream closed its stdout is still alive")
	}
	s2, err := p.Session(ctx, src, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if s2 == s || s2.Pid() == s.Pid() {
		t.Fatalf("the pool kept the dead session (pid %d)", s.Pid())
	}
	res, err := s2.CallTool(ctx, "echo", json.RawMessage(`{"message":"two"}`))
	if err != nil {
		t.Fatalf("the call after the restart: %v", err)
	}
	if got := text(t, res); got != "Echo: two" {
		t.Errorf("echo = %q", got)
	}
	b, err := os.ReadFile(events)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "start\n"); n != 2 {
		t.Errorf("the upstream started %d times, want 2 (events:\n%s)", n, b)
	}
}
