package run_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
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

// callsTo counts the scripted upstream's calls to the tool whose arguments
// hold the text.
func (f *fixture) callsTo(t *testing.T, tool, text string) int {
	t.Helper()
	n := 0
	for _, line := range f.upstreamCalls(t) {
		var c struct {
			Name string          `json:"name"`
			Args json.RawMessage `json:"args"`
		}
		if json.Unmarshal([]byte(line), &c) == nil && c.Name == tool && strings.Contains(string(c.Args), text) {
			n++
		}
	}
	return n
}

// journalLines reads a run's journal file as the store wrote it.
func (f *fixture) journalLines(t *testing.T, id string) []model.JournalEntry {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(f.dir, "runs", id+".journal.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var out []model.JournalEntry
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var je model.JournalEntry
		if err := json.Unmarshal([]byte(l), &je); err != nil {
			t.Fatal(err)
		}
		out = append(out, je)
	}
	return out
}

// writeJournal replaces a run's journal, as a process killed at some moment
// would have left it.
func (f *fixture) writeJournal(t *testing.T, id string, journal []model.JournalEntry) {
	t.Helper()
	var b strings.Builder
	for _, je := range journal {
		line, err := json.Marshal(je)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	if err := os.WriteFile(filepath.Join(f.dir, "runs", id+".journal.jsonl"), []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestInFlightWriteAsksAPerson: the journal has the intent of an approved
// write and no outcome (the process died between the two): resume does not
// make the call; the run waits for a person, whose retry makes it once more
// and whose skip gives the code a ToolError skipped_in_flight.
func TestInFlightWriteAsksAPerson(t *testing.T) {
	for _, tt := range []struct {
		choice     model.Choice
		wantResult string
		wantWrites int
	}{
		{model.ChoiceOnce, `"recorded Echo: one"`, 1},
		{model.ChoiceDeny, `"skipped_in_flight"`, 0},
	} {
		t.Run(string(tt.choice), func(t *testing.T) {
			f := newHub(t, run.Limits{})
			ctx := context.Background()
			env, err := f.h.Execute(ctx, `
const a = await up.echo({message: "one"});
try { return await up.record({item: a}) } catch (e) { return e.code }`)
			if err != nil || env.Status != "awaiting_approval" {
				t.Fatalf("%v %+v", err, env)
			}
			if _, err := approval.Record(ctx, f.h.Store(), approval.Request{RunID: env.RunID, Choice: model.ChoiceOnce, Channel: approval.ChannelCLI}); err != nil {
				t.Fatal(err)
			}
			r, err := store.Get[model.Run](ctx, f.h.Store(), store.Runs, env.RunID)
			if err != nil {
				t.Fatal(err)
			}
			// The approved call's intent, synced, and then the process died.
			journal := append(f.journalLines(t, env.RunID), model.JournalEntry{Seq: 2, Address: "up.record", ArgsDigest: r.Pending[0].ArgsDigest, Intent: true, At: time.Now()})
			f.writeJournal(t, env.RunID, journal)

			paused, err := f.h.Resume(ctx, env.RunID)
			if err != nil {
				t.Fatal(err)
			}
			if n := f.callsTo(t, "record", "one"); n != 0 {
				t.Fatalf("resume made the in-flight write again (%d calls) without asking", n)
			}
			if paused.Status != "awaiting_approval" || len(paused.Pending) != 1 || paused.Pending[0].Kind != model.PendingInFlight || paused.Pending[0].ID != "c2-in-flight" {
				t.Fatalf("after resume: %+v; want awaiting_approval on c2-in-flight", paused)
			}
			// Resuming again before a decision runs nothing.
			if again, err := f.h.Resume(ctx, env.RunID); err != nil || again.Status != "awaiting_approval" || f.callsTo(t, "record", "one") != 0 {
				t.Fatalf("resume before the decision: %v %+v", err, again)
			}
			if _, err := approval.Record(ctx, f.h.Store(), approval.Request{RunID: env.RunID, Choice: model.ChoiceRun, Channel: approval.ChannelCLI}); err == nil || !strings.Contains(err.Error(), "in flight") {
				t.Errorf("a run-wide choice on an in-flight call: %v, want it refused", err)
			}
			if _, err := approval.Record(ctx, f.h.Store(), approval.Request{RunID: env.RunID, Choice: tt.choice, Channel: approval.ChannelCLI}); err != nil {
				t.Fatal(err)
			}
			done, err := f.h.Resume(ctx, env.RunID)
			if err != nil {
				t.Fatal(err)
			}
			if done.Status != "completed" || string(done.Result) != tt.wantResult {
				t.Fatalf("after %s: %+v, want completed with %s", tt.choice, done, tt.wantResult)
			}
			if n := f.callsTo(t, "record", "one"); n != tt.wantWrites {
				t.Errorf("after %s the upstream saw %d writes, want %d", tt.choice, n, tt.wantWrites)
			}
			if n := f.callsTo(t, "echo", "one"); n != 1 {
				t.Errorf("the settled read reached the upstream %d times, want once", n)
			}
			rec, _ := store.Get[model.Run](ctx, f.h.Store(), store.Runs, env.RunID)
			if p := rec.PendingItem("c2-in-flight"); p == nil || p.Decision == nil || p.Decision.Choice != tt.choice || p.Decision.Channel != approval.ChannelCLI {
				t.Errorf("the in-flight item's decision: %+v", p)
			}
			// The journal: the read has only its outcome; the write its
			// intents (the one cut short, and a retry's) before its outcome.
			var kinds []string
			for _, je := range f.journalLines(t, env.RunID) {
				k := fmt.Sprintf("%d:outcome", je.Seq)
				if je.Intent {
					k = fmt.Sprintf("%d:intent", je.Seq)
				}
				kinds = append(kinds, k)
			}
			want := "1:outcome 2:intent 2:outcome"
			if tt.choice == model.ChoiceOnce {
				want = "1:outcome 2:intent 2:intent 2:outcome"
			}
			if got := strings.Join(kinds, " "); got != want {
				t.Errorf("journal %s, want %s", got, want)
			}
		})
	}
}

// TestInFlightReadIsRetried: the journal has an intent for a read and no
// outcome; reads may be repeated, so resume makes it again without asking.
func TestInFlightReadIsRetried(t *testing.T) {
	f := newHub(t, run.Limits{})
	ctx := context.Background()
	env, err := f.h.Execute(ctx, `const a = await up.echo({message: "one"}); await up.record({item: a}); return a`)
	if err != nil || env.Status != "awaiting_approval" {
		t.Fatalf("%v %+v", err, env)
	}
	// The read's outcome is lost; its intent is there (as a tool annotated
	// as a write when the intent was written would have left it).
	journal := f.journalLines(t, env.RunID)
	if len(journal) != 1 || journal[0].Intent {
		t.Fatalf("journal before the approval: %+v, want the read's outcome alone", journal)
	}
	intent := journal[0]
	intent.Intent, intent.OK, intent.Value = true, false, nil
	f.writeJournal(t, env.RunID, []model.JournalEntry{intent})
	if _, err := approval.Record(ctx, f.h.Store(), approval.Request{RunID: env.RunID, Choice: model.ChoiceOnce, Channel: approval.ChannelCLI}); err != nil {
		t.Fatal(err)
	}
	done, err := f.h.Resume(ctx, env.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if done.Status != "completed" || string(done.Result) != `"Echo: one"` || len(done.Pending) != 0 {
		t.Fatalf("resume with a read in flight: %+v, want completed without asking", done)
	}
	if n := f.callsTo(t, "echo", "one"); n != 2 {
		t.Errorf("the in-flight read reached the upstream %d times, want twice (once more on resume)", n)
	}
	if n := f.callsTo(t, "record", "Echo: one"); n != 1 {
		t.Errorf("the approved write reached the upstream %d times, want once", n)
	}
}

// writesOf counts the scripted upstream's record calls with exactly this item.
func (f *fixture) writesOf(t *testing.T, item string) int {
	t.Helper()
	n := 0
	for _, line := range f.upstreamCalls(t) {
		var c struct {
			Name string `json:"name"`
			Args struct {
				Item string `json:"item"`
			} `json:"args"`
		}
		if json.Unmarshal([]byte(line), &c) == nil && c.Name == "record" && c.Args.Item == item {
			n++
		}
	}
	return n
}

// TestInvariantI6CrashNeverRepeatsAnApprovedWrite kills -9 a process that
// resumes a run after a person approved a write (as `hub approve` and an
// elicitation answer do), and resumes the run in this process: the write is
// never made twice without a person deciding so.
//
// Targeted trials kill the process the moment the upstream acted (its call
// is in SCRIPTED_CALLS; SCRIPTED_HOLD keeps its answer back, so the hub
// cannot have journaled the outcome): the resume must not call again, and
// waits on an in_flight item; a person's retry makes the call once more, a
// skip gives the code ToolError skipped_in_flight. Random trials kill it at
// a random moment: half anywhere in the resume, half within 5 ms after the
// upstream acted (its answer not held back). CAPABILITIES_I6_TRIALS
// (default 20) sets how many of each.
func TestInvariantI6CrashNeverRepeatsAnApprovedWrite(t *testing.T) {
	if dir := os.Getenv("RUN_TEST_I6_CHILD"); dir != "" {
		resumeChild(t, dir)
		return
	}
	trials := 20
	if s := os.Getenv("CAPABILITIES_I6_TRIALS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("CAPABILITIES_I6_TRIALS=%q: want a positive number of trials", s)
		}
		trials = n
	}
	hold := filepath.Join(t.TempDir(), "hold")
	ready := filepath.Join(t.TempDir(), "ready")
	f := newHub(t, run.Limits{}, "SCRIPTED_HOLD="+hold)
	ctx := context.Background()

	type result struct {
		asked, finished bool // the resume asked (in_flight); the child ended before the kill
		before          int  // writes when the child was killed
		toAct           time.Duration
	}
	// A trial kills the child when the upstream acts (targeted), or after
	// delay from when it acts (afterAct), or from the start of its resume.
	trial := func(k int, targeted, afterAct bool, delay time.Duration) result {
		t.Helper()
		item := fmt.Sprintf("w%d", k)
		env, err := f.h.Execute(ctx, fmt.Sprintf(`
await up.echo({message: "before %[1]s"});
let w;
try { w = await up.record({item: %[1]q}) } catch (e) { w = e.code }
await up.echo({message: "after %[1]s"});
return w;`, item))
		if err != nil || env.Status != "awaiting_approval" {
			t.Fatalf("trial %d: %v %+v", k, err, env)
		}
		if _, err := approval.Record(ctx, f.h.Store(), approval.Request{RunID: env.RunID, Choice: model.ChoiceOnce, Channel: approval.ChannelCLI}); err != nil {
			t.Fatal(err)
		}
		_ = os.Remove(ready)
		if targeted {
			if err := os.WriteFile(hold, nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		var out bytes.Buffer
		cmd := exec.Command(os.Args[0], "-test.run=^TestInvariantI6CrashNeverRepeatsAnApprovedWrite$", "-test.v")
		cmd.Env = append(os.Environ(), "RUN_TEST_I6_CHILD="+f.dir, "RUN_TEST_I6_RUN="+env.RunID, "RUN_TEST_I6_READY="+ready)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		kill := func() error {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			return cmd.Wait()
		}
		var res result
		deadline := time.Now().Add(testenv.Timeout(60 * time.Second))
		waitFor := func(what string, done func() bool) {
			for !done() {
				if time.Now().After(deadline) {
					_ = kill()
					t.Fatalf("trial %d: waited in vain for %s; the child said:\n%s", k, what, out.String())
				}
				time.Sleep(time.Millisecond)
			}
		}
		waitFor("the child to start resuming", func() bool { _, err := os.Stat(ready); return err == nil })
		start := time.Now()
		if targeted || afterAct {
			waitFor("the upstream to act", func() bool { return f.writesOf(t, item) > 0 })
			res.toAct = time.Since(start)
		}
		time.Sleep(delay)
		err = kill()
		var ee *exec.ExitError
		res.finished = !errors.As(err, &ee) || ee.Exited()
		if res.finished && err != nil {
			t.Fatalf("trial %d: the child failed: %v\n%s", k, err, out.String())
		}
		_ = os.Remove(hold)
		res.before = f.writesOf(t, item)
		if targeted && res.before != 1 {
			t.Fatalf("trial %d: the upstream saw %d writes before the kill, want 1", k, res.before)
		}

		got, err := f.h.Resume(ctx, env.RunID)
		if err != nil {
			t.Fatal(err)
		}
		if n := f.writesOf(t, item); n > 1 {
			t.Errorf("trial %d: the write was made %d times without a person deciding so (killed after %d)", k, n, res.before)
		}
		res.asked = got.Status == "awaiting_approval"
		if targeted && (!res.asked || len(got.Pending) != 1 || got.Pending[0].Kind != model.PendingInFlight) {
			t.Fatalf("trial %d: resume after a kill in flight gave %+v; want it awaiting a decision on the in-flight call", k, got)
		}
		want, writes := `"recorded `+item+`"`, res.before
		if res.asked {
			if len(got.Pending) != 1 || got.Pending[0].Kind != model.PendingInFlight {
				t.Fatalf("trial %d: resume asks %+v, want one in-flight call", k, got.Pending)
			}
			// A person decides: retry on even trials, skip on odd ones.
			choice := model.ChoiceOnce
			if k%2 == 1 {
				choice, want = model.ChoiceDeny, `"`+run.CodeSkippedInFlight+`"`
			} else {
				writes++
			}
			if _, err := approval.Record(ctx, f.h.Store(), approval.Request{RunID: env.RunID, Choice: choice, Channel: approval.ChannelCLI}); err != nil {
				t.Fatal(err)
			}
			if got, err = f.h.Resume(ctx, env.RunID); err != nil {
				t.Fatal(err)
			}
		} else {
			writes = 1
		}
		if got.Status != "completed" || string(got.Result) != want {
			t.Fatalf("trial %d: the run ended %+v, want completed with %s", k, got, want)
		}
		if n := f.writesOf(t, item); n != writes {
			t.Errorf("trial %d: the upstream saw %d writes, want %d (killed after %d, asked %v)", k, n, writes, res.before, res.asked)
		}
		return res
	}

	var toAct []time.Duration
	for k := range trials {
		toAct = append(toAct, trial(k, true, false, 0).toAct)
	}
	// Random moments: anywhere from the start of the resume to twice the
	// slowest time the targeted trials took to reach the write, or within
	// 5 ms after the upstream acted.
	span := 2 * slices.Max(toAct)
	seen := map[string]int{}
	for k := trials; k < 2*trials; k++ {
		afterAct := k%2 == 0
		delay := rand.N(span)
		if afterAct {
			delay = rand.N(5 * time.Millisecond)
		}
		r := trial(k, false, afterAct, delay)
		switch {
		case r.finished:
			seen["the run finished before the kill"]++
		case r.asked && r.before == 1:
			seen["killed with the write made and not journaled: asked"]++
		case r.asked:
			seen["killed with the intent journaled and the write not made: asked"]++
		case r.before == 1:
			seen["killed after the write was journaled: not made again"]++
		default:
			seen["killed before the write: made on resume"]++
		}
	}
	slices.Sort(toAct)
	t.Logf("%d targeted kill -9 trials (median %v from resume to the write), %d at random moments (half within %v of the resume, half within 5 ms after the write): %v", trials, toAct[len(toAct)/2].Round(time.Millisecond), trials, span.Round(time.Millisecond), seen)
}

// resumeChild resumes the run, as `hub approve` does after recording a
// decision, until it is killed.
func resumeChild(t *testing.T, dir string) {
	st, err := store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	h := hub.New(st, hub.Options{Source: source.Options{ConnectTimeout: testenv.Timeout(source.DefaultConnectTimeout)}})
	defer h.Close()
	if err := os.WriteFile(os.Getenv("RUN_TEST_I6_READY"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Resume(context.Background(), os.Getenv("RUN_TEST_I6_RUN")); err != nil {
		t.Fatal(err)
	}
}

// fullDisk is a store whose journals refuse the outcome of up.record, as a
// full disk refuses a line longer than the room left: the write's request
// went out (its intent was journaled), its outcome could not be.
type fullDisk struct{ store.Store }

func (s fullDisk) OpenLog(ctx context.Context, kind store.Kind, id string) (store.Log, error) {
	l, err := s.Store.OpenLog(ctx, kind, id)
	return fullLog{l}, err
}

type fullLog struct{ store.Log }

func (l fullLog) Append(line []byte) error {
	if bytes.Contains(line, []byte(`"address":"up.record"`)) && !bytes.Contains(line, []byte(`"intent":true`)) {
		return errors.New("write journal.jsonl: no space left on device")
	}
	return l.Log.Append(line)
}

// TestUnrecordedWriteAsksInsteadOfFailing: a write made whose outcome the
// journal refused is not handed to the code as a failure (journal_failed),
// which code and model retry, making it twice: the run pauses on it as on
// a call in flight, and a person's skip settles it.
func TestUnrecordedWriteAsksInsteadOfFailing(t *testing.T) {
	f := newHub(t, run.Limits{})
	ctx := context.Background()
	code := `for (let i = 0; i < 3; i++) { try { return await up.record({item: "once"}) } catch (e) { if (e.code !== "journal_failed") throw e } } return "gave up"`
	env, err := f.h.Execute(ctx, code)
	if err != nil || env.Status != "awaiting_approval" {
		t.Fatalf("%v %+v", err, env)
	}
	if _, err := approval.Record(ctx, f.h.Store(), approval.Request{RunID: env.RunID, Choice: model.ChoiceRun, Channel: approval.ChannelCLI}); err != nil {
		t.Fatal(err)
	}
	full := hub.New(fullDisk{f.h.Store()}, hub.Options{Source: source.Options{ConnectTimeout: testenv.Timeout(source.DefaultConnectTimeout)}})
	defer full.Close()
	got, err := full.Resume(ctx, env.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != "awaiting_approval" || len(got.Pending) != 1 || got.Pending[0].ID != "c1-in-flight" || got.Pending[0].Summary == "" {
		t.Fatalf("after the outcome was refused: %+v", got)
	}
	if n := f.callsTo(t, "record", "once"); n != 1 {
		t.Fatalf("the upstream saw %d writes, want 1", n)
	}
	if _, err := approval.Record(ctx, f.h.Store(), approval.Request{RunID: env.RunID, CallID: "c1-in-flight", Choice: model.ChoiceDeny, Channel: approval.ChannelCLI}); err != nil {
		t.Fatal(err)
	}
	done, err := f.h.Resume(ctx, env.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if done.Status != "failed" || done.Error == nil || !strings.Contains(done.Error.Message, run.CodeSkippedInFlight) {
		t.Errorf("after the skip: %+v %+v", done, done.Error)
	}
	if n := f.callsTo(t, "record", "once"); n != 1 {
		t.Errorf("the upstream saw %d writes, want 1", n)
	}
}
