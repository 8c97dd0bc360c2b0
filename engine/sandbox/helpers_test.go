package sandbox

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/internal/testenv"
)

// fakeHost answers tool calls in process: gh.echo returns its arguments,
// gh.sleep sleeps Args.ms then returns, gh.fail returns a ToolError,
// gh.pause pauses the run (after Args.ms), hub.search returns a fixed text.
type fakeHost struct {
	mu       sync.Mutex
	calls    []Call
	inflight atomic.Int32
	peak     atomic.Int32
}

func (h *fakeHost) CallTool(ctx context.Context, c Call) CallResult {
	h.mu.Lock()
	h.calls = append(h.calls, c)
	h.mu.Unlock()
	n := h.inflight.Add(1)
	defer h.inflight.Add(-1)
	for {
		p := h.peak.Load()
		if n <= p || h.peak.CompareAndSwap(p, n) {
			break
		}
	}
	switch c.Address {
	case "gh.echo":
		return CallResult{Value: c.Args}
	case "gh.sleep":
		var a struct{ Ms int }
		_ = json.Unmarshal(c.Args, &a)
		select {
		case <-time.After(time.Duration(a.Ms) * time.Millisecond):
			return CallResult{Value: json.RawMessage(`"slept"`)}
		case <-ctx.Done():
			return CallResult{Error: &ToolError{Code: "cancelled", Message: ctx.Err().Error()}}
		}
	case "gh.fail":
		return CallResult{Error: &ToolError{Code: "not_found", Message: "no such issue", Hint: "check the number", Status: 404, Retryable: false}}
	case "gh.pause":
		var a struct{ Ms int }
		_ = json.Unmarshal(c.Args, &a)
		time.Sleep(time.Duration(a.Ms) * time.Millisecond)
		return CallResult{Pause: true}
	case AddressSearch:
		return CallResult{Value: json.RawMessage(`"gh.echo: echoes its arguments"`)}
	case AddressDescribe:
		return CallResult{Value: json.RawMessage(`"declare function echo(args: object): object"`)}
	}
	return CallResult{Error: &ToolError{Code: "unknown", Message: "unknown tool " + c.Address}}
}

// testWallMs bounds the attempts whose test sets tight compute limits: far
// beyond what they need, so that only the limit under test can end them.
var testWallMs = int(testenv.Timeout(60 * time.Second).Milliseconds())

// testMemoryBytes is the test driver's QuickJS heap limit: small, so that
// memory bombs hit it quickly even though guest code runs slowly (see harden.go).
const testMemoryBytes = 16 << 20

var testNamespaces = map[string][]string{"gh": {"echo", "sleep", "fail", "pause", "search_issues", "get_issue"}}

var (
	sharedOnce   sync.Once
	sharedDriver *Driver
	sharedErr    error
)

// driver returns one Driver shared by the package's tests (building the wasm
// module is the expensive part, and it is shared anyway).
func driver(t testing.TB) *Driver {
	t.Helper()
	sharedOnce.Do(func() { sharedDriver, sharedErr = New(Options{MemoryBytes: testMemoryBytes}) })
	if sharedErr != nil {
		t.Fatal(sharedErr)
	}
	return sharedDriver
}

func run(t testing.TB, js string) (Outcome, *fakeHost) {
	t.Helper()
	h := &fakeHost{}
	out := driver(t).Run(context.Background(), Request{JS: js, Host: h, Namespaces: testNamespaces, Seed: 7, Clock: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)})
	return out, h
}
