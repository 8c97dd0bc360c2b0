package sandbox

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/google/go-cmp/cmp"
)

// waiter is one queued acquire of a fairTurns test.
type waiter struct {
	name, key string
	again     bool
}

// TestFairTurnsOrder: which waiters get the turns released one by one, for
// keys queued in a given order.
func TestFairTurnsOrder(t *testing.T) {
	tests := []struct {
		name    string
		n       int // turns, all held by key "h" (named) or "" when hold is ""
		perKey  int
		off     bool
		hold    string
		waiters []waiter
		want    []string
	}{
		{
			name: "one key: arrival order, again before next", n: 1, perKey: 1, hold: "",
			waiters: []waiter{{"n1", "", false}, {"n2", "", false}, {"a1", "", true}, {"n3", "", false}, {"a2", "", true}},
			want:    []string{"a1", "a2", "n1", "n2", "n3"},
		},
		{
			name: "round robin across keys, arrival order within each", n: 1, perKey: 1, hold: "",
			waiters: []waiter{{"a1", "a", false}, {"a2", "a", false}, {"a3", "a", false}, {"b1", "b", false}, {"b2", "b", false}, {"c1", "c", false}},
			want:    []string{"a1", "b1", "c1", "a2", "b2", "a3"},
		},
		{
			name: "again before next within a key, not across keys", n: 1, perKey: 1, hold: "",
			waiters: []waiter{{"a1", "a", false}, {"b1", "b", false}, {"bA", "b", true}, {"a2", "a", false}},
			want:    []string{"a1", "bA", "a2", "b1"},
		},
		{
			name: "fairness off: one queue", n: 1, perKey: 1, off: true, hold: "",
			waiters: []waiter{{"a1", "a", false}, {"a2", "a", false}, {"b1", "b", false}, {"bA", "b", true}},
			want:    []string{"bA", "a1", "a2", "b1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFairTurns(tt.n, tt.perKey, tt.off)
			for range tt.n {
				if ch := f.enqueue(tt.hold, false); ch != nil {
					t.Fatal("the first turns were not free")
				}
			}
			chans := map[string]chan struct{}{}
			for _, w := range tt.waiters {
				ch := f.enqueue(w.key, w.again)
				if ch == nil {
					t.Fatalf("%s took a turn while all were held", w.name)
				}
				chans[w.name] = ch
			}
			keyOf := map[string]string{}
			for _, w := range tt.waiters {
				keyOf[w.name] = w.key
			}
			var got []string
			holder := tt.hold
			for range tt.waiters {
				f.release(holder)
				granted := ""
				for name, ch := range chans {
					select {
					case <-ch:
						if granted != "" {
							t.Fatalf("one release granted %s and %s", granted, name)
						}
						granted = name
					default:
					}
				}
				if granted == "" {
					t.Fatalf("a release granted no one; so far %v", got)
				}
				delete(chans, granted)
				got = append(got, granted)
				holder = keyOf[granted]
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("grant order (-want +got):\n%s", diff)
			}
			f.release(holder)
			if f.free != tt.n || len(f.ring) != 0 || len(f.keys) > 1 {
				t.Errorf("after every turn came back: free %d (want %d), ring %d, keys %d", f.free, tt.n, len(f.ring), len(f.keys))
			}
		})
	}
}

// TestFairTurnsCap: a named key holds at most perKey turns even with more
// free; the empty key has no cap; a capped key's waiter gets the turn its
// own key gives back; and keys that hold nothing are forgotten.
func TestFairTurnsCap(t *testing.T) {
	f := newFairTurns(4, 2, false)
	for i := range 2 {
		if f.enqueue("a", false) != nil {
			t.Fatalf("a's turn %d was not free", i+1)
		}
	}
	ch := f.enqueue("a", false)
	if ch == nil {
		t.Fatal("a took a third turn, over its cap of 2")
	}
	for i := range 2 {
		if f.enqueue("", false) != nil {
			t.Fatalf("the empty key's turn %d was not free", i+1)
		}
	}
	f.release("")
	select {
	case <-ch:
		t.Fatal("a over its cap got the empty key's turn")
	default:
	}
	if f.free != 1 {
		t.Fatalf("free = %d after the empty key gave one back, want 1", f.free)
	}
	f.release("a")
	select {
	case <-ch:
	default:
		t.Fatal("a's waiter did not get the turn a gave back")
	}
	f.release("a")
	f.release("a")
	f.release("")
	if f.free != 4 || len(f.ring) != 0 {
		t.Errorf("free %d, ring %d, want 4 and 0", f.free, len(f.ring))
	}
	if _, ok := f.keys["a"]; ok {
		t.Error("the idle key a is still kept")
	}

	off := newFairTurns(4, 2, true)
	for i := range 4 {
		if off.enqueue("a", false) != nil {
			t.Fatalf("fairness off: a's turn %d was not free", i+1)
		}
	}
}

// TestFairTurnsAbandon: a waiter that gives up leaves the queue (the next
// one is served), and one granted as it gave up hands the turn on.
func TestFairTurnsAbandon(t *testing.T) {
	f := newFairTurns(1, 1, false)
	if f.enqueue("a", false) != nil {
		t.Fatal("the turn was not free")
	}
	b1 := f.enqueue("b", false)
	b2 := f.enqueue("b", false)
	f.abandon("b", b1)
	f.release("a")
	select {
	case <-b2:
	default:
		t.Fatal("b2 did not get the turn b1 gave up waiting for")
	}
	c := f.enqueue("c", false)
	f.release("b")
	// c was granted; it gives up anyway (its stop came at once): the turn
	// is free again.
	f.abandon("c", c)
	if f.free != 1 || len(f.ring) != 0 || len(f.keys) != 0 {
		t.Errorf("free %d, ring %d, keys %d; want 1, 0, 0", f.free, len(f.ring), len(f.keys))
	}
	stop := make(chan struct{})
	if !f.acquire("d", false, stop) {
		t.Fatal("acquire of a free turn failed")
	}
	close(stop)
	if f.acquire("e", false, stop) {
		t.Fatal("acquire with its stop closed and no turn free succeeded")
	}
	f.release("d")
	if f.free != 1 || len(f.keys) != 0 {
		t.Errorf("free %d, keys %d; want 1 and 0", f.free, len(f.keys))
	}
}

// TestTenantFlood: on one Driver, a key flooding it with infinite loops
// (more of them than there are run slots) and a key running trivial code:
// the quiet key's attempts all complete while the flood goes on, the
// flood's loops are cut by their compute limit, and the flood never holds
// more than its cap of run slots or compute turns.
func TestTenantFlood(t *testing.T) {
	const maxRunning, maxComputing = 4, 2
	d, err := New(Options{MemoryBytes: testMemoryBytes, MaxRunning: maxRunning, MaxComputing: maxComputing, Warm: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var mu sync.Mutex
	peak := map[string]int{}
	observe := func(kind string) func(string, int) {
		return func(key string, held int) {
			mu.Lock()
			defer mu.Unlock()
			peak[kind+" "+key] = max(peak[kind+" "+key], held)
		}
	}
	d.running.observe = observe("running")
	d.cpu.observe = observe("computing")

	ctx, stopFlood := context.WithCancel(context.Background())
	defer stopFlood()
	flood := Limits{ComputeMs: 300, WallMs: testWallMs, MemoryBytes: testMemoryBytes, QueueMs: testWallMs}
	codes := map[string]int{}
	var wg sync.WaitGroup
	for range 4 * maxRunning {
		wg.Go(func() {
			for ctx.Err() == nil {
				out := d.Run(ctx, Request{Key: "flood", JS: "for (;;) {}", Host: &fakeHost{}, Limits: flood})
				code := string(out.Status)
				if out.Error != nil {
					code += ":" + out.Error.Code
				}
				mu.Lock()
				codes[code]++
				mu.Unlock()
			}
		})
	}
	// Let the flood take what it may.
	for deadline := time.Now().Add(testenv.Timeout(10 * time.Second)); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		mu.Lock()
		n := peak["running flood"]
		mu.Unlock()
		if n >= maxRunning/2 {
			break
		}
	}

	quiet := Limits{WallMs: testWallMs, MemoryBytes: testMemoryBytes, QueueMs: testWallMs}
	qctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(30*time.Second))
	defer cancel()
	var qwg sync.WaitGroup
	quietCodes := map[string]int{}
	for range 2 * maxRunning {
		qwg.Go(func() {
			out := d.Run(qctx, Request{Key: "quiet", JS: "let s = 0; for (let i = 0; i < 1000; i++) s += i; return s", Host: &fakeHost{}, Limits: quiet})
			code := string(out.Status)
			if out.Error != nil {
				code += ":" + out.Error.Code
			} else if string(out.Result) != "499500" {
				code += ":result " + string(out.Result)
			}
			mu.Lock()
			quietCodes[code]++
			mu.Unlock()
		})
	}
	qwg.Wait()
	// The flood goes on: its loops keep being cut by their compute limit.
	for deadline := time.Now().Add(testenv.Timeout(30 * time.Second)); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		mu.Lock()
		n := codes["failed:"+CodeComputeTimeout]
		mu.Unlock()
		if n >= 2 {
			break
		}
	}
	stopFlood()
	wg.Wait()

	if diff := cmp.Diff(map[string]int{"completed": 2 * maxRunning}, quietCodes); diff != "" {
		t.Errorf("the quiet key's attempts during the flood (-want +got):\n%s", diff)
	}
	if codes["failed:"+CodeComputeTimeout] < 2 {
		t.Errorf("flood outcomes %v, want its infinite loops cut by their compute limit", codes)
	}
	for code, n := range codes {
		if code != "failed:"+CodeComputeTimeout && code != string(StatusCancelled)+":"+CodeCancelled {
			t.Errorf("%d flood attempts ended %s, want %s (or cancelled at the end)", n, code, CodeComputeTimeout)
		}
	}
	want := map[string]int{"running flood": maxRunning / 2, "computing flood": maxComputing / 2}
	for k, limit := range want {
		if peak[k] != limit {
			t.Errorf("%s: at most %d held at once, want its cap, %d", k, peak[k], limit)
		}
	}
	if peak["running quiet"] < 1 || peak["running quiet"] > maxRunning/2 {
		t.Errorf("running quiet: at most %d held at once, want 1 to its cap, %d", peak["running quiet"], maxRunning/2)
	}
}

// BenchmarkAdmission is what an attempt pays to be admitted when a turn is
// free: a run slot and a compute turn taken and given back, for the empty
// key (a hub's own Driver) and a named one (a tenant's, forgotten when it
// holds nothing); chan is the buffered channel the run slots were before.
func BenchmarkAdmission(b *testing.B) {
	for _, key := range []string{"", "tn_a"} {
		b.Run(fmt.Sprintf("key=%q", key), func(b *testing.B) {
			run, cpu := newFairTurns(16, 8, false), newFairTurns(3, 2, false)
			b.ReportAllocs()
			for b.Loop() {
				run.enqueue(key, false)
				cpu.enqueue(key, false)
				cpu.release(key)
				run.release(key)
			}
		})
	}
	b.Run("chan", func(b *testing.B) {
		ch := make(chan struct{}, 16)
		b.ReportAllocs()
		for b.Loop() {
			ch <- struct{}{}
			<-ch
		}
	})
}

// TestFairTurnsOthersWait: a key is told others wait only for a waiter of
// another key under its cap.
func TestFairTurnsOthersWait(t *testing.T) {
	f := newFairTurns(2, 1, false)
	f.enqueue("a", false)
	f.enqueue("", false)
	if f.othersWait("a") || f.othersWait("") {
		t.Fatal("others wait while no one waits")
	}
	a2 := f.enqueue("a", false) // over its cap
	if f.othersWait("") {
		t.Error("the empty key is told a key at its cap waits")
	}
	e2 := f.enqueue("", false)
	if f.othersWait("") {
		t.Error("the empty key is told its own waiter is another key's")
	}
	if !f.othersWait("a") {
		t.Error("a is not told the empty key waits")
	}
	f.abandon("a", a2)
	f.abandon("", e2)
	if f.waiting.Load() != 0 {
		t.Errorf("waiting = %d with no one waiting", f.waiting.Load())
	}
}

// TestComputeSlices: with one compute turn, a key's infinite loop that
// holds it gives it up, a slice at a time, to another key's attempts:
// they complete while the loop goes on (it has not ended when they do).
func TestComputeSlices(t *testing.T) {
	d, err := New(Options{MemoryBytes: testMemoryBytes, MaxComputing: 1, Warm: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	computing := make(chan struct{})
	var once sync.Once
	d.cpu.observe = func(key string, _ int) {
		if key == "flood" {
			once.Do(func() { close(computing) })
		}
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	loop := make(chan Outcome, 1)
	go func() {
		loop <- d.Run(ctx, Request{Key: "flood", JS: "for (;;) {}", Limits: Limits{ComputeMs: testWallMs, WallMs: testWallMs, MemoryBytes: testMemoryBytes}})
	}()
	<-computing
	qctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(30*time.Second))
	defer cancel()
	for i := range 5 {
		out := d.Run(qctx, Request{Key: "quiet", JS: "let s = 0; for (let i = 0; i < 100000; i++) s += i; return s", Host: &fakeHost{}, Limits: Limits{WallMs: testWallMs, MemoryBytes: testMemoryBytes}})
		if out.Status != StatusCompleted || string(out.Result) != "4999950000" {
			t.Fatalf("quiet run %d beside the loop: %s %s %+v", i+1, out.Status, out.Result, out.Error)
		}
	}
	select {
	case out := <-loop:
		t.Fatalf("the loop ended before the quiet runs: %s %+v", out.Status, out.Error)
	default:
	}
	stop()
	if out := <-loop; out.Status != StatusCancelled {
		t.Errorf("the loop, cancelled: %s %+v", out.Status, out.Error)
	}
}
