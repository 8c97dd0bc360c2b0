package code

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/sandbox"
	"github.com/google/go-cmp/cmp"
)

func TestOneCallForms(t *testing.T) {
	type got struct {
		NS, Tool, Args string
		OK             bool
	}
	for _, tc := range []struct {
		code string
		want got
	}{
		{`return await github.getIssue({owner: "acme", repo: 'web', number: 7});`, got{"github", "getIssue", `{"owner":"acme","repo":"web","number":7}`, true}},
		{"  return await mem.read_graph()\n", got{"mem", "read_graph", `{}`, true}},
		{`return mem.read_graph( )`, got{"mem", "read_graph", `{}`, true}},
		{`return await gh["list-issues"]({state: "open",})`, got{"gh", "list-issues", `{"state":"open"}`, true}},
		{"return await\n  gh . search ({\n    q: \"a\\tb\\u00e9\",\n    tags: [1, 2.5, -3, true, null, [],],\n    o: {\"x y\": {}},\n  });\n", got{"gh", "search", `{"q":"a\tbé","tags":[1,2.5,-3,true,null,[]],"o":{"x y":{}}}`, true}},
		{`return await gh.x({s: "\u0001 \" \\ / \n"})`, got{"gh", "x", `{"s":"\u0001 \" \\ / \n"}`, true}},
		// Left to the sandbox.
		{`return await gh.x({a: 1}, {connection: "work"})`, got{}},
		{`return await gh.x({a: 1e3})`, got{}},
		{`return await gh.x({a: 1.50})`, got{}},
		{`return await gh.x({a: 12345678901234567})`, got{}},
		{`return await gh.x({a: -0})`, got{}},
		{`return await gh.x({a: .5})`, got{}},
		{`return await gh.x({a: 0x10})`, got{}},
		{`return await gh.x({a: 1, a: 2})`, got{}},
		{`return await gh.x({"1": 1, b: 2})`, got{}},
		{`return await gh.x({__proto__: {a: 1}})`, got{}},
		{`return await gh.x({"__proto__": {a: 1}})`, got{}},
		{`return await gh.x({a: undefined})`, got{}},
		{`return await gh.x({a: x})`, got{}},
		{`return await gh.x({a: "\x41"})`, got{}},
		{`return await gh.x({a: "\ud83d\ude00"})`, got{}},
		{`return await gh.x({a: ` + "`t`" + `})`, got{}},
		{`return await gh.x({a: 1}) // why`, got{}},
		{`return await gh.x({a: 1}); return 2`, got{}},
		{`return (await gh.x({a: 1})).items`, got{}},
		{`await gh.x({a: 1})`, got{}},
		{`return await gh.x([1])`, got{}},
		{`return await gh.x("a")`, got{}},
		{`return await gh.x({a: [1,,2]})`, got{}},
		{`returnawait gh.x()`, got{}},
		{"return\nawait gh.x()", got{}},
		{"return \t\n gh.x()", got{}},
		{"return await\n gh\n.x\n({a: 1}\n)\n;\n", got{"gh", "x", `{"a":1}`, true}},
		{`return awaitgh.x()`, got{"awaitgh", "x", `{}`, true}},
		{`return await gh.x({a: "é"})`, got{"gh", "x", `{"a":"é"}`, true}},
		// The value named first.
		{"const issue = await github.getIssue({number: 7});\nreturn issue;", got{"github", "getIssue", `{"number":7}`, true}},
		{"let r = await gh[\"x\"]()\nreturn r", got{"gh", "x", `{}`, true}},
		{"var r=await gh.x({a: 1});return r", got{"gh", "x", `{"a":1}`, true}},
		{"const r = await\n gh.x()\r\n\n  return   r  ;\n", got{"gh", "x", `{}`, true}},
		{"const r = await gh.x() return r", got{}},           // no semicolon, no line break
		{"const r = await gh.x();\nreturn\nr", got{}},        // returns undefined
		{"const r = gh.x();\nreturn r", got{}},               // a promise, not awaited
		{"const r = await gh.x();\nreturn s", got{}},         // another name
		{"const gh = await gh.x();\nreturn gh", got{}},       // a ReferenceError
		{"const yield = await gh.x();\nreturn yield", got{}}, // a reserved word
		{"const r = await gh.x();\nreturn r.items", got{}},
		{"const r = await gh.x()\n.items;\nreturn r", got{}},
		{"const r = await gh.x();\nconsole.log(r);\nreturn r", got{}},
		{"const {r} = await gh.x();\nreturn r", got{}},
		{"constr = await gh.x();\nreturn constr", got{}},
	} {
		ns, tool, args, ok := OneCall(tc.code)
		if d := cmp.Diff(tc.want, got{ns, tool, string(args), ok}); d != "" {
			t.Errorf("OneCall(%q) (-want +got):\n%s", tc.code, d)
		}
	}
}

var (
	jsOnce   sync.Once
	jsDriver *sandbox.Driver
	jsErr    error
)

// runJS runs code in the sandbox and returns the string it returns.
func runJS(t testing.TB, code string) (string, bool) {
	t.Helper()
	jsOnce.Do(func() { jsDriver, jsErr = sandbox.New(sandbox.Options{}) })
	if jsErr != nil {
		t.Fatal(jsErr)
	}
	out := jsDriver.Run(context.Background(), sandbox.Request{JS: code})
	if out.Status != sandbox.StatusCompleted {
		return "", false
	}
	var s string
	if err := json.Unmarshal(out.Result, &s); err != nil {
		t.Fatalf("%s returned %s", code, out.Result)
	}
	return s, true
}

var literals = []string{
	`{}`, `{a: 1}`, `{a: 'x', "b": "y", c: [1, 2, 3,], d: {e: null, f: false, g: true},}`,
	`{s: "\u0000\u001f\u007f\u2028\u2029\ufffd \\ \" / \b\f\n\r\t"}`, `{s: 'it\'s'}`, `{s: "日本語 😀"}`,
	`{n: 0, m: -1, k: 999999999999999, l: -999999999999999}`,
	`{d: 0.1, e: 2.5, f: 123456.789, g: 0.000001, h: 0.30000000000000004, i: -0.5}`,
	`{$x: 1, _y: 2, Z9: 3}`, `{"": "", " ": " "}`, `{"a-b": {"c.d": [[[]]]}}`,
	`{x: "\/"}`, `{u: "\u00e9\u4e2d"}`,
}

// The arguments OneCall reads are those JavaScript would send: for each
// literal it reads, JSON.stringify in QuickJS gives the same bytes.
func TestOneCallAgreesWithJavaScript(t *testing.T) {
	for _, l := range literals {
		_, _, args, ok := OneCall("return await ns.tool(" + l + ")")
		if !ok {
			t.Errorf("OneCall did not read %s", l)
			continue
		}
		want, ok := runJS(t, "return JSON.stringify("+l+")")
		if !ok || want != string(args) {
			t.Errorf("%s: OneCall %s, JavaScript %s", l, args, want)
		}
	}
}

var results = []string{
	`null`, `1`, `"text"`, `[]`, `{}`, `{"content":[{"type":"text","text":"Echo: hi"}],"isError":false}`,
	`{"a": 1, "b": [true, false, null], "c": {"d": "e"}}`, ` { "spaced" : [ 1 , 2 ] } `,
	`{"s":"\u0000\u001F\u007f\u2028 \ud7ff \\ \" \/ \b\f\n\r\t é 😀"}`, `{"__proto__": {"x": 1}, "y": 2}`,
	`{"n": 0.1, "m": -2.5, "k": 123456789012345, "z": 0, "neg": -7}`,
	// Not read: JavaScript prints these otherwise.
	`{"big": 12345678901234567890}`, `{"e": 1e3}`, `{"f": 1.0}`, `{"neg0": -0}`,
	`{"1": "a", "b": 2}`, `{"a": 1, "a": 2}`, `{"s": "\ud800"}`, `[1,]`, `{'a': 1}`,
}

// Restringify is JSON.stringify(JSON.parse(j)) in QuickJS wherever it reads j.
func TestRestringifyAgreesWithJavaScript(t *testing.T) {
	read := 0
	for _, r := range results {
		got, ok := Restringify([]byte(r))
		if !ok {
			continue
		}
		read++
		want, jsOK := runJS(t, "return JSON.stringify(JSON.parse("+jsString(r)+"))")
		if !jsOK || want != string(got) {
			t.Errorf("%s: Restringify %s, JavaScript %s", r, got, want)
		}
	}
	if read != 11 {
		t.Errorf("Restringify read %d of the results, want the first 11", read)
	}
}

func FuzzOneCallArgs(f *testing.F) {
	for _, l := range literals {
		f.Add(l)
	}
	f.Fuzz(func(t *testing.T, l string) {
		_, _, args, ok := OneCall("return await ns.tool(" + l + ")")
		if !ok {
			return
		}
		if strings.Trim(l, " \t\r\n") == "" { // no argument: the bridge sends {}
			if string(args) != "{}" {
				t.Errorf("%q: OneCall %s, want {}", l, args)
			}
			return
		}
		want, jsOK := runJS(t, "return JSON.stringify("+l+")")
		if !jsOK || want != string(args) {
			t.Errorf("%q: OneCall %s, JavaScript %q (ran: %v)", l, args, want, jsOK)
		}
	})
}

func FuzzRestringify(f *testing.F) {
	for _, r := range results {
		f.Add(r)
	}
	f.Fuzz(func(t *testing.T, r string) {
		got, ok := Restringify([]byte(r))
		if !ok {
			return
		}
		want, jsOK := runJS(t, "return JSON.stringify(JSON.parse("+jsString(r)+"))")
		if !jsOK || want != string(got) {
			t.Errorf("%q: Restringify %s, JavaScript %q (ran: %v)", r, got, want, jsOK)
		}
	})
}

// jsString is s as a JavaScript string literal (JSON's, which JavaScript reads).
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// captureHost answers every call with {"ok":1} and keeps them.
type captureHost struct{ calls []sandbox.Call }

func (c *captureHost) CallTool(_ context.Context, call sandbox.Call) sandbox.CallResult {
	c.calls = append(c.calls, call)
	return sandbox.CallResult{Value: json.RawMessage(`{"ok":1}`)}
}

// FuzzOneCallCode: code OneCall reads does, in the sandbox, make exactly
// that one call, with those argument bytes, and return its value, for a
// namespace a hub could have (ValidNamespace, not ShadowsGlobal).
func FuzzOneCallCode(f *testing.F) {
	for _, c := range []string{
		`return await github.getIssue({owner: "acme", repo: 'web', number: 7});`,
		"return await\n gh\n.x\n({a: 1}\n)\n;\n", `return gh["list-issues"]({state: "open",})`,
		"return\nawait gh.x()", `return await gh.x({a: [1, {b: "c"}]})`,
		"const r = await gh.x({a: 1})\nreturn r", "let gh = await gh.x();\nreturn gh",
		"var r = await gh.x() return r", "const r = await gh.x();\nreturn\nr",
	} {
		f.Add(c)
	}
	f.Fuzz(func(t *testing.T, code string) {
		ns, tool, args, ok := OneCall(code)
		if !ok || model.ValidNamespace(ns) != nil || model.ShadowsGlobal(ns) {
			return
		}
		jsOnce.Do(func() { jsDriver, jsErr = sandbox.New(sandbox.Options{}) })
		if jsErr != nil {
			t.Fatal(jsErr)
		}
		h := &captureHost{}
		out := jsDriver.Run(context.Background(), sandbox.Request{JS: code, Host: h, Namespaces: map[string][]string{ns: {tool}}})
		want := []sandbox.Call{{Seq: 1, Address: ns + "." + tool, Args: args}}
		if out.Status != sandbox.StatusCompleted || string(out.Result) != `{"ok":1}` || !cmp.Equal(h.calls, want) {
			t.Errorf("%q: OneCall read %s.%s(%s); the sandbox: %s %s %+v, calls %+v", code, ns, tool, args, out.Status, out.Result, out.Error, h.calls)
		}
	})
}

// A result of many keys is read in linear time, and a key given twice among
// them is still found.
func TestRestringifyManyKeys(t *testing.T) {
	var b strings.Builder
	b.WriteString("{")
	for i := range 5000 {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"k%d":%d`, i, i)
	}
	many := b.String() + "}"
	if out, ok := Restringify([]byte(many)); !ok || len(out) != len(many) {
		t.Fatalf("5,000 keys: ok %v, %d bytes of %d", ok, len(out), len(many))
	}
	if _, ok := Restringify([]byte(many[:len(many)-1] + `,"k4321":1}`)); ok {
		t.Error("a key given twice among 5,000 was read")
	}
}

func BenchmarkRestringifyManyKeys(b *testing.B) {
	var s strings.Builder
	s.WriteString("{")
	for i := range 5000 {
		if i > 0 {
			s.WriteString(",")
		}
		fmt.Fprintf(&s, `"k%d":%d`, i, i)
	}
	j := []byte(s.String() + "}")
	b.ReportAllocs()
	for b.Loop() {
		Restringify(j)
	}
}
