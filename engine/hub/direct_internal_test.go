package hub

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/capabilities-sh/capabilities/engine/sandbox"
	"github.com/google/go-cmp/cmp"
)

// fakeHost answers every call with res and counts the calls.
type fakeHost struct {
	mu    sync.Mutex
	res   sandbox.CallResult
	calls []sandbox.Call
}

func (f *fakeHost) CallTool(_ context.Context, c sandbox.Call) sandbox.CallResult {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, c)
	return f.res
}

// TestDirectRunMatchesTheSandbox: for a direct call's code, the path
// without a runtime makes the same one call (sequence 1, address, args) and
// ends the same way as QuickJS running that code — a value, a ToolError
// with and without a hint, a pause — and leaves other code, a tool the run
// cannot see and a result the envelope would cut to the sandbox.
func TestDirectRunMatchesTheSandbox(t *testing.T) {
	d, err := sandbox.New(sandbox.Options{CacheDir: sandbox.DefaultCacheDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ctx := context.Background()
	nss := sandbox.NewNamespaces(map[string][]string{"writer": {"record", "echo"}})
	code, err := DirectCode("writer.record", json.RawMessage(`{"item": "x", "n": 1}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		res  sandbox.CallResult
	}{
		{"value", sandbox.CallResult{Value: json.RawMessage(`{"b": [1, 2, "ü"], "a": null}`)}},
		{"string", sandbox.CallResult{Value: json.RawMessage(`"recorded x"`)}},
		{"tool error", sandbox.CallResult{Error: &sandbox.ToolError{Code: "tool_error", Message: "no such item"}}},
		{"denied with a hint", sandbox.CallResult{Error: &sandbox.ToolError{Code: "policy_denied", Message: "denied", Hint: "ask the person"}}},
		{"pause", sandbox.CallResult{Pause: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fast, slow := &fakeHost{res: tc.res}, &fakeHost{res: tc.res}
			req := sandbox.Request{JS: code, NamespaceSet: nss, Host: fast}
			got, ok := directRun(ctx, req)
			if !ok {
				t.Fatal("the direct call's code did not take the path without a runtime")
			}
			req.Host = slow
			want := d.Run(ctx, req)
			if got.Status != want.Status {
				t.Fatalf("status %s, the sandbox's %s (%+v)", got.Status, want.Status, want.Error)
			}
			var g, w any
			_ = json.Unmarshal(got.Result, &g)
			_ = json.Unmarshal(want.Result, &w)
			if diff := cmp.Diff(w, g); diff != "" {
				t.Errorf("result (-sandbox +direct):\n%s", diff)
			}
			if diff := cmp.Diff(slow.calls, fast.calls); diff != "" {
				t.Errorf("calls (-sandbox +direct):\n%s", diff)
			}
			// A caught error makes the run failed with the tool's error,
			// the same on both paths; anything else is left as it ended.
			gf, wf := directFailed(code, got), directFailed(code, want)
			if diff := cmp.Diff(wf.Error, gf.Error); diff != "" || gf.Status != wf.Status {
				t.Errorf("as a run: %s, the sandbox's %s; error (-sandbox +direct):\n%s", gf.Status, wf.Status, diff)
			}
			if te := tc.res.Error; te != nil {
				if w := (&sandbox.Error{Code: te.Code, Message: te.Message, Hint: te.Hint}); gf.Status != sandbox.StatusFailed || !cmp.Equal(gf.Error, w) {
					t.Errorf("a caught %s: %s %+v, want failed with %+v", te.Code, gf.Status, gf.Error, w)
				}
			} else if gf.Status != got.Status || gf.Error != nil {
				t.Errorf("directFailed changed an outcome with no error: %s %+v", gf.Status, gf.Error)
			}
		})
	}
	// Code that is not exactly a direct call keeps the result it returned.
	other := sandbox.Outcome{Status: sandbox.StatusCompleted, Result: json.RawMessage(`{"toolError":{"code":"x","message":"m","hint":""}}`)}
	if got := directFailed("return 1", other); got.Status != sandbox.StatusCompleted {
		t.Errorf("code mode's own {toolError} result became %s", got.Status)
	}
	host := &fakeHost{res: sandbox.CallResult{Value: json.RawMessage(`"` + strings.Repeat("x", 30<<10) + `"`)}}
	for name, req := range map[string]sandbox.Request{
		"other code":         {JS: strings.Replace(code, "return {value:", "return {other:", 1), NamespaceSet: nss, Host: host},
		"unseen tool":        {JS: code, NamespaceSet: sandbox.NewNamespaces(map[string][]string{"writer": {"echo"}}), Host: host},
		"too large a result": {JS: code, NamespaceSet: nss, Host: host},
	} {
		if _, ok := directRun(ctx, req); ok {
			t.Errorf("%s took the path without a runtime", name)
		}
	}
}
