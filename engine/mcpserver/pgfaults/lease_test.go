//go:build linux

package pgfaults

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/capabilities-sh/capabilities/store/postgres"
)

// TestLostLeaseNeverRepeatsAWrite: a process that stops renewing its lease
// on a run without dying (frozen here with SIGSTOP; a long pause, a VM
// suspended, a network cut from the database) loses the run to another
// process that resumes it. When it wakes up it must not go on making the
// run's writes: the other process makes them. The run writes l0001-01,
// waits on a read the test holds, then writes l0001-02; process 0 is
// frozen at the read, process 1 takes the run over once the lease has
// expired and reaches the same read, then process 0 is woken and both reads
// answer. The upstream's call log must hold each write once.
func TestLostLeaseNeverRepeatsAWrite(t *testing.T) {
	pg := testenv.StartPostgres(t)
	db := pg.NewDatabase(t)
	up := startUpstream(t, 0)
	c := newCluster(t, db, up, 2)
	view := openDB(t, db)
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(3*time.Minute))
	defer cancel()

	const code = `await up.record({id: "l0001-01"}); await up.wait({}); return await up.record({id: "l0001-02"})`
	first := make(chan callOutcome, 1)
	go func() {
		a := newAgent(c, "first", 0)
		defer a.close()
		first <- a.execute(ctx, map[string]any{"code": code})
	}()
	waitFor(t, "process 0 to reach the read", func() bool { return up.waiting.Load() == 1 })
	run, err := view.runOf(ctx, "l0001-01")
	if err != nil || run == "" {
		t.Fatalf("the run is not in the database: %q, %v", run, err)
	}
	pid := c.pid(0)
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	woken := false
	wake := func() {
		if !woken {
			woken = true
			_ = syscall.Kill(pid, syscall.SIGCONT)
		}
	}
	defer wake()
	frozen := time.Now()

	// Process 1 resumes the run as soon as the lease lets it.
	second := make(chan callOutcome, 1)
	refused := 0
	go func() {
		b := newAgent(c, "second", 1)
		defer b.close()
		for {
			out := b.execute(ctx, map[string]any{"resume": run})
			if out.err != nil || !strings.Contains(out.toolErr, "is running in another process") || ctx.Err() != nil {
				second <- out
				return
			}
			refused++
			time.Sleep(200 * time.Millisecond)
		}
	}()
	waitFor(t, "process 1 to take the run over and reach the read", func() bool {
		select {
		case out := <-second:
			t.Fatalf("process 1's resume ended before the read: %s", describe(out))
		default:
		}
		return up.waiting.Load() == 2
	})
	tookOver := time.Since(frozen)
	// Process 0 wakes up: its renewal finds the lease taken. Then both
	// reads answer.
	wake()
	time.Sleep(postgres.DefaultLeaseTTL/3 + time.Second)
	close(up.gate)
	outFirst, outSecond := <-first, <-second
	calls := up.calls(t)
	t.Logf("process 0 frozen with the run at its read; process 1 took it over %v later (refused %d times while the lease lasted); process 0 answered %s; process 1 answered %s; writes: l0001-01 ×%d, l0001-02 ×%d",
		tookOver.Round(100*time.Millisecond), refused, describe(outFirst), describe(outSecond), calls["l0001-01"], calls["l0001-02"])
	if calls["l0001-01"] != 1 || calls["l0001-02"] != 1 {
		t.Errorf("each write must be made exactly once: l0001-01 ×%d, l0001-02 ×%d", calls["l0001-01"], calls["l0001-02"])
	}
	if outFirst.env != nil || !strings.Contains(outFirst.toolErr, "is running in another process") {
		t.Errorf("process 0's execute answered %s, want that the run is running in another process", describe(outFirst))
	}
	if outSecond.env == nil || outSecond.env.Status != "completed" || outSecond.env.result() != "recorded l0001-02" {
		t.Errorf("process 1's resume answered %s, want the run completed", describe(outSecond))
	}
	for _, p := range c.panics() {
		t.Errorf("a hub process panicked:\n%s", p)
	}
}

// waitFor polls cond until it holds, failing the test after a while.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	wait := testenv.Timeout(60 * time.Second)
	deadline := time.Now().Add(wait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: not within %v", what, wait)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
