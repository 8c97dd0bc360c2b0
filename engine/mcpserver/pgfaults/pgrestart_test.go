//go:build linux

package pgfaults

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/internal/testenv"
)

// unreachable is how the store says the database is away (store/postgres's
// describe): not reachable, a connection it ended, or starting or stopping.
var unreachable = regexp.MustCompile(`PostgreSQL (cannot be reached|ended the connection|is starting or shutting down)`)

// TestPostgresRestartedUnderLoad: 8 go-sdk clients make writes through
// three `hub serve --http` processes while PostgreSQL is stopped (a fast
// shutdown: its connections are ended) and started again 4 s later. While
// it is away every execute answers, and each failure says the database is
// unreachable (no hang, no crash); once it is back, every process runs
// executes again without being restarted (the same pids). Then the runs
// the outage cut are settled as after the kills, and nothing is lost,
// repeated or corrupt.
func TestPostgresRestartedUnderLoad(t *testing.T) {
	pg := testenv.StartPostgres(t)
	db := pg.NewDatabase(t)
	up := startUpstream(t, 20*time.Millisecond)
	c := newCluster(t, db, up, 3)
	view := openDB(t, db)
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(5*time.Minute))
	defer cancel()
	var pids []int
	for i := range c.procs {
		pids = append(pids, c.pid(i))
	}

	const (
		upPhase = iota
		away
		back
	)
	var (
		phase             atomic.Int32
		n                 atomic.Int64
		mu                sync.Mutex
		ok                [3]int // completed, by the phase the call began in
		failedClearly     [3]int
		slowestFailure    time.Duration
		sample            string // one of the failures, as the client read it
		unclear           []string
		stop              = make(chan struct{})
		wg                sync.WaitGroup
		plainWrite        = func(id string) string { return fmt.Sprintf(`return await up.record({id: %q})`, id) }
		clients           = 8
		outage            = 4 * time.Second
		recovered         = make([]time.Duration, len(c.procs))
		readyWhileAway    []string
		readyAfterRecover []string
	)
	for i := range clients {
		wg.Go(func() {
			a := newAgent(c, "client-"+strconv.Itoa(i), i)
			defer a.close()
			for {
				select {
				case <-stop:
					return
				default:
				}
				id := fmt.Sprintf("p%04d-01", n.Add(1))
				began, start := phase.Load(), time.Now()
				out := a.execute(ctx, map[string]any{"code": plainWrite(id)})
				took := time.Since(start)
				msg := ""
				switch {
				case out.err != nil:
					msg = "no answer: " + out.err.Error()
				case out.env == nil:
					msg = out.toolErr
				case out.env.Status == "completed" && out.env.result() == "recorded "+id:
				case out.env.Error != nil:
					msg = out.env.Error.Message
				default:
					msg = describe(out)
				}
				mu.Lock()
				switch {
				case msg == "":
					ok[began]++
				case out.err == nil && unreachable.MatchString(msg):
					failedClearly[began]++
					if sample == "" && began == away {
						sample = msg
					}
					slowestFailure = max(slowestFailure, took)
				default:
					unclear = append(unclear, fmt.Sprintf("%s (phase %d, %v): %s", id, began, took.Round(time.Millisecond), msg))
				}
				mu.Unlock()
				time.Sleep(50 * time.Millisecond)
			}
		})
	}
	probe := func(i int) string {
		resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(c.ports[i]) + "/readyz")
		if err != nil {
			return err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return fmt.Sprintf("%d %s", resp.StatusCode, b)
	}

	time.Sleep(3 * time.Second)
	phase.Store(away)
	pg.Stop(t)
	time.Sleep(outage / 2)
	for i := range c.procs {
		readyWhileAway = append(readyWhileAway, probe(i))
	}
	time.Sleep(outage / 2)
	pg.Start(t)
	phase.Store(back)
	restarted := time.Now()
	// Each process runs an execute again, by itself.
	for i := range c.procs {
		a := &agent{c: c, name: "recovery-" + strconv.Itoa(i), p: i, hc: newAgent(c, "", i).hc}
		deadline := time.Now().Add(testenv.Timeout(60 * time.Second))
		for {
			if a.cs == nil {
				if ok, _, _ := c.up(i); !ok {
					t.Fatalf("process %d is down", i)
				}
			}
			id := fmt.Sprintf("p%04d-01", n.Add(1))
			out := a.execute(ctx, map[string]any{"code": plainWrite(id)})
			if out.p == i && out.env != nil && out.env.Status == "completed" {
				recovered[i] = time.Since(restarted)
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("process %d did not run an execute within %v of PostgreSQL's restart: %s", i, testenv.Timeout(60*time.Second), describe(out))
			}
			a.drop()
			a.p = i
			time.Sleep(100 * time.Millisecond)
		}
		a.close()
		readyAfterRecover = append(readyAfterRecover, probe(i))
	}
	time.Sleep(2 * time.Second)
	close(stop)
	wg.Wait()

	for i := range c.procs {
		if got := c.pid(i); got != pids[i] {
			t.Errorf("process %d is pid %d, was %d: it was restarted", i, got, pids[i])
		}
	}
	for _, p := range c.panics() {
		t.Errorf("a hub process panicked:\n%s", p)
	}
	if len(unclear) > 0 {
		t.Errorf("%d executes failed without saying the database is unreachable:\n%s", len(unclear), strings.Join(head(unclear, 20), "\n"))
	}
	if failedClearly[away] == 0 {
		t.Errorf("no execute failed while PostgreSQL was away (%d completed): the test proves nothing", ok[away])
	}
	for i, r := range readyAfterRecover {
		if r[:3] != "200" {
			t.Errorf("process %d's /readyz after recovery: %s", i, r)
		}
	}
	s := settle(t, ctx, c, view, up, true)
	v := judge(t, view, up, false)
	v.check(t)
	t.Logf("PostgreSQL stopped (fast shutdown) for %v under 8 clients on 3 serve processes: before: %d completed; begun while away: %d failed saying the database is unreachable (slowest answer %v), %d completed; begun after the restart: %d completed, %d failed clearly; every process ran an execute again %v after the restart (no process restarted); /readyz while away: %v; after: %v",
		outage, ok[upPhase], failedClearly[away], slowestFailure.Round(time.Millisecond), ok[away], ok[back], failedClearly[back], recovered, readyWhileAway, readyAfterRecover)
	t.Logf("an execute while PostgreSQL was away answered: %s", sample)
	t.Logf("then: %d runs recorded running with no live process resumed (%d made their write then, none repeated), %d paused on an in_flight call skipped by a person; end: %d runs: completed with the write made once %d, failed saying the database was away (no write) %d, skipped by a person with the write made %d / not made %d; lost %d, writes repeated %d, writes without an intent %d, corrupt %d",
		s.interrupted, s.interruptedCalls, s.skipped, v.runs, v.completedWrite, v.failedAway, v.skippedMade, v.skippedNotMade, len(v.lost), len(v.repeated), len(v.unowned), len(v.corrupt))
}
