package run_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
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

// TestHandleBudget: a run's handles count against Limits.MaxHandleBytes; a
// large result past it is a ToolError the code can catch
// (result_too_large), and the threshold is Limits.HandleBytes.
func TestHandleBudget(t *testing.T) {
	f := newHub(t, run.Limits{HandleBytes: 4 << 10, MaxHandleBytes: 300 << 10}, "SCRIPTED_BIG=200000")
	env, err := f.h.Execute(context.Background(), `const a = await up.big({});
let code = "";
try { await up.big({}) } catch (e) { code = e.code }
return [a.size > 190000, a.handle.startsWith("handle-"), code, (await hub.read(a, {offset: 0, length: 4096})).length]`)
	if err != nil || env.Status != "completed" || string(env.Result) != `[true,true,"result_too_large",4096]` {
		t.Fatalf("%v %+v %s", err, env, env.Result)
	}
}

// TestEnvelopeWithAHandleStaysInBudget: code that returns a large tool
// result as it came (the handle) gets an envelope well under its 24 KB
// budget, with the handle, not a cut string.
func TestEnvelopeWithAHandleStaysInBudget(t *testing.T) {
	f := newHub(t, run.Limits{}, "SCRIPTED_BIG=1000000")
	env, err := f.h.Execute(context.Background(), `return await up.big({})`)
	if err != nil || env.Status != "completed" {
		t.Fatalf("%v %+v", err, env)
	}
	b, _ := json.Marshal(env)
	var h run.Handle
	if err := json.Unmarshal(env.Result, &h); err != nil || h.Size < 1000000 || len(h.Preview) != 1024 || env.Truncated != nil {
		t.Errorf("result %.200s (truncated %+v): %v", env.Result, env.Truncated, err)
	}
	if len(b) > 24<<10 {
		t.Errorf("the envelope is %d bytes", len(b))
	}
}

// TestHandleSurvivesKill: a process is killed (-9) after its run got a
// handle; the run resumed in another process gets the same handle and the
// same content from the journal and the stored blob, and the upstream is
// not asked again.
func TestHandleSurvivesKill(t *testing.T) {
	if dir := os.Getenv("RUN_HANDLE_CHILD"); dir != "" {
		st, err := store.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		h := hub.New(st, hub.Options{Source: source.Options{ConnectTimeout: testenv.Timeout(source.DefaultConnectTimeout)}})
		_, _ = h.Execute(context.Background(), handleKillCode)
		t.Fatal("the child was meant to be killed before the run ended")
	}
	f := newHub(t, run.Limits{}, "SCRIPTED_BIG=300000")
	f.h.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHandleSurvivesKill$")
	cmd.Env = append(os.Environ(), "RUN_HANDLE_CHILD="+f.dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(testenv.Timeout(20 * time.Second))
	for !strings.Contains(strings.Join(f.upstreamCalls(t), "\n"), `"name":"sleep"`) && time.Now().Before(deadline) {
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
	runs, err := eng.List(context.Background(), "")
	if err != nil || len(runs) != 1 {
		t.Fatalf("runs after the kill: %v %v", runs, err)
	}
	id := runs[0].ID
	journal, _ := eng.Journal(context.Background(), id)
	var first string
	for _, je := range journal {
		if je.Address == "hub.read" {
			_ = json.Unmarshal(je.Value, &first)
		}
	}
	if first == "" {
		t.Fatal("the killed run had not read its handle yet")
	}
	env, err := h.Resume(context.Background(), id)
	if err != nil || env.Status != "completed" {
		t.Fatalf("resume: %v %+v", err, env)
	}
	var got []string
	if err := json.Unmarshal(env.Result, &got); err != nil || len(got) != 3 || got[0] != "handle-"+id+"-1" || got[1] != first || got[2] != first {
		t.Errorf("resumed result %s, want the same handle and slice %q twice", env.Result, first)
	}
	n := 0
	for _, c := range f.upstreamCalls(t) {
		if strings.Contains(c, `"name":"big"`) {
			n++
		}
	}
	if n != 1 {
		t.Errorf("big reached the upstream %d times, want once", n)
	}
}

const handleKillCode = `const h = await up.big({});
const a = await hub.read(h, {offset: 1000, length: 40});
for (let i = 0; i < 8; i++) await up.sleep({ms: 150});
const b = await hub.read(h, {offset: 1000, length: 40});
return [h.handle, a, b];`

// TestLargeToolErrorIsCut: an upstream's error text has no handle; one of
// 17 MB went whole into the journal, past the 16 MB a resume reads a line
// with, so the run paused after it could never go on ("token too long").
// The code gets the head of the message, and the run resumes once.
func TestLargeToolErrorIsCut(t *testing.T) {
	f := newHub(t, run.Limits{}, "SCRIPTED_BIG=17000000")
	ctx := context.Background()
	env, err := f.h.Execute(ctx, `let m = "";
try { await up.big({error: true}) } catch (e) { m = e.message }
await up.record({item: "after"});
return [m.length <= 65536, m.startsWith("eee"), m.endsWith("bytes, the rest not shown]")]`)
	if err != nil || env.Status != "awaiting_approval" {
		t.Fatalf("%v %+v", err, env)
	}
	if _, err := approval.Record(ctx, f.h.Store(), approval.Request{RunID: env.RunID, Choice: model.ChoiceOnce, Channel: approval.ChannelCLI}); err != nil {
		t.Fatal(err)
	}
	done, err := f.h.Resume(ctx, env.RunID)
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	if done.Status != "completed" || string(done.Result) != `[true,true,true]` {
		t.Fatalf("resume: %+v %s", done, done.Result)
	}
	if calls := f.upstreamCalls(t); len(calls) != 2 {
		t.Errorf("upstream saw %d calls, want 2 (big, record): %v", len(calls), calls)
	}
}
