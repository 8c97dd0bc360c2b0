package run_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/approval"
	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/run"
	"github.com/capabilities-sh/capabilities/engine/source"
	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/capabilities-sh/capabilities/store"
)

type fixture struct {
	h     *hub.Hub
	dir   string
	calls string // the scripted upstream's call log
}

// newHub makes a hub over a file store with the scripted upstream as
// "up" (echo, sleep: reads; record: a write) and server-memory as "memory",
// every tool reviewed.
func newHub(t *testing.T, limits run.Limits, upEnv ...string) *fixture {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "hub")
	st, _, err := store.Init(dir)
	if err != nil {
		t.Fatal(err)
	}
	return newHubOn(t, st, dir, limits, upEnv...)
}

// newHubOn is newHub over st (its folder dir, if it has one).
func newHubOn(t *testing.T, st store.Store, dir string, limits run.Limits, upEnv ...string) *fixture {
	t.Helper()
	f := &fixture{dir: dir, calls: filepath.Join(t.TempDir(), "calls.jsonl")}
	f.h = hub.New(st, hub.Options{Run: limits, Source: source.Options{ConnectTimeout: testenv.Timeout(source.DefaultConnectTimeout)}})
	t.Cleanup(f.h.Close)
	ctx := context.Background()
	add := func(req hub.AddRequest) {
		p, err := f.h.Propose(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.h.Accept(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	env := map[string]string{"SCRIPTED_CALLS": f.calls, "SCRIPTED_TOOLS": "4"}
	for _, kv := range upEnv {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	add(hub.AddRequest{Namespace: "up", Command: testenv.Scripted(t), Env: env})
	add(hub.AddRequest{Namespace: "memory", Command: testenv.Memory(t), Env: map[string]string{"MEMORY_FILE_PATH": filepath.Join(t.TempDir(), "memory.jsonl")}})
	r, err := f.h.PendingReview(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.h.AcceptReview(ctx, r, nil, "test"); err != nil {
		t.Fatal(err)
	}
	return f
}

// upstreamCalls reads the scripted upstream's log: one line per call.
func (f *fixture) upstreamCalls(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(f.calls)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(data)), "\n")
}

func TestReadsRunWritesPauseAndResumeOnce(t *testing.T) {
	f := newHub(t, run.Limits{})
	ctx := context.Background()
	code := `
const a = await up.echo({message: "one"});
const g = await memory.readGraph({});
await up.record({item: a});
const b = await up.echo({message: "two"});
return {a, b, entities: g.entities.length, at: Date.now(), r: Math.random()};`
	env, err := f.h.Execute(ctx, code)
	if err != nil {
		t.Fatal(err)
	}
	if env.Status != "awaiting_approval" || len(env.Pending) != 1 || env.Pending[0].Address != "up.record" {
		t.Fatalf("envelope %+v, want awaiting_approval on up.record", env)
	}
	if got := len(f.upstreamCalls(t)); got != 1 {
		t.Fatalf("upstream saw %d calls before the pause, want 1", got)
	}
	// Resume before a decision: the same pending envelope, nothing runs.
	again, err := f.h.Resume(ctx, env.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if again.Status != "awaiting_approval" || len(f.upstreamCalls(t)) != 1 {
		t.Fatalf("resume before a decision ran something: %+v", again)
	}
	if _, err := approval.Record(ctx, f.h.Store(), approval.Request{RunID: env.RunID, Choice: model.ChoiceOnce, Channel: approval.ChannelCLI}); err != nil {
		t.Fatal(err)
	}
	done, err := f.h.Resume(ctx, env.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if done.Status != "completed" {
		t.Fatalf("after approval: %+v", done)
	}
	calls := f.upstreamCalls(t)
	if len(calls) != 3 {
		t.Fatalf("upstream saw %d calls, want exactly 3 (echo, record, echo): %v", len(calls), calls)
	}
	if len(done.Calls) != 4 {
		t.Errorf("envelope lists %d calls, want 4", len(done.Calls))
	}
	// Determinism: the logical clock and the seeded random are the same on
	// every attempt, so the run reads them as it did before the pause.
	eng, _ := f.h.Runs()
	rec, _ := eng.Get(ctx, env.RunID)
	var res struct {
		At int64   `json:"at"`
		R  float64 `json:"r"`
	}
	if err := json.Unmarshal(done.Result, &res); err != nil {
		t.Fatal(err)
	}
	if res.At != rec.Clock.UnixMilli() {
		t.Errorf("Date.now() = %d, want the run's logical clock %d", res.At, rec.Clock.UnixMilli())
	}
}

func TestSameSeedSameResultAndJournal(t *testing.T) {
	f := newHub(t, run.Limits{})
	ctx := context.Background()
	code := `
const xs = [];
for (let i = 0; i < 3; i++) xs.push(await up.echo({message: String(Math.random())}));
return {xs, uuid: crypto.randomUUID(), now: new Date().toISOString()};`
	env, err := f.h.Execute(ctx, code)
	if err != nil || env.Status != "completed" {
		t.Fatalf("%v %+v", err, env)
	}
	eng, _ := f.h.Runs()
	first, _ := eng.Journal(ctx, env.RunID)
	// Re-run the same record from scratch: same seed and clock, the journal
	// answers every call, the result is identical and nothing is called.
	rec, _ := eng.Get(ctx, env.RunID)
	before := len(f.upstreamCalls(t))
	rec.Status = model.RunRunning
	rec.Result = nil
	if err := f.h.Store().Put(ctx, store.Runs, rec.ID, rec); err != nil {
		t.Fatal(err)
	}
	replayed, err := eng.Resume(ctx, env.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if string(replayed.Result) != string(env.Result) {
		t.Errorf("replay result %s, first %s", replayed.Result, env.Result)
	}
	second, _ := eng.Journal(ctx, env.RunID)
	if len(second) != len(first) {
		t.Errorf("journal grew from %d to %d on replay", len(first), len(second))
	}
	if after := len(f.upstreamCalls(t)); after != before {
		t.Errorf("replay called the upstream %d more times", after-before)
	}
}

func TestDivergenceFailsTheRun(t *testing.T) {
	f := newHub(t, run.Limits{})
	ctx := context.Background()
	env, err := f.h.Execute(ctx, `await up.echo({message: "a"}); await up.record({item: "b"}); return 1`)
	if err != nil || env.Status != "awaiting_approval" {
		t.Fatalf("%v %+v", err, env)
	}
	// Someone edits the code-path: the journal now says call 1 went elsewhere.
	journal := filepath.Join(f.dir, "runs", env.RunID+".journal.jsonl")
	data, _ := os.ReadFile(journal)
	if err := os.WriteFile(journal, []byte(strings.Replace(string(data), `"address":"up.echo"`, `"address":"up.sleep"`, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := approval.Record(ctx, f.h.Store(), approval.Request{RunID: env.RunID, Choice: model.ChoiceOnce, Channel: approval.ChannelCLI}); err != nil {
		t.Fatal(err)
	}
	out, err := f.h.Resume(ctx, env.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != "failed" || out.Error == nil || out.Error.Code != "divergence" {
		t.Fatalf("resume after the journal changed: %+v", out)
	}
	if n := len(f.upstreamCalls(t)); n != 1 {
		t.Errorf("a diverged run called upstream: %d calls", n)
	}
}

// TestDivergenceFromTheDecisionSaysWhat: the journal lost the read a
// person's decision was made after (a crash lost its unsynced line), the
// read answers otherwise now, and the approved write comes with other
// arguments: the run fails with divergence, the write is not made, and the
// message says the arguments differ from what the person decided on (it
// said "made call 2 to memory.createEntities, but the journal has
// memory.createEntities there").
func TestDivergenceFromTheDecisionSaysWhat(t *testing.T) {
	f := newHub(t, run.Limits{})
	ctx := context.Background()
	env, err := f.h.Execute(ctx, `const g = await memory.readGraph({});
await memory.createEntities({entities: [{name: "n" + g.entities.length, entityType: "t", observations: []}]});
return 1`)
	if err != nil || env.Status != "awaiting_approval" {
		t.Fatalf("%v %+v", err, env)
	}
	if err := os.WriteFile(filepath.Join(f.dir, "runs", env.RunID+".journal.jsonl"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := f.h.Call(ctx, "memory.createEntities", json.RawMessage(`{"entities":[{"name":"other","entityType":"t","observations":[]}]}`), ""); err != nil {
		t.Fatal(err)
	}
	if _, err := approval.Record(ctx, f.h.Store(), approval.Request{RunID: env.RunID, Choice: model.ChoiceOnce, Channel: approval.ChannelCLI}); err != nil {
		t.Fatal(err)
	}
	out, err := f.h.Resume(ctx, env.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != "failed" || out.Error == nil || out.Error.Code != "divergence" || !strings.Contains(out.Error.Message, "but a person decided on that call with other arguments") {
		t.Fatalf("resume with other arguments than decided: %+v %+v", out, out.Error)
	}
	g, err := f.h.Call(ctx, "memory.readGraph", json.RawMessage(`{}`), "")
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(g); strings.Contains(string(b), `n1`) || strings.Contains(string(b), `n0`) {
		t.Errorf("the write was made: %s", b)
	}
}

func TestParallelCallsRunInParallel(t *testing.T) {
	f := newHub(t, run.Limits{})
	ctx := context.Background()
	// Start the upstream first: its start is not what is measured.
	if _, err := f.h.Call(ctx, "up.echo", json.RawMessage(`{"message":"warm"}`), ""); err != nil {
		t.Fatal(err)
	}
	sleep := testenv.Timeout(time.Second)
	start := time.Now()
	env, err := f.h.Execute(ctx, fmt.Sprintf(`return (await Promise.all([1,2,3,4,5,6,7,8].map(() => up.sleep({ms: %d})))).length`, sleep.Milliseconds()))
	if err != nil || env.Status != "completed" || string(env.Result) != "8" {
		t.Fatalf("%v %+v", err, env)
	}
	// Eight calls one after another would take 8 sleeps; in parallel one
	// sleep plus a little. The bound sits halfway, far from both.
	if d := time.Since(start); d >= 4*sleep {
		t.Errorf("8 parallel calls of %v took %v: they did not run in parallel", sleep, d)
	}
}

func TestRunLimits(t *testing.T) {
	// The upstream timeout bounds each call, and the upstream is started
	// before it applies: starting node is slow on a loaded machine, and
	// what is tested here is the calls.
	timeout := testenv.Timeout(time.Second)
	f := newHub(t, run.Limits{MaxCalls: 5, UpstreamTimeout: timeout})
	ctx := context.Background()
	if _, err := f.h.Call(ctx, "up.echo", json.RawMessage(`{"message":"warm"}`), ""); err != nil {
		t.Fatal(err)
	}
	if _, err := f.h.Execute(ctx, strings.Repeat("x", 64<<10+1)); err == nil || !strings.Contains(err.Error(), "limit is 65536") {
		t.Errorf("65 KB of code: %v", err)
	}
	env, err := f.h.Execute(ctx, `for (let i = 0; i < 10; i++) await up.echo({message: "m" + i}); return "done"`)
	if err != nil {
		t.Fatal(err)
	}
	if env.Status != "failed" || env.Error.Code != "tool_error" || !strings.Contains(env.Error.Message, "limit") {
		t.Errorf("the 6th call of a 5-call run: %+v %+v", env.Status, env.Error)
	}
	env, err = f.h.Execute(ctx, fmt.Sprintf(`try { await up.sleep({ms: %d}); return "no timeout" } catch (e) { return e.code }`, (10*timeout).Milliseconds()))
	if err != nil {
		t.Fatal(err)
	}
	if string(env.Result) != `"upstream_timeout"` {
		t.Errorf("a call 10 times longer than the upstream timeout (%v): %s %+v", timeout, env.Result, env.Error)
	}
}

func TestPrune(t *testing.T) {
	f := newHub(t, run.Limits{})
	ctx := context.Background()
	env, err := f.h.Execute(ctx, `return 1`)
	if err != nil {
		t.Fatal(err)
	}
	eng, _ := f.h.Runs()
	eng.Wait() // the automatic prune the execute started, before the run is aged
	if n, err := eng.Prune(ctx); err != nil || n != 0 {
		t.Fatalf("Prune of a fresh run = %d, %v", n, err)
	}
	rec, _ := eng.Get(ctx, env.RunID)
	rec.UpdatedAt = time.Now().Add(-8 * 24 * time.Hour)
	if err := f.h.Store().Put(ctx, store.Runs, rec.ID, rec); err != nil {
		t.Fatal(err)
	}
	if n, err := eng.Prune(ctx); err != nil || n != 1 {
		t.Fatalf("Prune of an 8-day-old run = %d, %v", n, err)
	}
	if _, err := eng.Get(ctx, env.RunID); err == nil {
		t.Error("the pruned run is still there")
	}

	// A run 8 days old that still waits for a person (its approval not
	// expired) stays; once its approval has expired, it goes.
	paused, err := f.h.Execute(ctx, `return await up.record({item: "old"})`)
	if err != nil || paused.Status != "awaiting_approval" {
		t.Fatalf("a write: %+v, %v; want awaiting_approval", paused, err)
	}
	age := func(expires time.Time) {
		t.Helper()
		rec, err := eng.Get(ctx, paused.RunID)
		if err != nil {
			t.Fatal(err)
		}
		rec.UpdatedAt = time.Now().Add(-8 * 24 * time.Hour)
		for i := range rec.Pending {
			rec.Pending[i].ExpiresAt = expires
		}
		if err := f.h.Store().Put(ctx, store.Runs, rec.ID, rec); err != nil {
			t.Fatal(err)
		}
	}
	age(time.Now().Add(time.Hour))
	if n, err := eng.Prune(ctx); err != nil || n != 0 {
		t.Fatalf("Prune of an old run still waiting for a person = %d, %v; want it kept", n, err)
	}
	age(time.Now().Add(-time.Hour))
	if n, err := eng.Prune(ctx); err != nil || n != 1 {
		t.Fatalf("Prune of an old run whose approval expired = %d, %v; want it deleted", n, err)
	}
}

// slowRunList is a store whose listing of runs (the prune's first step)
// says it began on listing and waits until release is closed.
type slowRunList struct {
	store.Store
	listing chan struct{}
	release chan struct{}
}

func (s slowRunList) List(ctx context.Context, kind store.Kind) ([]string, error) {
	if kind == store.Runs {
		select {
		case s.listing <- struct{}{}:
		default:
		}
		<-s.release
	}
	return s.Store.List(ctx, kind)
}

// TestAutomaticPrune: the prune a process starts with its first execute
// reads the run records in the background (the execute answers without
// waiting for it) and is done when the hub closes; a process finding the
// hub's runs pruned less than an hour ago, by any process, does not prune.
func TestAutomaticPrune(t *testing.T) {
	f := newHub(t, run.Limits{})
	ctx := context.Background()
	st := f.h.Store()
	eng, _ := f.h.Runs()
	finishedLongAgo := func() string {
		t.Helper()
		env, err := f.h.Execute(ctx, `return 1`)
		if err != nil || env.Status != "completed" {
			t.Fatalf("execute: %+v, %v", env, err)
		}
		eng.Wait()
		rec, err := eng.Get(ctx, env.RunID)
		if err != nil {
			t.Fatal(err)
		}
		rec.UpdatedAt = time.Now().Add(-8 * 24 * time.Hour)
		if err := st.Put(ctx, store.Runs, rec.ID, rec); err != nil {
			t.Fatal(err)
		}
		return rec.ID
	}
	markPruned := func(at time.Time) {
		t.Helper()
		if err := st.Put(ctx, store.Blobs, "runs-pruned", map[string]time.Time{"at": at}); err != nil {
			t.Fatal(err)
		}
	}
	there := func(id string) bool {
		err := st.Get(ctx, store.Runs, id, new(model.Run))
		return err == nil
	}

	// Last pruned two hours ago: the next process's first execute prunes,
	// after it has answered.
	old := finishedLongAgo()
	markPruned(time.Now().Add(-2 * time.Hour))
	slow := slowRunList{Store: st, listing: make(chan struct{}, 1), release: make(chan struct{})}
	h := hub.New(slow, hub.Options{})
	answered := make(chan error, 1)
	go func() {
		_, err := h.Execute(ctx, `return 2`)
		answered <- err
	}()
	select {
	case err := <-answered:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(testenv.Timeout(30 * time.Second)):
		t.Fatal("the execute waits for the prune's reading of the run records")
	}
	select {
	case <-slow.listing:
	case <-time.After(testenv.Timeout(30 * time.Second)):
		t.Fatal("no prune started after the first execute of a hub last pruned two hours ago")
	}
	close(slow.release)
	h.Close()
	if there(old) {
		t.Error("an 8-day-old run is still there after the process that pruned closed")
	}

	// Pruned just now (by the process above): the next process does not.
	old = finishedLongAgo()
	h = hub.New(st, hub.Options{})
	if _, err := h.Execute(ctx, `return 3`); err != nil {
		t.Fatal(err)
	}
	h.Close()
	if !there(old) {
		t.Error("a process pruned the runs though another had pruned them minutes before")
	}
	// A mark in the future (a clock set back) does not hold the prune off.
	markPruned(time.Now().Add(24 * time.Hour))
	h = hub.New(st, hub.Options{})
	if _, err := h.Execute(ctx, `return 4`); err != nil {
		t.Fatal(err)
	}
	h.Close()
	if there(old) {
		t.Error("a mark dated tomorrow held the prune off")
	}
}

// TestInvariantI6ResumeNeverRepeatsACall kills -9 a process in the middle of a run
// and resumes it from another process: no settled call is made twice.
func TestInvariantI6ResumeNeverRepeatsACall(t *testing.T) {
	if os.Getenv("RUN_TEST_CHILD") != "" {
		child(t)
		return
	}
	f := newHub(t, run.Limits{})
	ctx := context.Background()
	f.h.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^TestInvariantI6ResumeNeverRepeatsACall$")
	cmd.Env = append(os.Environ(), "RUN_TEST_CHILD="+f.dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait until some calls settled, then kill the process (and its upstream).
	deadline := time.Now().Add(testenv.Timeout(20 * time.Second))
	for len(f.upstreamCalls(t)) < 4 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	_ = cmd.Wait()
	st, err := store.Open(f.dir)
	if err != nil {
		t.Fatal(err)
	}
	h := hub.New(st, hub.Options{Source: source.Options{ConnectTimeout: testenv.Timeout(source.DefaultConnectTimeout)}})
	defer h.Close()
	eng, _ := h.Runs()
	runs, err := eng.List(ctx, "")
	if err != nil || len(runs) != 1 {
		t.Fatalf("runs after the kill: %v %v", runs, err)
	}
	id := runs[0].ID
	if runs[0].Status != model.RunRunning {
		t.Fatalf("the killed run is %s, want running", runs[0].Status)
	}
	journal, _ := eng.Journal(ctx, id)
	settled := len(journal)
	if settled == 0 || settled >= 12 {
		t.Fatalf("%d calls settled before the kill; the test needs a run killed mid-way", settled)
	}
	env, err := h.Resume(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if env.Status != "completed" || string(env.Result) != "12" {
		t.Fatalf("resumed run: %+v", env)
	}
	// Every call carries a distinct message: count each upstream call.
	seen := map[string]int{}
	for _, line := range f.upstreamCalls(t) {
		var c struct {
			Name string
			Args struct{ Message string } `json:"args"`
		}
		_ = json.Unmarshal([]byte(line), &c)
		if c.Name == "echo" {
			seen[c.Args.Message]++
		}
	}
	echoes := 0
	for _, je := range journal {
		if je.Address == "up.echo" {
			msg := "m" + string(rune('a'+echoes))
			echoes++
			if seen[msg] != 1 {
				t.Errorf("settled call %d (echo %s) reached the upstream %d times, want once", je.Seq, msg, seen[msg])
			}
		}
	}
	if len(seen) != 12 {
		t.Errorf("the upstream saw %d distinct echoes, want 12", len(seen))
	}
	t.Logf("%d calls had settled when the process was killed; the resumed run made the rest", settled)
}

func child(t *testing.T) {
	st, err := store.Open(os.Getenv("RUN_TEST_CHILD"))
	if err != nil {
		t.Fatal(err)
	}
	h := hub.New(st, hub.Options{Source: source.Options{ConnectTimeout: testenv.Timeout(source.DefaultConnectTimeout)}})
	_, _ = h.Execute(context.Background(), `
let n = 0;
for (let i = 0; i < 12; i++) {
  await up.echo({message: "m" + String.fromCharCode(97 + i)});
  await up.sleep({ms: 150});
  n++;
}
return n;`)
	t.Fatal("the child was meant to be killed before the run ended")
}

// TestSyntaxErrorOfPlainCode: code that skipped esbuild (it looked like
// plain JavaScript) but that QuickJS cannot compile fails before anything
// runs, with esbuild's located message about the code as sent.
func TestSyntaxErrorOfPlainCode(t *testing.T) {
	f := newHub(t, run.Limits{})
	env, err := f.h.Execute(context.Background(), "await up.echo({message: \"x\"});\nif (0)")
	if err != nil {
		t.Fatal(err)
	}
	if env.Status != "failed" || env.Error == nil || env.Error.Code != "syntax_error" ||
		!strings.Contains(env.Error.Message, "line 2") || !strings.Contains(env.Error.Message, "ended early") {
		t.Fatalf("envelope %+v, want esbuild's syntax error at line 2", env)
	}
	if len(env.Calls) != 0 || len(f.upstreamCalls(t)) != 0 {
		t.Errorf("a call was made: %+v", env.Calls)
	}
}

// TestDecisionNamesTheToolVersion: a person approved a call to up.record;
// before the run resumed, the tool changed (its contract). The decision
// was for the old version, so the resume asks again instead of calling.
func TestDecisionNamesTheToolVersion(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state.json")
	writeState := func(desc string) {
		if err := os.WriteFile(state, []byte(`{"desc":"`+desc+`","tools":4}`), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	writeState("")
	f := newHub(t, run.Limits{}, "SCRIPTED_STATE="+state)
	ctx := context.Background()
	env, err := f.h.Execute(ctx, `await up.record({item: "x"}); return "done"`)
	if err != nil {
		t.Fatal(err)
	}
	if env.Status != "awaiting_approval" {
		t.Fatalf("envelope %+v, want awaiting_approval", env)
	}
	if _, err := approval.Record(ctx, f.h.Store(), approval.Request{RunID: env.RunID, Choice: model.ChoiceOnce, Channel: approval.ChannelCLI}); err != nil {
		t.Fatal(err)
	}
	writeState(" (now deletes everything)")
	if _, err := f.h.Refresh(ctx, "up"); err != nil {
		t.Fatal(err)
	}
	again, err := f.h.Resume(ctx, env.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if again.Status != "awaiting_approval" {
		t.Fatalf("after the tool changed, resume gave %+v; want it to ask again", again)
	}
	if calls := f.upstreamCalls(t); len(calls) != 0 {
		t.Fatalf("the changed tool was called on a decision made for its old version: %v", calls)
	}
	r, err := store.Get[model.Run](ctx, f.h.Store(), store.Runs, env.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Pending) != 1 || r.Pending[0].Decision != nil {
		t.Fatalf("pending items %+v, want one undecided item for the new version", r.Pending)
	}
	if _, err := approval.Record(ctx, f.h.Store(), approval.Request{RunID: env.RunID, Choice: model.ChoiceOnce, Channel: approval.ChannelCLI}); err != nil {
		t.Fatal(err)
	}
	done, err := f.h.Resume(ctx, env.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if done.Status != "completed" || len(f.upstreamCalls(t)) != 1 {
		t.Fatalf("after a decision on the new version: %+v, %d upstream calls; want completed with 1", done, len(f.upstreamCalls(t)))
	}
}

// TestCancelFromAnotherProcessStopsTheWrites: `hub cancel` in another
// process (here another hub on the same store) cannot stop the attempt
// itself; the attempt sees the cancellation before its next write and
// stops there. Before, it went on making every write and ended
// "completed" while its record said cancelled.
func TestCancelFromAnotherProcessStopsTheWrites(t *testing.T) {
	f := newHub(t, run.Limits{})
	ctx := context.Background()
	code := `for (let i = 0; i < 8; i++) { await up.record({item: "w" + i}); await up.sleep({ms: 200}); } return "all"`
	env, err := f.h.Execute(ctx, code)
	if err != nil || env.Status != "awaiting_approval" {
		t.Fatalf("%v %+v", err, env)
	}
	if _, err := approval.Record(ctx, f.h.Store(), approval.Request{RunID: env.RunID, Choice: model.ChoiceRun, Channel: approval.ChannelCLI}); err != nil {
		t.Fatal(err)
	}
	done := make(chan *run.Envelope, 1)
	go func() {
		env, err := f.h.Resume(ctx, env.RunID)
		if err != nil {
			t.Error(err)
		}
		done <- env
	}()
	records := func() int { return strings.Count(strings.Join(f.upstreamCalls(t), "\n"), `"name":"record"`) }
	deadline := time.Now().Add(testenv.Timeout(20 * time.Second))
	for records() < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	st, err := store.Open(f.dir)
	if err != nil {
		t.Fatal(err)
	}
	other := hub.New(st, hub.Options{})
	defer other.Close()
	eng, _ := other.Runs()
	if _, err := eng.Cancel(ctx, env.RunID); err != nil {
		t.Fatal(err)
	}
	atCancel := records()
	end := <-done
	if end == nil || end.Status != "cancelled" {
		t.Errorf("the attempt ended %+v, want cancelled", end)
	}
	if n := records(); n > atCancel+1 || n >= 8 {
		t.Errorf("the upstream saw %d writes, %d when the run was cancelled: at most the one in flight may follow", n, atCancel)
	}
}

// TestThrownErrorHasABudget: what the code throws is kept to its head and
// tail (where the location is), in the envelope and in the run record.
// Before, `throw new Error("x".repeat(1e7))` answered the model 10 MB.
func TestThrownErrorHasABudget(t *testing.T) {
	f := newHub(t, run.Limits{})
	ctx := context.Background()
	for _, code := range []string{`throw new Error("x".repeat(1e6))`, `throw "y".repeat(1e6)`, `const e = new Error("z"); e.code = "c".repeat(1e6); e.hint = "h".repeat(1e6); throw e`} {
		env, err := f.h.Execute(ctx, code)
		if err != nil {
			t.Fatal(err)
		}
		eng, _ := f.h.Runs()
		rec, err := eng.Get(ctx, env.RunID)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range []*model.RunError{env.Error, rec.Error} {
			if e == nil || len(e.Message)+len(e.Code)+len(e.Hint) > 3*(8<<10)+300 {
				t.Errorf("%s: the error is %d+%d+%d bytes", code, len(e.Code), len(e.Message), len(e.Hint))
				continue
			}
			if strings.HasPrefix(code, "throw new") && (!strings.Contains(e.Message, "characters, middle not shown") || !strings.Contains(e.Message, "(line 1, column")) {
				t.Errorf("%s: the message does not keep its location: …%s", code, e.Message[max(0, len(e.Message)-200):])
			}
		}
	}
}

// prunedMeanwhile is a store in which a run record is removed (another
// process's prune) between a read of it and the next update.
type prunedMeanwhile struct{ store.Store }

func (s prunedMeanwhile) Update(ctx context.Context, kind store.Kind, id string, fn func(old []byte) ([]byte, error)) error {
	if kind == store.Runs {
		_ = s.Store.Delete(ctx, kind, id)
	}
	return s.Store.Update(ctx, kind, id, fn)
}

// TestRunPrunedMeanwhile: a run record pruned by another process between
// a read and an update gives an error, not a nil dereference (cancel,
// and the expiry a resume records, crashed the process).
func TestRunPrunedMeanwhile(t *testing.T) {
	f := newHub(t, run.Limits{ApprovalTTL: time.Nanosecond})
	ctx := context.Background()
	for _, do := range []string{"cancel", "resume"} {
		env, err := f.h.Execute(ctx, `return await up.record({item: "x"})`)
		if err != nil || env.Status != "awaiting_approval" {
			t.Fatalf("%v %+v", err, env)
		}
		h := hub.New(prunedMeanwhile{f.h.Store()}, hub.Options{})
		eng, _ := h.Runs()
		switch do {
		case "cancel":
			if _, err := eng.Cancel(ctx, env.RunID); !errors.Is(err, run.ErrUnknownRun) {
				t.Errorf("cancel of a run pruned meanwhile: %v", err)
			}
		case "resume":
			_, _ = h.Resume(ctx, env.RunID)
		}
		h.Close()
	}
	if n := len(f.upstreamCalls(t)); n != 0 {
		t.Errorf("the upstream saw %d calls", n)
	}
}

// TestManyCallsKeepTheEnvelopeBounded: a run of 500 calls (the limit) lists
// its first and last ones and says how many it leaves out, so that what the
// model reads stays within the envelope's budget (I7).
func TestManyCallsKeepTheEnvelopeBounded(t *testing.T) {
	f := newHub(t, run.Limits{})
	ctx := context.Background()
	env, err := f.h.Execute(ctx, `for (let i = 0; i < 500; i++) { try { await up.echo({message: "m" + i}) } catch (e) {} } return "done"`)
	if err != nil {
		t.Fatal(err)
	}
	if env.Status != "completed" {
		t.Fatalf("500 calls: %s %+v", env.Status, env.Error)
	}
	if len(env.Calls) != run.MaxListedCalls || env.Truncated == nil || env.Truncated.Calls != 500-run.MaxListedCalls {
		t.Fatalf("500 calls: the envelope lists %d and says %+v left out; want %d and %d", len(env.Calls), env.Truncated, run.MaxListedCalls, 500-run.MaxListedCalls)
	}
	if env.Truncated.Result || env.Truncated.Logs {
		t.Errorf("nothing else was cut: %+v", env.Truncated)
	}
	b, err := json.Marshal(env)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 24<<10 {
		t.Errorf("the envelope of 500 calls is %d bytes, over the 24 KB budget", len(b))
	}
	// A run under the bound lists every call and says nothing is cut.
	env, err = f.h.Execute(ctx, `for (let i = 0; i < 3; i++) await up.echo({message: "m" + i}); return "done"`)
	if err != nil {
		t.Fatal(err)
	}
	if len(env.Calls) != 3 || env.Truncated != nil {
		t.Errorf("3 calls: the envelope lists %d, truncated %+v", len(env.Calls), env.Truncated)
	}
}
