package run_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/run"
	"github.com/capabilities-sh/capabilities/engine/source"
	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/capabilities-sh/capabilities/store"
	"github.com/google/go-cmp/cmp"
)

// repeatedCode reads, then makes a read that does not answer within the
// test (an hour's sleep): the process running it is killed meanwhile.
const repeatedCode = `
const a = await up.echo({message: "before"});
let s;
try { s = await up.sleep({ms: 3600000}) } catch (e) { s = e.code }
return [a, s];`

// TestReadRepeatedAfterAKillIsRecorded: a process is killed -9 while a
// read it sent waits for its answer; the resume makes that read again
// (reads may be repeated) and the run's record says so: the journal has
// the read's intent, then its outcome marked repeated, and the envelope
// (execute's, `hub runs show`'s) notes it on the call. The read that had
// settled before the kill is not made again, nor noted.
func TestReadRepeatedAfterAKillIsRecorded(t *testing.T) {
	if dir := os.Getenv("RUN_TEST_REPEAT_CHILD"); dir != "" {
		executeChild(t, dir)
		return
	}
	// The resume's sleep ends at the bound on upstream calls (generous: its
	// upstream starts within it on a loaded machine); the killed process
	// had none.
	f := newHub(t, run.Limits{UpstreamTimeout: testenv.Timeout(20 * time.Second)})
	ctx := context.Background()

	var out bytes.Buffer
	cmd := exec.Command(os.Args[0], "-test.run=^TestReadRepeatedAfterAKillIsRecorded$", "-test.v")
	cmd.Env = append(os.Environ(), "RUN_TEST_REPEAT_CHILD="+f.dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	kill := func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	}
	deadline := time.Now().Add(testenv.Timeout(60 * time.Second))
	for f.callsTo(t, "sleep", "3600000") == 0 {
		if time.Now().After(deadline) {
			kill()
			t.Fatalf("the child's read never reached the upstream; it said:\n%s", out.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	kill()

	runs, err := f.h.ListRuns(ctx, hub.RunFilter{})
	if err != nil || len(runs) != 1 || runs[0].Status != model.RunInterrupted {
		t.Fatalf("runs after the kill: %v %+v, want one interrupted", err, runs)
	}
	id := runs[0].ID
	env, err := f.h.Resume(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if env.Status != "completed" || !strings.HasPrefix(string(env.Result), `["Echo: before","upstream_`) {
		t.Fatalf("after the resume: %+v, want the first read's value and the second's error code", env)
	}
	if n := f.callsTo(t, "sleep", "3600000"); n != 2 {
		t.Errorf("the read in flight reached the upstream %d times, want twice", n)
	}
	if n := f.callsTo(t, "echo", "before"); n != 1 {
		t.Errorf("the settled read reached the upstream %d times, want once", n)
	}

	type line struct {
		Seq              int
		Address          string
		Intent, Repeated bool
	}
	var got []line
	for _, je := range f.journalLines(t, id) {
		got = append(got, line{je.Seq, je.Address, je.Intent, je.Repeated})
	}
	want := []line{
		{1, "up.echo", false, false},                               // the run's first call has no intent
		{2, "up.sleep", true, false},                               // the killed attempt's
		{2, "up.sleep", true, false}, {2, "up.sleep", false, true}, // the resume's
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("journal (-want +got):\n%s", d)
	}
	wantCalls := []run.CallInfo{{Address: "up.echo", OK: true}, {Address: "up.sleep", Note: run.NoteRepeated}}
	for _, e := range []*hub.Envelope{env, shown(t, f, id)} {
		if d := cmp.Diff(wantCalls, e.Calls, cmpIgnoreMs); d != "" {
			t.Errorf("calls (-want +got):\n%s", d)
		}
	}
}

var cmpIgnoreMs = cmp.Transformer("noMs", func(c run.CallInfo) run.CallInfo { c.Ms = 0; return c })

// shown is the envelope of a run as `hub runs show` reads it.
func shown(t *testing.T, f *fixture, id string) *hub.Envelope {
	t.Helper()
	eng, err := f.h.Runs()
	if err != nil {
		t.Fatal(err)
	}
	env, err := eng.Envelope(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return env
}

// executeChild runs repeatedCode on the hub in dir until it is killed.
func executeChild(t *testing.T, dir string) {
	st, err := store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	h := hub.New(st, hub.Options{Source: source.Options{ConnectTimeout: testenv.Timeout(source.DefaultConnectTimeout)}})
	defer h.Close()
	env, err := h.Execute(context.Background(), repeatedCode)
	t.Fatalf("the child's run ended before it was killed: %v %+v", err, env)
}
