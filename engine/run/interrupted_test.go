package run_test

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/run"
	"github.com/capabilities-sh/capabilities/store"
	"github.com/google/go-cmp/cmp"
)

// TestInterruptedOnlyWhenNoProcessHoldsIt: of two runs recorded running,
// the one another live process holds (as its attempt does) is running and
// the one nobody holds is interrupted; killing the holder (SIGKILL, no
// record written) makes its run interrupted at the next poll, though the
// poll skips records that did not change.
func TestInterruptedOnlyWhenNoProcessHoldsIt(t *testing.T) {
	const live, dead, paused, done = "r000000000000000000live", "r000000000000000000dead", "r0000000000000000paused", "r000000000000000000done"
	if dir := os.Getenv("RUN_TEST_HOLDER_DIR"); dir != "" {
		st, err := store.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Hold(context.Background(), store.Runs, live); err != nil {
			t.Fatal(err)
		}
		os.Stdout.WriteString("held\n")
		time.Sleep(time.Minute) // killed long before
		return
	}
	if runtime.GOOS != "linux" {
		t.Skip("only Linux tells a free hold without taking it; elsewhere every run recorded running stays running")
	}
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "hub")
	st, _, err := store.Init(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	now := time.Now().UTC()
	for i, r := range []struct {
		id     string
		status model.RunStatus
	}{{live, model.RunRunning}, {dead, model.RunRunning}, {paused, model.RunAwaitingApproval}, {done, model.RunCompleted}} {
		at := now.Add(time.Duration(i) * time.Second)
		if err := st.Put(ctx, store.Runs, r.id, model.Run{ID: r.id, Status: r.status, Code: "return 1", Attempts: 1, CreatedAt: at, UpdatedAt: at}); err != nil {
			t.Fatal(err)
		}
	}
	holder := exec.Command(os.Args[0], "-test.run=^TestInterruptedOnlyWhenNoProcessHoldsIt$")
	holder.Env = append(os.Environ(), "RUN_TEST_HOLDER_DIR="+dir)
	out, err := holder.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = holder.Process.Kill(); _ = holder.Wait() }()
	line := make([]byte, 5)
	if _, err := io.ReadFull(out, line); err != nil || string(line) != "held\n" {
		t.Fatalf("the holding process said %q, %v", line, err)
	}

	eng := run.New(st, nil, nil, run.Options{})
	type seen struct {
		Paused, Interrupted []string
		Effective           map[string]model.RunStatus
	}
	look := func() seen {
		t.Helper()
		w, err := eng.Waiting(ctx)
		if err != nil {
			t.Fatal(err)
		}
		s := seen{Effective: map[string]model.RunStatus{}}
		for _, r := range w.Paused {
			s.Paused = append(s.Paused, r.ID)
		}
		for _, r := range w.Interrupted {
			s.Interrupted = append(s.Interrupted, r.ID)
			if r.Status != model.RunRunning {
				t.Errorf("Waiting gave interrupted run %s with status %s; want it as recorded (running)", r.ID, r.Status)
			}
		}
		for _, id := range []string{live, dead, paused, done} {
			r, err := eng.Get(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			s.Effective[id] = eng.Effective(ctx, r)
		}
		return s
	}
	whileHeld := seen{
		Paused:      []string{paused},
		Interrupted: []string{dead},
		Effective:   map[string]model.RunStatus{live: model.RunRunning, dead: model.RunInterrupted, paused: model.RunAwaitingApproval, done: model.RunCompleted},
	}
	for _, poll := range []string{"first poll", "second poll (records unchanged)"} {
		if diff := cmp.Diff(whileHeld, look()); diff != "" {
			t.Fatalf("%s, while another process holds %s (-want +got):\n%s", poll, live, diff)
		}
	}
	if _, err := eng.Resume(ctx, live); !errors.Is(err, run.ErrRunningElsewhere) {
		t.Fatalf("Resume of the run another process holds = %v; want ErrRunningElsewhere", err)
	}

	_ = holder.Process.Kill() // SIGKILL: the kernel drops its hold, nothing is written
	_ = holder.Wait()
	afterKill := seen{
		Paused:      []string{paused},
		Interrupted: []string{dead, live}, // newest first
		Effective:   map[string]model.RunStatus{live: model.RunInterrupted, dead: model.RunInterrupted, paused: model.RunAwaitingApproval, done: model.RunCompleted},
	}
	if diff := cmp.Diff(afterKill, look()); diff != "" {
		t.Fatalf("after the holder was killed (-want +got):\n%s", diff)
	}
}

// endsMeanwhile is a store whose first Held answer comes after the run's
// attempt ended: it writes the record completed (as an attempt does before
// it lets go of the hold) and says the hold is free.
type endsMeanwhile struct {
	store.Store
	ended bool
}

func (s *endsMeanwhile) Held(ctx context.Context, kind store.Kind, id string) (bool, error) {
	if !s.ended {
		s.ended = true
		err := store.UpdateJSON(ctx, s.Store, kind, id, func(r *model.Run) (*model.Run, error) {
			r.Status, r.UpdatedAt = model.RunCompleted, r.UpdatedAt.Add(time.Millisecond)
			return r, nil
		})
		return false, err
	}
	return s.Store.Held(ctx, kind, id)
}

// TestRunThatEndsAsItIsAskedAboutIsNotInterrupted: a run read as running
// whose attempt ends before its hold is tested (the hold then free) is not
// shown interrupted: the record is read again and says completed.
func TestRunThatEndsAsItIsAskedAboutIsNotInterrupted(t *testing.T) {
	ctx := context.Background()
	mem := store.NewMem()
	now := time.Now().UTC()
	const id = "r0000000000000000000a"
	if err := mem.Put(ctx, store.Runs, id, model.Run{ID: id, Status: model.RunRunning, Code: "return 1", Attempts: 1, CreatedAt: now, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	st := &endsMeanwhile{Store: mem}
	eng := run.New(st, nil, nil, run.Options{})
	r, err := eng.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if got := eng.Effective(ctx, r); got != model.RunRunning {
		t.Errorf("Effective of a run that ended as it was asked about = %s; want running (as read: its next read says completed)", got)
	}
	if got := eng.Effective(ctx, r); got != model.RunRunning {
		t.Errorf("Effective of a record read as running that is now completed = %s; want running (the status read)", got)
	}
}

// TestWaitingOverAStoreWithoutFiles: the memory store (no directory to
// stat) lists interrupted runs too, and not one that is held.
func TestWaitingOverAStoreWithoutFiles(t *testing.T) {
	ctx := context.Background()
	st := store.NewMem()
	now := time.Now().UTC()
	const held, free = "r0000000000000000held", "r0000000000000000free"
	for _, id := range []string{held, free} {
		if err := st.Put(ctx, store.Runs, id, model.Run{ID: id, Status: model.RunRunning, Code: "return 1", CreatedAt: now, UpdatedAt: now}); err != nil {
			t.Fatal(err)
		}
	}
	release, err := st.Hold(ctx, store.Runs, held)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	w, err := run.New(st, nil, nil, run.Options{}).Waiting(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range w.Interrupted {
		got = append(got, r.ID)
	}
	if diff := cmp.Diff([]string{free}, got); diff != "" || len(w.Paused) != 0 {
		t.Errorf("Waiting.Interrupted (-want +got):\n%s; paused %v", diff, w.Paused)
	}
}
