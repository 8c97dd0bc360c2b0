package guest_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/code"
	"github.com/capabilities-sh/capabilities/engine/sandbox"
	"github.com/capabilities-sh/capabilities/guest"
)

type host struct {
	mu    sync.Mutex
	calls []sandbox.Call
}

func (h *host) CallTool(_ context.Context, c sandbox.Call) sandbox.CallResult {
	h.mu.Lock()
	h.calls = append(h.calls, c)
	h.mu.Unlock()
	if c.Address == "github.get_issue" {
		return sandbox.CallResult{Error: &sandbox.ToolError{Code: "rate_limited", Message: "slow down", Hint: "wait a minute", Status: 429, Retryable: true}}
	}
	return sandbox.CallResult{Value: json.RawMessage(`{"address":"` + c.Address + `","args":` + string(c.Args) + `}`)}
}

var (
	once sync.Once
	drv  *sandbox.Driver
)

// run prepares src with engine/code and runs it in the sandbox.
func run(t *testing.T, src string) (sandbox.Outcome, *host) {
	t.Helper()
	once.Do(func() {
		var err error
		if drv, err = sandbox.New(sandbox.Options{}); err != nil {
			t.Fatal(err)
		}
	})
	p, err := code.Prepare(src)
	if err != nil {
		t.Fatal(err)
	}
	h := &host{}
	out := drv.Run(context.Background(), sandbox.Request{
		JS: p.JS, Host: h, Seed: 1, Clock: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC),
		Namespaces: map[string][]string{"github": {"search_issues", "get_issue", "create_issue"}, "slack": {"post_message"}},
	})
	return out, h
}

func result(t *testing.T, src string) string {
	t.Helper()
	out, _ := run(t, src)
	if out.Status != sandbox.StatusCompleted {
		t.Fatalf("%s: %s %+v", src, out.Status, out.Error)
	}
	return string(out.Result)
}

func TestPreludeEmbedded(t *testing.T) {
	if !strings.Contains(guest.Prelude, guest.HostFunction) {
		t.Fatal("the prelude does not capture the host function")
	}
}

func TestSourcesAreFrozenGlobals(t *testing.T) {
	got := result(t, `return [Object.isFrozen(github), Object.keys(github).sort(), typeof github.search_issues, Object.getOwnPropertyDescriptor(globalThis, "github").writable]`)
	if got != `[true,["create_issue","get_issue","search_issues"],"function",false]` {
		t.Errorf("got %s", got)
	}
}

func TestCallsReachHostWithConnection(t *testing.T) {
	out, h := run(t, `return await github.search_issues({ q: "bug" }, { connection: "work" })`)
	if string(out.Result) != `{"address":"github.search_issues","args":{"q":"bug"}}` || len(h.calls) != 1 || h.calls[0].Connection != "work" {
		t.Errorf("got %s %+v %v", out.Result, h.calls, out.Error)
	}
	out, _ = run(t, `return await github.search_issues({}, { connection: 7 })`)
	if out.Error == nil || !strings.Contains(out.Error.Message, "options.connection must be a string") {
		t.Errorf("bad connection: %+v", out.Error)
	}
	out, _ = run(t, `return await github.search_issues("bug")`)
	if out.Error == nil || !strings.Contains(out.Error.Message, "expects one object argument") {
		t.Errorf("string args: %+v", out.Error)
	}
}

func TestUnknownToolNamesClosest(t *testing.T) {
	out, _ := run(t, `try { github.get_isue({}) } catch (e) { return [e instanceof TypeError, e.message] }`)
	want := `[true,"github.get_isue is not a tool of github; closest: github.get_issue, github.create_issue, github.search_issues. Use hub.search(query) to find tools."]`
	if string(out.Result) != want {
		t.Errorf("got %s", out.Result)
	}
	out, _ = run(t, `return await gitlab.search({})`)
	if out.Error == nil || !strings.Contains(out.Error.Message, "ReferenceError: gitlab is not defined") {
		t.Errorf("unknown namespace: %+v", out.Error)
	}
	if got := result(t, `return [typeof github.then, JSON.stringify(github)]`); got != `["undefined","{}"]` {
		t.Errorf("then/toJSON on a namespace: %s", got)
	}
}

func TestHub(t *testing.T) {
	out, h := run(t, `return [await hub.search("open issues"), await hub.describe("github.get_issue")]`)
	if out.Status != sandbox.StatusCompleted || len(h.calls) != 2 || h.calls[0].Address != sandbox.AddressSearch || string(h.calls[1].Args) != `{"target":"github.get_issue"}` {
		t.Errorf("got %s %+v", out.Result, h.calls)
	}
}

func TestToolError(t *testing.T) {
	got := result(t, `try { await github.get_issue({ n: 1 }) } catch (e) {
  return [e instanceof ToolError, e instanceof Error, e.name, e.code, e.address, e.status, e.hint, e.retryable, e.message] }`)
	if got != `[true,true,"ToolError","rate_limited","github.get_issue",429,"wait a minute",true,"slow down"]` {
		t.Errorf("got %s", got)
	}
}

func TestConsoleCaptured(t *testing.T) {
	out, _ := run(t, `console.log("a", 1, { b: [2, "c"] }, null, undefined); console.warn("w"); console.error(new TypeError("t")); return 0`)
	want := []string{`a 1 {"b": [2, "c"]} null undefined`, "[warn] w", "[error] TypeError: t"}
	if strings.Join(out.Logs, "\n") != strings.Join(want, "\n") {
		t.Errorf("logs = %q, want %q", out.Logs, want)
	}
}

func TestLogicalClock(t *testing.T) {
	got := result(t, `const t0 = Date.now(); const d = new Date().toISOString();
await new Promise(r => setTimeout(r, 1500));
return [t0, d, Date.now() - t0, performance.now(), typeof Date(), new Date(0).getTime(), Date.UTC(2020, 0, 1)]`)
	if got != `[1777636800000,"2026-05-01T12:00:00.000Z",1500,1500,"string",0,1577836800000]` {
		t.Errorf("got %s", got)
	}
}

func TestSeededRandomness(t *testing.T) {
	src := `return [Math.random(), crypto.randomUUID(), Array.from(crypto.getRandomValues(new Uint8Array(8)))]`
	a, b := result(t, src), result(t, src)
	if a != b {
		t.Errorf("same seed, different values: %s vs %s", a, b)
	}
	var v []any
	_ = json.Unmarshal([]byte(a), &v)
	if r := v[0].(float64); r < 0 || r >= 1 {
		t.Errorf("Math.random() = %v", r)
	}
	if u := v[1].(string); len(u) != 36 || u[14] != '4' || !strings.Contains("89ab", string(u[19])) {
		t.Errorf("randomUUID() = %q, want a version 4 UUID", u)
	}
	out, _ := run(t, `crypto.getRandomValues(new Uint8Array(70000))`)
	if out.Error == nil || !strings.Contains(out.Error.Message, "at most 65536") {
		t.Errorf("oversized getRandomValues: %+v", out.Error)
	}
}

func TestTimers(t *testing.T) {
	got := result(t, `const order = [];
setTimeout(() => order.push("b"), 20);
setTimeout((x) => order.push(x), 10, "a");
const c = setTimeout(() => order.push("never"), 15);
clearTimeout(c);
await new Promise(r => setTimeout(r, 30));
return order`)
	if got != `["a","b"]` {
		t.Errorf("got %s", got)
	}
	out, _ := run(t, `setTimeout(() => {}, 30001)`)
	if out.Error == nil || !strings.Contains(out.Error.Message, "exceeds the sandbox limit of 30000 ms") {
		t.Errorf("long timer: %+v", out.Error)
	}
}

func TestWebGlobals(t *testing.T) {
	got := result(t, `
const enc = new TextEncoder().encode("héllo ✓ 😀");
const dec = new TextDecoder().decode(enc);
const m = new Map([[1, { d: new Date(5) }]]);
const o = { m, list: [1, 2], self: null }; o.self = o;
const c = structuredClone(o);
return [Array.from(enc).length, dec, btoa("hello"), atob("aGVsbG8="), c !== o, c.self === c, c.m.get(1).d.getTime(), c.m !== m]`)
	if got != `[15,"héllo ✓ 😀","aGVsbG8=","hello",true,true,5,true]` {
		t.Errorf("got %s", got)
	}
	out, _ := run(t, `btoa("✓")`)
	if out.Error == nil || !strings.Contains(out.Error.Message, "outside of Latin1") {
		t.Errorf("btoa: %+v", out.Error)
	}
	out, _ = run(t, `structuredClone({ f() {} })`)
	if out.Error == nil || !strings.Contains(out.Error.Message, "could not be cloned") {
		t.Errorf("structuredClone(function): %+v", out.Error)
	}
}

func TestNotAvailable(t *testing.T) {
	got := result(t, `return ["fetch", "require", "process", "Buffer", "std", "os"].map(n => typeof globalThis[n])`)
	if got != `["undefined","undefined","undefined","undefined","undefined","undefined"]` {
		t.Errorf("got %s", got)
	}
	for src, want := range map[string]string{
		`eval("1")`:              "EvalError: eval is not available",
		`new Function("x")`:      "EvalError: Function is not available",
		`await import("qjs:os")`: "import() and import.meta are not available",
	} {
		out, _ := run(t, src)
		if out.Error == nil || !strings.Contains(out.Error.Message, want) {
			t.Errorf("%s: %+v, want %q", src, out.Error, want)
		}
	}
}

func TestPipelineRewritesRun(t *testing.T) {
	if got := result(t, "```ts\nexport default async function main(): Promise<number> {\n  const r: any = await github.search_issues({ q: 'x' });\n  return r.args.q.length;\n}\n```"); got != "1" {
		t.Errorf("got %s", got)
	}
	if got := result(t, "const n: number = 2;\nn * 21"); got != "42" {
		t.Errorf("got %s", got)
	}
}
