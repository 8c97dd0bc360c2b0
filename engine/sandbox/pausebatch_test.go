package sandbox

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestPauseAsksEveryCallIssuedTogether: when the attempt pauses, every call
// the code issued before it could see a paused call's result has reached
// the host (so each can ask), whatever order the host answered in; a call
// the code makes only after such a result does not. The delays make later
// calls answer first; each case runs several times, and the calls the host
// saw are the same every time.
func TestPauseAsksEveryCallIssuedTogether(t *testing.T) {
	tests := []struct {
		name string
		js   string
		want []string // the addresses the host saw, by Seq
	}{
		{
			name: "three together, the last answered first",
			js:   `await Promise.all([gh.pause({ ms: 30 }), gh.pause({ ms: 10 }), gh.pause({})]); await gh.echo({ after: true })`,
			want: []string{"gh.pause", "gh.pause", "gh.pause"},
		},
		{
			name: "more than run at once: the queued ones reach the host too",
			js:   `await Promise.all(Array.from({ length: 11 }, (_, i) => gh.pause({ ms: 11 - i })))`,
			want: slices.Repeat([]string{"gh.pause"}, 11),
		},
		{
			name: "one after another: the second is not made",
			js:   `await gh.pause({}); await gh.pause({})`,
			want: []string{"gh.pause"},
		},
		{
			name: "an earlier call's result comes first and the code issues another",
			js:   `const r = gh.sleep({ ms: 30 }); const w = gh.pause({}); await r; const w2 = gh.pause({}); await Promise.all([w, w2]); await gh.echo({})`,
			want: []string{"gh.sleep", "gh.pause", "gh.pause"},
		},
		{
			name: "a later call's result is not delivered past the pause",
			js:   `const w = gh.pause({ ms: 30 }); await gh.echo({}); await gh.echo({ late: true }); await w`,
			want: []string{"gh.pause", "gh.echo"},
		},
		{
			name: "a timer does not fire while a call pauses",
			js:   `await Promise.all([gh.pause({ ms: 10 }), new Promise(r => setTimeout(r, 1)).then(() => gh.pause({}))])`,
			want: []string{"gh.pause"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for i := range 5 {
				h := &fakeHost{}
				out := driver(t).Run(context.Background(), Request{JS: tt.js, Host: h, Namespaces: testNamespaces, Seed: 7, Clock: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)})
				if out.Status != StatusPaused || out.Error != nil {
					t.Fatalf("attempt %d: %+v, want paused", i, out)
				}
				h.mu.Lock()
				calls := slices.Clone(h.calls)
				h.mu.Unlock()
				slices.SortFunc(calls, func(a, b Call) int { return a.Seq - b.Seq })
				var got []string
				for j, c := range calls {
					if c.Seq != j+1 {
						t.Fatalf("attempt %d: the host saw Seqs %+v, want 1…%d once each", i, calls, len(calls))
					}
					got = append(got, c.Address)
				}
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Fatalf("attempt %d: calls the host saw (-want +got):\n%s", i, diff)
				}
			}
		})
	}
}
