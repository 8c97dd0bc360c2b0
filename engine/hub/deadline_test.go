package hub_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/run"
	"github.com/capabilities-sh/capabilities/engine/secret"
	"github.com/capabilities-sh/capabilities/engine/source"
	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/capabilities-sh/capabilities/store"
	"github.com/google/go-cmp/cmp"
)

// stuckHub is a hub whose sources are the scripted upstream in the given
// modes (namespace → SCRIPTED_* variables), each with callTimeout as its
// own call deadline, reviewed so their read-only tools run.
func stuckHub(t *testing.T, callTimeout time.Duration, sources map[string]map[string]string) *hub.Hub {
	t.Helper()
	st, _, err := store.Init(filepath.Join(t.TempDir(), "hub"))
	if err != nil {
		t.Fatal(err)
	}
	h := hub.New(st, hub.Options{
		Secrets: secret.NewMemory(nil),
		// The hub's default is far longer than the sources' own deadline,
		// which is the one that must apply.
		Source: source.Options{ConnectTimeout: testenv.Timeout(source.DefaultConnectTimeout), CallTimeout: time.Hour},
	})
	t.Cleanup(h.Close)
	var reqs []hub.AddRequest
	for ns, env := range sources {
		reqs = append(reqs, hub.AddRequest{Namespace: ns, Command: testenv.Scripted(t), Env: env, CallTimeout: callTimeout})
	}
	addReviewed(t, h, reqs...)
	return h
}

// TestInvariantI7EveryUpstreamCallHasADeadline: upstreams that answer their
// handshake and tool list but never a tool call — one hangs, one prints only
// garbage, one answers under another request id. A direct call fails with an
// error naming the address and the deadline; in a run, the code gets a
// ToolError upstream_timeout naming them, and the envelope lists each call.
// The deadline is the source's own, not the hub's default (an hour) nor a
// caller's: nothing else would end these calls before the test's bound.
func TestInvariantI7EveryUpstreamCallHasADeadline(t *testing.T) {
	deadline := testenv.Timeout(time.Second) // tools/list must fit in it on a loaded machine
	secs := source.Seconds(deadline)
	h := stuckHub(t, deadline, map[string]map[string]string{
		"hang":    {"SCRIPTED_MODE": "hang-on-call"},
		"garbage": {"SCRIPTED_MODE": "garbage-on-call"},
		"wrongid": {"SCRIPTED_MODE": "wrong-id"},
	})
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(2*time.Minute))
	defer cancel()

	_, err := h.Call(ctx, "hang.echo", json.RawMessage(`{"message":"hi"}`), "")
	if !errors.Is(err, source.ErrCallTimeout) {
		t.Fatalf("hub.Call of a hanging upstream = %v (test context: %v), want a call timeout", err, ctx.Err())
	}
	if want := "calling hang.echo: the upstream did not answer within " + secs; !strings.Contains(err.Error(), want) {
		t.Errorf("hub.Call error %q does not contain %q", err, want)
	}

	env, err := h.Execute(ctx, `
		const outcome = async (f) => { try { await f({message: "hi"}); return "answered" } catch (e) { return {code: e.code, address: e.address, message: e.message, retryable: e.retryable} } };
		return await Promise.all([outcome(hang.echo), outcome(garbage.echo), outcome(wrongid.echo)])`)
	if err != nil {
		t.Fatal(err)
	}
	if env.Status != "completed" {
		t.Fatalf("run %s: %+v (test context: %v)", env.Status, env.Error, ctx.Err())
	}
	type outcome struct {
		Code, Address, Message string
		Retryable              bool
	}
	var got []outcome
	if err := json.Unmarshal(env.Result, &got); err != nil {
		t.Fatalf("result %s: %v", env.Result, err)
	}
	var want []outcome
	var calls []run.CallInfo
	for _, addr := range []string{"hang.echo", "garbage.echo", "wrongid.echo"} {
		want = append(want, outcome{Code: "upstream_timeout", Address: addr, Message: addr + ": the upstream did not answer within " + secs, Retryable: true})
		calls = append(calls, run.CallInfo{Address: addr, OK: false})
	}
	// The garbage is mentioned after the message's first part.
	for i := range got {
		if m, _, ok := strings.Cut(got[i].Message, " (meanwhile it wrote "); ok && got[i].Address == "garbage.echo" {
			got[i].Message = m
		}
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("what the code caught (-want +got):\n%s", d)
	}
	for i := range env.Calls {
		env.Calls[i].Ms = 0
	}
	if d := cmp.Diff(calls, env.Calls); d != "" {
		t.Errorf("the envelope's calls (-want +got):\n%s", d)
	}
}

// TestUpstreamThatClosedItsStdoutIsStartedAgain: an upstream that closes its
// stdout on the first call (and keeps running). That call fails, saying so;
// the next one, direct or from a run, starts the upstream again and gets
// its answer.
func TestUpstreamThatClosedItsStdoutIsStartedAgain(t *testing.T) {
	dir := t.TempDir()
	eventsFile := filepath.Join(dir, "events")
	h := stuckHub(t, 0, map[string]map[string]string{
		"closer": {"SCRIPTED_MODE": "close-stdout-on-call", "SCRIPTED_ONCE": filepath.Join(dir, "once"), "SCRIPTED_EVENTS": eventsFile},
	})
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(2*time.Minute))
	defer cancel()
	startsBefore := events(t, eventsFile)["start"]

	env, err := h.Execute(ctx, `
		let first;
		try { await closer.echo({message: "one"}); first = "answered" } catch (e) { first = {code: e.code, retryable: e.retryable} }
		return {first, second: await closer.echo({message: "two"})}`)
	if err != nil {
		t.Fatal(err)
	}
	if env.Status != "completed" {
		t.Fatalf("run %s: %+v", env.Status, env.Error)
	}
	var got struct {
		First struct {
			Code      string
			Retryable bool
		}
		Second string
	}
	if err := json.Unmarshal(env.Result, &got); err != nil {
		t.Fatalf("result %s: %v", env.Result, err)
	}
	if got.First.Code != "upstream_error" || !got.First.Retryable || got.Second != "Echo: two" {
		t.Errorf("first call %+v, second %q; want a retryable upstream_error, then the answer", got.First, got.Second)
	}
	if n := events(t, eventsFile)["start"] - startsBefore; n != 2 {
		t.Errorf("the upstream started %d times for the run, want 2 (once, then again after it closed its stdout)", n)
	}
	res, err := h.Call(ctx, "closer.echo", json.RawMessage(`{"message":"three"}`), "")
	if err != nil || len(res.Content) != 1 {
		t.Fatalf("a direct call after the restart: %v %v", res, err)
	}
}
