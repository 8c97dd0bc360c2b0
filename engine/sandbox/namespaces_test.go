package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestLazyNamespaceBehavesFrozen: a namespace's tools are read on first
// use, and from then on it behaves as the frozen object of its tools, however
// the code first touches it — including code that first replaced the
// built-ins the prelude could have used to fill it.
func TestLazyNamespaceBehavesFrozen(t *testing.T) {
	for _, tc := range []struct {
		name string
		js   string
		want string
	}{
		{"keys first", `return Object.keys(gh)`, `["echo","fail","get_issue","pause","search_issues","sleep"]`},
		{"isFrozen first", `return [Object.isFrozen(gh), Object.isExtensible(gh), Object.getPrototypeOf(gh)]`, `[true,false,null]`},
		{"in first", `return ["echo" in gh, "nope" in gh]`, `[true,false]`},
		{"descriptor first", `const d = Object.getOwnPropertyDescriptor(gh, "echo"); return [typeof d.value, d.writable, d.configurable]`, `["function",false,false]`},
		{"global descriptor", `const d = Object.getOwnPropertyDescriptor(globalThis, "gh"); return [typeof d.value, "get" in d, d.writable, d.configurable, d.enumerable]`, `["object",false,false,false,true]`},
		{"assign first", `try { gh.extra = 1 } catch (e) { return [e.name, Object.keys(gh).length, "extra" in gh] }`, `["TypeError",6,false]`},
		{"define first", `try { Object.defineProperty(gh, "extra", {value: 1}) } catch (e) { return [e.name, Object.keys(gh).includes("extra")] }`, `["TypeError",false]`},
		{"delete first", `try { delete gh.echo } catch (e) { return [e.name, typeof gh.echo] }`, `["TypeError","function"]`},
		{"setPrototypeOf first", `try { Object.setPrototypeOf(gh, {evil: 1}) } catch (e) { return [e.name, "evil" in gh, Object.getPrototypeOf(gh)] }`, `["TypeError",false,null]`},
		{"preventExtensions first", `Object.preventExtensions(gh); return Object.keys(gh).length`, `6`},
		{"unknown tool first", `try { gh.serch_issues } catch (e) { return e.message }`, `"gh.serch_issues is not a tool of gh; closest: gh.search_issues, gh.get_issue, gh.echo. Use hub.search(query) to find tools."`},
		{"built-ins replaced first", `JSON.parse = () => ({length: 1, 0: "evil"}); Proxy = function () { return {} };
			Reflect.ownKeys = () => ["evil"]; Object.freeze = (o) => o; String.prototype.split = () => ["evil"];
			return [Object.getOwnPropertyNames(gh).length, "evil" in gh, Object.isFrozen(gh), typeof gh.echo]`, `[6,false,true,"function"]`},
		{"traps on Object.prototype first", `const names = ["has", "ownKeys", "getOwnPropertyDescriptor", "defineProperty", "deleteProperty", "isExtensible", "preventExtensions", "getPrototypeOf", "setPrototypeOf", "apply", "construct"];
			let got = [];
			for (const k of names) Object.prototype[k] = function (t) { got.push(k); try { t.evil = 1; Object.freeze(t) } catch (e) {} return false };
			const r = [Object.getPrototypeOf(gh), Object.isFrozen(gh), "echo" in gh, "evil" in gh, typeof gh.echo];
			for (const k of names) delete Object.prototype[k];
			return [got, ...r]`, `[[],null,true,true,false,"function"]`},
		{"call first", `return await gh.echo({n: 1})`, `{"n":1}`},
		{"same object", `return gh === globalThis.gh && gh.echo === gh.echo`, `true`},
		{"stringify", `return JSON.stringify(gh)`, `"{}"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, _ := run(t, tc.js)
			if out.Status != StatusCompleted {
				t.Fatalf("status %s: %+v", out.Status, out.Error)
			}
			if diff := cmp.Diff(tc.want, string(out.Result)); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
		})
	}
}

// TestNamespacesFromASharedSet: the digest names the set's content, the set
// survives JSON (as a run's namespaces are stored), and a run given a
// NamespaceSet sees exactly its namespaces and tools.
func TestNamespacesFromASharedSet(t *testing.T) {
	m := map[string][]string{"gh": {"echo"}}
	for i := range 300 {
		m[fmt.Sprintf("ns%03d", i)] = []string{"a", "b", "c"}
	}
	set := NewNamespaces(m)
	if again := NewNamespaces(m); again.Digest() != set.Digest() {
		t.Errorf("the same map gave digests %s and %s", set.Digest(), again.Digest())
	}
	m["ns000"] = []string{"a", "b"}
	if NewNamespaces(m).Digest() == set.Digest() {
		t.Error("a tool fewer gave the same digest")
	}
	b, err := json.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	var back Namespaces
	if err := json.Unmarshal(b, &back); err != nil || back.Digest() != set.Digest() {
		t.Errorf("round trip through JSON: digest %s, want %s (%v)", back.Digest(), set.Digest(), err)
	}

	js := `const names = Object.keys(globalThis).filter((k) => /^ns\d+$/.test(k));
		return [names.length, Object.keys(ns123), await gh.echo({x: 1}), typeof other]`
	out := driver(t).Run(context.Background(), Request{JS: js, Host: &fakeHost{}, NamespaceSet: set})
	if out.Status != StatusCompleted {
		t.Fatalf("status %s: %+v", out.Status, out.Error)
	}
	if diff := cmp.Diff(`[300,["a","b","c"],{"x":1},"undefined"]`, string(out.Result)); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
}

// BenchmarkTrivialRunNamespaces: trivial code every 8 ms (a ready runtime
// waits) with 1, 20 and 400 namespaces of 25 tools each. A ready runtime has
// the namespaces of the last run installed, so the run does not pay for them.
//
//	go test ./engine/sandbox -run '^$' -bench TrivialRunNamespaces -benchtime 100x -count 3
func BenchmarkTrivialRunNamespaces(b *testing.B) {
	for _, n := range []int{1, 20, 400} {
		m := map[string][]string{}
		for i := range n {
			tools := make([]string, 25)
			for j := range tools {
				tools[j] = fmt.Sprintf("tool_%d", j)
			}
			m[fmt.Sprintf("ns%03d", i)] = tools
		}
		set := NewNamespaces(m)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			d := driver(b)
			var ds []time.Duration
			for b.Loop() {
				b.StopTimer()
				time.Sleep(8 * time.Millisecond)
				b.StartTimer()
				start := time.Now()
				out := d.Run(context.Background(), Request{JS: "return 1", Host: &fakeHost{}, NamespaceSet: set})
				ds = append(ds, time.Since(start))
				if out.Status != StatusCompleted {
					b.Fatal(out.Error)
				}
			}
			slices.Sort(ds)
			b.ReportMetric(float64(ds[len(ds)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(ds[len(ds)*9/10].Microseconds())/1000, "p90-ms")
		})
	}
}

// TestRunsAlternatingSetsSeeTheirOwn: runtimes kept ready carry the
// namespaces of the set the driver expects; runs with changing sets, and
// resumed runs with an older one, each see exactly their own.
func TestRunsAlternatingSetsSeeTheirOwn(t *testing.T) {
	d, err := New(Options{MemoryBytes: testMemoryBytes})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	a := NewNamespaces(map[string][]string{"alpha": {"one"}, "shared": {"x"}})
	b := NewNamespaces(map[string][]string{"beta": {"two"}, "shared": {"y"}})
	d.Expect(a)
	js := `return Object.keys(globalThis).filter((k) => ["alpha", "beta", "shared"].includes(k)).map((k) => k + ":" + Object.keys(globalThis[k]))`
	for i, step := range []struct {
		set    *Namespaces
		replay int
		want   string
	}{
		{a, 0, `["alpha:one","shared:x"]`},
		{a, 0, `["alpha:one","shared:x"]`},
		{b, 0, `["beta:two","shared:y"]`},
		{a, 1, `["alpha:one","shared:x"]`}, // a resume that started with a
		{b, 0, `["beta:two","shared:y"]`},
		{b, 0, `["beta:two","shared:y"]`},
		{a, 0, `["alpha:one","shared:x"]`},
	} {
		out := d.Run(context.Background(), Request{JS: js, Host: &fakeHost{}, NamespaceSet: step.set, ReplayCalls: step.replay})
		if out.Status != StatusCompleted {
			t.Fatalf("run %d: %s %+v", i, out.Status, out.Error)
		}
		if diff := cmp.Diff(step.want, string(out.Result)); diff != "" {
			t.Errorf("run %d saw (-want +got):\n%s", i, diff)
		}
	}
}
