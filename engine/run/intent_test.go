package run

import (
	"encoding/json"
	"testing"

	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/google/go-cmp/cmp"
)

// TestReadJournal: which calls a journal says settled and which were in
// flight (an intent, no outcome), including journals written before
// intents, whose every line is an outcome.
func TestReadJournal(t *testing.T) {
	type state struct {
		Settled  []int
		InFlight map[int]int // seq → the intent's number
	}
	tests := []struct {
		name  string
		lines []string
		want  state
	}{
		{"a journal from before intents", []string{
			`{"seq":1,"address":"up.echo","argsDigest":"a","ok":true,"value":"x","ms":1,"at":"2026-01-01T00:00:00Z"}`,
			`{"seq":2,"address":"up.record","argsDigest":"b","ok":false,"error":{"code":"approval_denied","message":"no"},"ms":0,"at":"2026-01-01T00:00:00Z"}`,
		}, state{Settled: []int{1, 2}}},
		{"an intent and its outcome", []string{
			`{"seq":1,"address":"up.record","argsDigest":"b","intent":true,"ok":false,"ms":0,"at":"2026-01-01T00:00:00Z"}`,
			`{"seq":1,"address":"up.record","argsDigest":"b","ok":true,"ms":3,"at":"2026-01-01T00:00:00Z"}`,
		}, state{Settled: []int{1}}},
		{"an intent without an outcome", []string{
			`{"seq":1,"address":"up.echo","argsDigest":"a","ok":true,"ms":1,"at":"2026-01-01T00:00:00Z"}`,
			`{"seq":2,"address":"up.record","argsDigest":"b","intent":true,"ok":false,"ms":0,"at":"2026-01-01T00:00:00Z"}`,
		}, state{Settled: []int{1}, InFlight: map[int]int{2: 1}}},
		{"a retry cut short again", []string{
			`{"seq":2,"address":"up.record","argsDigest":"b","intent":true,"ok":false,"ms":0,"at":"2026-01-01T00:00:00Z"}`,
			`{"seq":2,"address":"up.record","argsDigest":"b","intent":true,"ok":false,"ms":0,"at":"2026-01-01T00:00:00Z"}`,
		}, state{InFlight: map[int]int{2: 2}}},
		{"an intent and a failed outcome", []string{
			`{"seq":2,"address":"up.record","argsDigest":"b","intent":true,"ok":false,"ms":0,"at":"2026-01-01T00:00:00Z"}`,
			`{"seq":2,"address":"up.record","argsDigest":"b","ok":false,"error":{"code":"upstream_error","message":"refused"},"ms":0,"at":"2026-01-01T00:00:00Z"}`,
		}, state{Settled: []int{2}}},
		{"parallel calls interleave", []string{
			`{"seq":1,"address":"up.record","argsDigest":"a","intent":true,"ok":false,"ms":0,"at":"2026-01-01T00:00:00Z"}`,
			`{"seq":2,"address":"up.record","argsDigest":"b","intent":true,"ok":false,"ms":0,"at":"2026-01-01T00:00:00Z"}`,
			`{"seq":2,"address":"up.record","argsDigest":"b","ok":true,"ms":2,"at":"2026-01-01T00:00:00Z"}`,
		}, state{Settled: []int{2}, InFlight: map[int]int{1: 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var journal []model.JournalEntry
			for _, l := range tt.lines {
				var je model.JournalEntry
				if err := json.Unmarshal([]byte(l), &je); err != nil {
					t.Fatal(err)
				}
				journal = append(journal, je)
			}
			js := readJournal(journal)
			got := state{}
			for seq := 1; seq <= 3; seq++ {
				if je, ok := js.settled[seq]; ok {
					if je.Intent {
						t.Errorf("call %d is answered from an intent line", seq)
					}
					got.Settled = append(got.Settled, seq)
				}
				if f, ok := js.inFlight[seq]; ok {
					if got.InFlight == nil {
						got.InFlight = map[int]int{}
					}
					got.InFlight[seq] = f.n
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("readJournal (-want +got):\n%s", diff)
			}
			if n := len(settledOnly(journal)); n != len(got.Settled) {
				t.Errorf("settledOnly kept %d lines, want %d", n, len(got.Settled))
			}
		})
	}
}

func TestInFlightID(t *testing.T) {
	for _, tt := range []struct {
		seq, n int
		want   string
	}{{3, 1, "c3-in-flight"}, {3, 2, "c3-in-flight-2"}, {12, 3, "c12-in-flight-3"}} {
		if got := inFlightID(tt.seq, tt.n); got != tt.want {
			t.Errorf("inFlightID(%d, %d) = %q, want %q", tt.seq, tt.n, got, tt.want)
		}
	}
}
