//go:build linux

package pgfaults

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/internal/testenv"
)

// TestKilledProcessesNeverRepeatAWrite: 1,000 runs (PGFAULTS_RUNS) over 16
// go-sdk clients (PGFAULTS_CLIENTS) spread over three `hub serve --http`
// processes on one PostgreSQL, each run an execute whose code makes one
// write (up.record, allowed by a rule, so it does not ask) carrying an id
// of its own, to an upstream that logs every call it receives (fsynced)
// and then holds its answer back for up to PGFAULTS_HOLD (the instant at
// which the write is made and cannot have been journaled). Meanwhile a
// loop kills a random process with SIGKILL every PGFAULTS_KILL_EVERY
// (±50%) and starts it again.
//
// A client whose process died under an execute moves to another process
// and looks the run up in the database by its write's id: when it is there
// the client resumes it (once the dead process's lease has expired) until
// it completes or pauses on an in_flight call; when it is not, the process
// died before the run was stored (so before any write: the intent waits for
// the record), and the client executes the job again with a new id.
//
// Then, with every process up: the runs whose process died after the
// client's answer (the final record is written after the answer) are
// resumed; the runs paused on an in_flight call are resumed again (they ask
// again, calling nothing) and a person skips them (hub approve). The
// database and the call log must then say: no run lost, no write made
// twice, no write without its run's intent, no record or journal line that
// does not parse.
func TestKilledProcessesNeverRepeatAWrite(t *testing.T) {
	runs := envInt("PGFAULTS_RUNS", 1000)
	clients := envInt("PGFAULTS_CLIENTS", 16)
	killEvery := envDuration("PGFAULTS_KILL_EVERY", 1500*time.Millisecond)
	pace := envDuration("PGFAULTS_PACE", 300*time.Millisecond)
	hold := envDuration("PGFAULTS_HOLD", 100*time.Millisecond)

	began := time.Now()
	pg := testenv.StartPostgres(t)
	db := pg.NewDatabase(t)
	up := startUpstream(t, hold)
	c := newCluster(t, db, up, 3)
	view := openDB(t, db)
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(10*time.Minute))
	defer cancel()

	jobs := make(chan int, runs)
	for j := 1; j <= runs; j++ {
		jobs <- j
	}
	close(jobs)

	f := &faults{t: t, c: c, view: view}
	killCtx, stopKills := context.WithCancel(ctx)
	killed := make(chan error, 1)
	go func() {
		killed <- c.killLoop(killCtx, killEvery, rand.IntN, func(d time.Duration) time.Duration { return rand.N(d) })
	}()
	loadStart := time.Now()
	var jobsDone, all sync.WaitGroup
	for i := range clients {
		jobsDone.Add(1)
		all.Go(func() {
			w := &worker{a: newAgent(c, fmt.Sprintf("client-%d", i), i), f: f, pace: pace}
			defer w.a.close()
			w.jobs(ctx, jobs)
			jobsDone.Done()
			w.drain(ctx)
		})
	}
	jobsDone.Wait()
	loadTime := time.Since(loadStart)
	stopKills()
	if err := <-killed; err != nil {
		t.Fatalf("the kill loop could not start a process again: %v", err)
	}
	c.mu.Lock()
	kills := c.kills
	c.mu.Unlock()
	c.ensureUp()
	all.Wait()
	drainTime := time.Since(loadStart) - loadTime
	if ctx.Err() != nil {
		t.Fatalf("the clients did not finish in time: %v", ctx.Err())
	}

	before := view.snapshot(t)
	interruptedBefore, inFlightBefore := 0, 0
	for _, r := range before.runs {
		switch {
		case r.inFlight():
			inFlightBefore++
		case !r.Run.Status.Done():
			interruptedBefore++
		}
	}
	s := settle(t, ctx, c, view, up, true)
	v := judge(t, view, up, false)
	v.check(t)
	for _, p := range c.panics() {
		t.Errorf("a hub process panicked:\n%s", p)
	}
	for _, msg := range f.failures() {
		t.Error(msg)
	}
	// Every job ended with a run that completed (its write, or a person's
	// skip of it).
	finished := map[string]bool{}
	for _, r := range view.snapshot(t).runs {
		if r.Run.Status.Done() && len(r.WriteID) > 5 {
			finished[r.WriteID[:5]] = true
		}
	}
	missing := 0
	for j := 1; j <= runs; j++ {
		if !finished[fmt.Sprintf("j%04d", j)] {
			missing++
		}
	}
	if missing > 0 {
		t.Errorf("%d of %d jobs have no finished run", missing, runs)
	}
	if kills == 0 {
		t.Errorf("no process was killed during the load (%v): the test proves nothing; lower PGFAULTS_KILL_EVERY", loadTime)
	}

	t.Logf("%d runs (%d jobs) over %d clients and 3 serve processes on one PostgreSQL; load %.1f s, then %.1f s for the last resumes; %d processes killed with SIGKILL (every %v ±50%%), each started again; upstream holds its answer 0–%v",
		v.runs, runs, clients, loadTime.Seconds(), drainTime.Seconds(), kills, killEvery, hold)
	t.Logf("clients: %d answered at once; %d executes cut by a kill: %d of their runs found in the database and resumed on another process (%d resumes cut by a kill again, %d refused while the dead process's lease lasted), %d not stored yet (executed again with a new id); resumes ended completed %d, paused on an in_flight call %d",
		f.answered.Load(), f.cut.Load(), f.found.Load(), f.resumeCut.Load(), f.busy.Load(), f.notStored.Load(), f.resumedDone.Load(), f.resumedInFlight.Load())
	t.Logf("after the loop: %d runs recorded running with no live process (their process died after answering, or under a resume) resumed: %d of them made their write then (no intent journaled before), none repeated; %d runs paused on an in_flight call, resumed again on a live process (asked again, called nothing), then skipped by a person: %d",
		s.interrupted, s.interruptedCalls, s.inFlight, s.skipped)
	t.Logf("end: %d runs (%d before the sweep: %d interrupted, %d in_flight), %d records and %d journal lines read back: completed with the write made once %d; skipped by a person with the write made before the kill %d, with the request never sent %d; lost %d, writes repeated %d, writes without an intent %d, corrupt %d, journals without a run %d; %.0f s in all",
		v.runs, len(before.runs), interruptedBefore, inFlightBefore, v.records, v.journalLines, v.completedWrite, v.skippedMade, v.skippedNotMade, len(v.lost), len(v.repeated), len(v.unowned), len(v.corrupt), len(v.orphans), time.Since(began).Seconds())
}

// faults is what the clients share: counts, and what went wrong.
type faults struct {
	t    *testing.T
	c    *cluster
	view *dbView

	answered, cut, found, notStored, resumeCut, busy, resumedDone, resumedInFlight atomic.Int64

	mu     sync.Mutex
	failed []string
}

func (f *faults) fail(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.failed) < 50 {
		f.failed = append(f.failed, fmt.Sprintf(format, args...))
	}
}

func (f *faults) failures() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.failed
}

// killedUnder reports whether the process a call went to was killed (or
// killed and started again) since the call's session was opened: the
// kill loop says so once the process is gone.
func (f *faults) killedUnder(out callOutcome) bool {
	if out.p < 0 {
		return false
	}
	deadline := time.Now().Add(testenv.Timeout(5 * time.Second))
	for f.c.gen(out.p) == out.gen {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

// worker is one client's loop.
type worker struct {
	a        *agent
	f        *faults
	pace     time.Duration
	deferred []*resumeItem
}

// resumeItem is a run the client lost with its process, to resume
// elsewhere.
type resumeItem struct {
	id, run    string
	due, until time.Time
}

func (w *worker) jobs(ctx context.Context, jobs <-chan int) {
	for j := range jobs {
		if ctx.Err() != nil {
			return
		}
		w.resumeDue(ctx)
		w.job(ctx, j)
		if w.pace > 0 {
			time.Sleep(rand.N(2 * w.pace))
		}
	}
}

func (w *worker) drain(ctx context.Context) {
	for len(w.deferred) > 0 && ctx.Err() == nil {
		w.resumeDue(ctx)
		if len(w.deferred) > 0 {
			time.Sleep(250 * time.Millisecond)
		}
	}
}

// job executes job j's write until a process answers it, or until its run
// is in the database to be resumed.
func (w *worker) job(ctx context.Context, j int) {
	for a := 1; a < 100 && ctx.Err() == nil; a++ {
		id := fmt.Sprintf("j%04d-%02d", j, a)
		out := w.a.execute(ctx, map[string]any{"code": writeCode(id)})
		if out.err == nil {
			switch {
			case out.env != nil && out.env.Status == "completed" && out.env.result() == "recorded "+id:
				w.f.answered.Add(1)
			default:
				w.f.fail("execute of %s on process %d answered %s", id, out.p, describe(out))
			}
			return
		}
		w.f.cut.Add(1)
		if !w.f.killedUnder(out) {
			w.f.fail("execute of %s on process %d failed with no kill: %v", id, out.p, out.err)
		}
		run := w.find(ctx, id)
		if run == "" {
			w.f.notStored.Add(1)
			continue
		}
		w.f.found.Add(1)
		now := time.Now()
		w.deferred = append(w.deferred, &resumeItem{id: id, run: run, due: now.Add(time.Second), until: now.Add(testenv.Timeout(90 * time.Second))})
		return
	}
}

// find looks the run that writes id up in the database, once the last
// statements the dead process sent have landed.
func (w *worker) find(ctx context.Context, id string) string {
	time.Sleep(200 * time.Millisecond)
	run, err := w.f.view.runOf(ctx, id)
	if err != nil {
		w.f.fail("looking up the run of %s: %v", id, err)
	}
	return run
}

// resumeDue resumes the lost runs whose time has come.
func (w *worker) resumeDue(ctx context.Context) {
	keep := w.deferred[:0]
	for _, it := range w.deferred {
		if time.Now().Before(it.due) || ctx.Err() != nil {
			keep = append(keep, it)
			continue
		}
		out := w.a.execute(ctx, map[string]any{"resume": it.run})
		switch {
		case out.err != nil:
			w.f.resumeCut.Add(1)
			if !w.f.killedUnder(out) {
				w.f.fail("resume of %s (%s) on process %d failed with no kill: %v", it.run, it.id, out.p, out.err)
			}
			it.due = time.Now().Add(time.Second)
		case out.env == nil && strings.Contains(out.toolErr, "is running in another process"):
			w.f.busy.Add(1)
			it.due = time.Now().Add(2 * time.Second)
		case out.env != nil && out.env.Status == "completed" && out.env.result() == "recorded "+it.id:
			w.f.resumedDone.Add(1)
			continue
		case out.env != nil && out.env.inFlight():
			w.f.resumedInFlight.Add(1)
			continue
		default:
			w.f.fail("resume of %s (%s) on process %d answered %s", it.run, it.id, out.p, describe(out))
			continue
		}
		if time.Now().After(it.until) {
			w.f.fail("resume of %s (%s) still refused or cut after %v", it.run, it.id, testenv.Timeout(90*time.Second))
			continue
		}
		keep = append(keep, it)
	}
	w.deferred = keep
}

func describe(out callOutcome) string {
	switch {
	case out.err != nil:
		return "an error: " + out.err.Error()
	case out.env == nil:
		return "a tool error: " + out.toolErr
	}
	return fmt.Sprintf("%s, result %s, error %v, pending %v", out.env.Status, out.env.Result, out.env.Error, out.env.Pending)
}
