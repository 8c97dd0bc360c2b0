package hub

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/sandbox"
	"github.com/google/go-cmp/cmp"
)

// blockingHost answers each call only when its ctx ends, as a hanging
// upstream does.
type blockingHost struct{ calls int }

func (b *blockingHost) CallTool(ctx context.Context, c sandbox.Call) sandbox.CallResult {
	b.calls++
	<-ctx.Done()
	return sandbox.CallResult{Error: &sandbox.ToolError{Code: "cancelled", Message: "the call was cut short"}}
}

// TestOneCallRunEndsAsTheSandbox: for code that is one call returned,
// oneCallRun ends as the sandbox running the code does, on what the host
// answers (values, errors with what the guest fills in, a pause) and on a
// hanging call (the attempt's wall time); what it cannot be sure of (a
// value JavaScript prints otherwise, an error text the sandbox reads as
// its own, the run stopped from outside) it leaves to the sandbox.
func TestOneCallRunEndsAsTheSandbox(t *testing.T) {
	d, err := sandbox.New(sandbox.Options{CacheDir: sandbox.DefaultCacheDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ctx := context.Background()
	nss := sandbox.NewNamespaces(map[string][]string{"writer": {"record", "echo"}, "escape": {"x"}})
	const code = `return await writer.record({item: "x", n: 1})`
	same := func(t *testing.T, got, want sandbox.Outcome) {
		t.Helper()
		if got.Status != want.Status || string(got.Result) != string(want.Result) || got.Calls != want.Calls {
			t.Errorf("one call: %s %s (%d calls); the sandbox: %s %s (%d calls)", got.Status, got.Result, got.Calls, want.Status, want.Result, want.Calls)
		}
		if diff := cmp.Diff(want.Error, got.Error); diff != "" {
			t.Errorf("error (-sandbox +one call):\n%s", diff)
		}
	}
	for _, tc := range []struct {
		name string
		res  sandbox.CallResult
	}{
		{"value", sandbox.CallResult{Value: json.RawMessage(`{"b": [1, 2.5, "ü\u2028"], "a": null, "__proto__": {"c": true}}`)}},
		{"no value", sandbox.CallResult{}},
		{"not JSON", sandbox.CallResult{Value: json.RawMessage(`{oops`)}},
		{"a bare error", sandbox.CallResult{Error: &sandbox.ToolError{}}},
		{"an error with all", sandbox.CallResult{Error: &sandbox.ToolError{Code: "upstream_error", Message: "gone", Hint: "try later", Status: 503, Retryable: true}}},
		{"pause", sandbox.CallResult{Pause: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fast, slow := &fakeHost{res: tc.res}, &fakeHost{res: tc.res}
			req := sandbox.Request{JS: code, NamespaceSet: nss, Host: fast}
			got, ok := oneCallRun(ctx, req)
			if !ok {
				t.Fatal("the code did not take the one-call path")
			}
			req.Host = slow
			same(t, got, d.Run(ctx, req))
			if diff := cmp.Diff(slow.calls, fast.calls); diff != "" {
				t.Errorf("calls (-sandbox +one call):\n%s", diff)
			}
		})
	}
	t.Run("a hanging call", func(t *testing.T) {
		fast, slow := &blockingHost{}, &blockingHost{}
		req := sandbox.Request{JS: code, NamespaceSet: nss, Host: fast, Limits: sandbox.Limits{WallMs: 100}}
		got, ok := oneCallRun(ctx, req)
		if !ok {
			t.Fatal("the code did not take the one-call path")
		}
		req.Host = slow
		want := d.Run(ctx, req)
		same(t, got, want)
		if want.Error == nil || want.Error.Code != sandbox.CodeWallTimeout || fast.calls != 1 {
			t.Errorf("the sandbox ended %+v; the one-call path made %d calls", want.Error, fast.calls)
		}
		// A direct-mode call takes the same bound (callOnce).
		js, err := DirectCode("writer.record", json.RawMessage(`{"item": "x"}`))
		if err != nil {
			t.Fatal(err)
		}
		direct, ok := directRun(ctx, sandbox.Request{JS: js, NamespaceSet: nss, Host: &blockingHost{}, Limits: sandbox.Limits{WallMs: 100}})
		if !ok || direct.Status != want.Status || !cmp.Equal(direct.Error, want.Error) {
			t.Errorf("a hanging direct call: %v %s %+v; the sandbox's %s %+v", ok, direct.Status, direct.Error, want.Status, want.Error)
		}
	})
	t.Run("stopped from outside", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		time.AfterFunc(50*time.Millisecond, cancel)
		if _, ok := oneCallRun(cctx, sandbox.Request{JS: code, NamespaceSet: nss, Host: &blockingHost{}}); ok {
			t.Error("a run cancelled during its call was not left to the sandbox")
		}
	})
	for name, tc := range map[string]struct {
		code string
		res  sandbox.CallResult
	}{
		"a number printed otherwise": {code, sandbox.CallResult{Value: json.RawMessage(`{"n": 1.0}`)}},
		"an error read as memory's":  {code, sandbox.CallResult{Error: &sandbox.ToolError{Message: "out of memory"}}},
		"a global's namespace":       {`return await escape.x()`, sandbox.CallResult{Value: json.RawMessage(`1`)}},
		"an unseen tool":             {`return await writer.nope()`, sandbox.CallResult{Value: json.RawMessage(`1`)}},
		"more code":                  {`const r = await writer.echo({}); return r.n`, sandbox.CallResult{Value: json.RawMessage(`1`)}},
	} {
		if _, ok := oneCallRun(ctx, sandbox.Request{JS: tc.code, NamespaceSet: nss, Host: &fakeHost{res: tc.res}}); ok {
			t.Errorf("%s took the one-call path", name)
		}
	}
}
