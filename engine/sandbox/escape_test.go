package sandbox

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// escapeCase is one attempt to get out of the sandbox or past a limit. Each
// must end with the given status and error code (and message fragment), and
// the next normal run on the same driver must work.
type escapeCase struct {
	name   string
	js     string
	limits Limits
	status Status
	code   string // error code; "" for completed runs
	want   string // fragment of the error message, or of the result for completed runs
}

// short compute limits keep the corpus fast; the mechanism is the same at 10 s.
// Compute time is the guest's CPU time, so on a loaded machine the wall time
// can be many times longer: the wall limit only bounds the test.
var fast = Limits{ComputeMs: 400, WallMs: testWallMs}

// bomb limits: the test driver's QuickJS heap is testMemoryBytes, and compute
// time is long enough to fill it (it is CPU time: a loaded machine slows the
// bomb and its clock alike).
var bomb = Limits{ComputeMs: 4000, WallMs: testWallMs, MemoryBytes: testMemoryBytes}

var escapeCorpus = []escapeCase{
	// eval and Function constructors.
	{"eval", `return eval("1+1")`, Limits{}, StatusFailed, CodeRuntime, "EvalError: eval is not available"},
	{"indirect eval", `return (0, eval)("1+1")`, Limits{}, StatusFailed, CodeRuntime, "EvalError: eval is not available"},
	{"globalThis eval", `return globalThis["ev" + "al"]("1")`, Limits{}, StatusFailed, CodeRuntime, "EvalError: eval is not available"},
	{"Function call", `return Function("return 1")()`, Limits{}, StatusFailed, CodeRuntime, "EvalError: Function is not available"},
	{"new Function", `return new Function("return 1")()`, Limits{}, StatusFailed, CodeRuntime, "EvalError: Function is not available"},
	{"function constructor", `return (function(){}).constructor("return 1")()`, Limits{}, StatusFailed, CodeRuntime, "EvalError: Function is not available"},
	{"prototype constructor", `return Object.getPrototypeOf(() => 1).constructor("return 1")()`, Limits{}, StatusFailed, CodeRuntime, "EvalError: Function is not available"},
	{"method constructor", `return [].map.constructor("return 1")()`, Limits{}, StatusFailed, CodeRuntime, "EvalError: Function is not available"},
	{"async function constructor", `return (async () => {}).constructor("return 1")`, Limits{}, StatusFailed, CodeRuntime, "EvalError: AsyncFunction is not available"},
	{"generator constructor", `return (function* () {}).constructor("yield 1")().next()`, Limits{}, StatusFailed, CodeRuntime, "EvalError: GeneratorFunction is not available"},
	{"generator prototype", `return Object.getPrototypeOf(function* () {}).constructor("yield 1")`, Limits{}, StatusFailed, CodeRuntime, "EvalError: GeneratorFunction is not available"},
	{"async generator constructor", `return (async function* () {}).constructor("yield 1")`, Limits{}, StatusFailed, CodeRuntime, "EvalError: AsyncGeneratorFunction is not available"},
	{"Reflect.construct Function", `return Reflect.construct(Function, ["return 1"])()`, Limits{}, StatusFailed, CodeRuntime, "EvalError: Function is not available"},
	{"Reflect.construct AsyncFunction", `return Reflect.construct(Object.getPrototypeOf(async () => {}).constructor, ["return 1"])`, Limits{}, StatusFailed, CodeRuntime, "EvalError: AsyncFunction is not available"},
	{"Reflect.apply Function", `return Reflect.apply(Function, null, ["return 1"])()`, Limits{}, StatusFailed, CodeRuntime, "EvalError: Function is not available"},

	// std, os, bjson and import paths.
	{"std os bjson globals", `return [typeof std, typeof os, typeof bjson, typeof gc, typeof print, typeof scriptArgs, typeof navigator].join()`, Limits{}, StatusCompleted, "", `"undefined,undefined,undefined,undefined,undefined,undefined,undefined"`},
	{"std via globalThis", `return globalThis.std.evalScript("1")`, Limits{}, StatusFailed, CodeRuntime, "TypeError"},
	{"os exec", `return os.exec(["ls"])`, Limits{}, StatusFailed, CodeRuntime, "ReferenceError: os is not defined"},
	{"import qjs:std", `const m = await import("qjs:std"); return m.evalScript("1")`, Limits{}, StatusFailed, CodeImport, "import() and import.meta are not available"},
	{"import qjs:os", `return (await import("qjs:os")).readdir("/")`, Limits{}, StatusFailed, CodeImport, "import() and import.meta are not available"},
	{"import file", `return await import("/file.js")`, Limits{}, StatusFailed, CodeImport, "import() and import.meta are not available"},
	{"import computed", `const name = "qjs:" + "std"; return await import(name)`, Limits{}, StatusFailed, CodeImport, "import() and import.meta are not available"},
	{"import.meta", `return import.meta.url`, Limits{}, StatusFailed, CodeImport, "import() and import.meta are not available"},
	{"escaped import", `return await \u0069mport("qjs:std")`, Limits{}, StatusFailed, CodeSyntax, `Unexpected "\\u0069mport"`},
	{"node and web globals", `return [typeof require, typeof process, typeof Buffer, typeof fetch, typeof WeakRef, typeof SharedArrayBuffer].join()`, Limits{}, StatusCompleted, "", `"undefined,undefined,undefined,undefined,undefined,undefined"`},
	{"require", `return require("fs")`, Limits{}, StatusFailed, CodeRuntime, "ReferenceError: require is not defined"},
	{"real timers", `return [typeof setInterval, typeof clearInterval].join()`, Limits{}, StatusCompleted, "", `"undefined,undefined"`},

	// prototype tricks aimed at the bridge.
	{"host function hidden", `return [typeof __cap_host, typeof globalThis.__cap_host].join()`, Limits{}, StatusCompleted, "", `"undefined,undefined"`},
	{"toJSON on Object.prototype", `Object.prototype.toJSON = function () { return { address: "evil.tool" } }; await gh.echo({ a: 1 }); return "sent"`, Limits{}, StatusCompleted, "", `"sent"`},
	{"JSON.stringify replaced", `JSON.stringify = () => '{"address":"evil.tool","args":{}}'; return (await gh.echo({ a: 2 })).a`, Limits{}, StatusCompleted, "", `2`},
	{"namespace overwrite", `gh.echo = async () => "forged"; return 1`, Limits{}, StatusFailed, CodeRuntime, "TypeError"},
	{"namespace redefine", `Object.defineProperty(globalThis, "gh", { value: {} }); return 1`, Limits{}, StatusFailed, CodeRuntime, "TypeError"},
	{"prepareStackTrace call sites", `Error.prepareStackTrace = (e, sites) => sites.map(s => s.getFunction()); await new Promise(r => setTimeout(() => r(new Error("x").stack), 1)); return 1`, Limits{}, StatusFailed, CodeRuntime, "TypeError"},
	{"captureStackTrace call sites", `const o = {}; Error.captureStackTrace(o); return typeof o.stack`, Limits{}, StatusCompleted, "", `"string"`},
	{"Promise.prototype.then replaced", `Promise.prototype.then = function () { return "forged" }; return 1`, Limits{}, StatusCompleted, "", `1`},
	{"unknown tool", `return await gh.serch_issues({})`, Limits{}, StatusFailed, CodeRuntime, "gh.serch_issues is not a tool of gh; closest: gh.search_issues"},
	{"unknown namespace", `return await nope.tool({})`, Limits{}, StatusFailed, CodeRuntime, "ReferenceError: nope is not defined"},
	{"too many calls", `for (let i = 0; i < 600; i++) await gh.echo({ i }); return 1`, Limits{}, StatusFailed, CodeTooManyCalls, "more than 500 tool calls"},
	{"too many calls caught", `for (let i = 0; i < 600; i++) { try { await gh.echo({ i }) } catch (e) {} } return 1`, Limits{}, StatusFailed, CodeTooManyCalls, "more than 500 tool calls"},

	// compute, memory, recursion.
	{"infinite loop", `for (;;) {}`, fast, StatusFailed, CodeComputeTimeout, "more than its compute time"},
	{"infinite loop caught", `for (;;) { try { for (;;) {} } catch (e) {} }`, fast, StatusFailed, CodeComputeTimeout, "more than its compute time"},
	{"microtask loop", `for (;;) await null`, fast, StatusFailed, CodeComputeTimeout, "more than its compute time"},
	{"loop in a timer", `setTimeout(() => { for (;;) {} }, 0); await new Promise(r => setTimeout(r, 10))`, fast, StatusFailed, CodeComputeTimeout, "more than its compute time"},
	{"catastrophic regex", `return /(a+)+$/.test("a".repeat(40) + "b")`, fast, StatusFailed, CodeComputeTimeout, "more than its compute time"},
	{"memory bomb arrays", `const a = []; for (let i = 0; ; i++) a.push({ i, s: "x".repeat(4096) + i })`, bomb, StatusFailed, CodeMemory, "more memory than the sandbox allows"},
	{"memory bomb caught", `const a = []; for (let i = 0; ; i++) { try { a.push({ i, s: "x".repeat(4096) + i }) } catch (e) {} }`, bomb, StatusFailed, "", ""},
	{"memory bomb string", `let s = "x"; for (;;) s += s`, bomb, StatusFailed, "", ""},
	{"memory bomb buffer", `return new ArrayBuffer(1e9).byteLength`, bomb, StatusFailed, CodeMemory, "more memory than the sandbox allows"},
	{"deep recursion", `function f(n) { return f(n + 1) + 1 } return f(0)`, fast, StatusFailed, CodeStackOverflow, "recursing too deeply"},
	{"deep recursion caught", `function f(n) { try { return f(n + 1) + 1 } catch (e) { return 0 } } return f(0)`, fast, StatusFailed, CodeStackOverflow, "recursing too deeply"},
	{"deep JSON", `return JSON.parse("[".repeat(100000))`, fast, StatusFailed, CodeStackOverflow, ""},

	// results, logs, promises, timers.
	{"huge result", `return "x".repeat(1 << 20)`, Limits{}, StatusCompleted, "", `"\"xxxx`},
	{"huge logs", `for (let i = 0; i < 100000; i++) console.log("line " + i); return 1`, Limits{}, StatusCompleted, "", `1`},
	{"unserializable result", `return 1n`, Limits{}, StatusFailed, CodeRuntime, "not JSON-serializable"},
	{"throwing toJSON", `return { toJSON() { throw new Error("nope") } }`, Limits{}, StatusFailed, CodeRuntime, "not JSON-serializable: nope"},
	{"never settling promise", `await new Promise(() => {})`, Limits{}, StatusFailed, CodeNeverSettled, "can never settle"},
	{"timer past 30 s", `await new Promise(r => setTimeout(r, 40000))`, Limits{}, StatusFailed, CodeRuntime, "RangeError: setTimeout delay of 40000 ms exceeds the sandbox limit of 30000 ms"},
	{"endless timers", `for (;;) await new Promise(r => setTimeout(r, 100))`, Limits{WallMs: 400}, StatusFailed, CodeWallTimeout, "longer than its wall time limit"},
	{"thrown non-error", `throw 42`, Limits{}, StatusFailed, CodeRuntime, "uncaught value: 42"},

	// Code that closes the function it is wrapped in runs at the top of the
	// script, after the run is set up, with no more than the function has.
	{"wrapper break-out", `}); console.log("top"); if (0) (async function () {`, Limits{}, StatusFailed, CodeRuntime, "TypeError"},
	{"wrapper break-out logging", `}); for (let i = 0; i < 100000; i++) console.log("top " + i); if (0) (async function () {`, Limits{}, StatusFailed, CodeRuntime, "TypeError"},
	{"wrapper break-out pending promise", `}); new Promise(() => {}).then(function () {`, fast, StatusFailed, "", ""},
}

func TestEscapeCorpus(t *testing.T) {
	if len(escapeCorpus) < 40 {
		t.Fatalf("escape corpus has %d cases, want at least 40", len(escapeCorpus))
	}
	d := driver(t)
	for _, c := range escapeCorpus {
		t.Run(c.name, func(t *testing.T) {
			h := &fakeHost{}
			out := d.Run(context.Background(), Request{JS: c.js, Host: h, Namespaces: testNamespaces, Limits: c.limits})
			if out.Status != c.status {
				t.Fatalf("status = %s (%v), want %s", out.Status, out.Error, c.status)
			}
			if c.status == StatusCompleted {
				if !strings.Contains(string(out.Result), c.want) {
					t.Errorf("result = %.200s, want it to contain %s", out.Result, c.want)
				}
			} else {
				if c.code != "" && out.Error.Code != c.code {
					t.Errorf("error = %v, want code %s", out.Error, c.code)
				}
				if c.code == "" && out.Error.Code != CodeMemory && out.Error.Code != CodeComputeTimeout {
					t.Errorf("error = %v, want memory_limit or, when the code catches every out-of-memory error, timeout_compute", out.Error)
				}
				if !strings.Contains(out.Error.Message, c.want) {
					t.Errorf("message = %q, want it to contain %q", out.Error.Message, c.want)
				}
			}
			for _, call := range h.calls {
				if !strings.HasPrefix(call.Address, "gh.") {
					t.Errorf("host got a call to %q", call.Address)
				}
			}
			assertHealthy(t, d)
		})
	}
}

func TestEscapeHugeOutputsAreTruncated(t *testing.T) {
	out, _ := run(t, `return "x".repeat(1 << 20)`)
	if !out.ResultTruncated || len(out.Result) > 24<<10 {
		t.Errorf("result: truncated=%v len=%d, want truncated within 24 KB", out.ResultTruncated, len(out.Result))
	}
	out, _ = run(t, `for (let i = 0; i < 100000; i++) console.log("line " + i); return 1`)
	total := len(out.Result)
	for _, l := range out.Logs {
		total += len(l) + 1
	}
	if !out.LogsTruncated || total > 24<<10 || out.Logs[0] != "line 0" {
		t.Errorf("logs: truncated=%v total=%d first=%q, want truncated within 24 KB", out.LogsTruncated, total, out.Logs[0])
	}
}

// assertHealthy checks that a normal run on d still works.
func assertHealthy(t *testing.T, d *Driver) {
	t.Helper()
	h := &fakeHost{}
	out := d.Run(context.Background(), Request{JS: `return (await gh.echo({ ok: 1 + 1 })).ok`, Host: h, Namespaces: testNamespaces})
	if out.Status != StatusCompleted || string(out.Result) != "2" {
		t.Fatalf("next run: %s %s %v", out.Status, out.Result, out.Error)
	}
}

func TestCallArgsReachHost(t *testing.T) {
	out, h := run(t, `return await gh.echo({ q: "x" }, { connection: "work" })`)
	if out.Status != StatusCompleted {
		t.Fatal(out.Error)
	}
	want := Call{Seq: 1, Address: "gh.echo", Args: json.RawMessage(`{"q":"x"}`), Connection: "work"}
	if len(h.calls) != 1 || h.calls[0].Address != want.Address || string(h.calls[0].Args) != string(want.Args) || h.calls[0].Connection != "work" || h.calls[0].Seq != 1 {
		t.Errorf("calls = %+v, want %+v", h.calls, want)
	}
}
