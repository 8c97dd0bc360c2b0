package store_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/store"
)

// BenchmarkAppend is one journal line, durable (a settled call).
func BenchmarkAppend(b *testing.B) {
	f, _, err := store.Init(filepath.Join(b.TempDir(), "hub"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	line := []byte(`{"seq":1,"address":"github.createIssue","argsDigest":"0123456789abcdef","ok":true,"value":{"number":42},"ms":120}`)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := f.Append(ctx, store.Runs, "r1", line); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPutRun is one run record write, back to back: the spare files
// are never refilled (runs/ is never quiet), so each write creates a file.
func BenchmarkPutRun(b *testing.B) { benchPutRun(b, 0) }

// BenchmarkPutRunSpare is one run record write with a spare file ready, as
// when executes are not back to back: 10 ms pass (untimed) between writes.
func BenchmarkPutRunSpare(b *testing.B) { benchPutRun(b, 10*time.Millisecond) }

// BenchmarkPutNewRunSpare is BenchmarkPutRunSpare with a new record each
// time, as a run that calls nothing writes its one record.
func BenchmarkPutNewRunSpare(b *testing.B) { benchPutRunID(b, 10*time.Millisecond, true) }

// BenchmarkPutNewRun is a new record each time, back to back: the one
// file a run that calls nothing wrote before PutFinal, once the spares
// are used up.
func BenchmarkPutNewRun(b *testing.B) { benchPutRunID(b, 0, true) }

// BenchmarkPutFinalRun is BenchmarkPutNewRun through PutFinal, as a run
// that calls nothing writes its record now: a line in a shared file and a
// link to it.
func BenchmarkPutFinalRun(b *testing.B) { benchPutRunWith(b, 0, true, true) }

func benchPutRun(b *testing.B, pause time.Duration) { benchPutRunID(b, pause, false) }

func benchPutRunID(b *testing.B, pause time.Duration, newID bool) {
	benchPutRunWith(b, pause, newID, false)
}

func benchPutRunWith(b *testing.B, pause time.Duration, newID, final bool) {
	f, _, err := store.Init(filepath.Join(b.TempDir(), "hub"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	rec := map[string]any{"id": "r1", "status": "running", "code": "return await github.createIssue({owner, repo, title})"}
	ctx := context.Background()
	n := 0
	b.ReportAllocs()
	for b.Loop() {
		if pause > 0 {
			b.StopTimer()
			time.Sleep(pause)
			b.StartTimer()
		}
		id := "r1"
		if newID {
			id = fmt.Sprintf("r%d", n)
		}
		n++
		put := f.Put
		if final {
			put = f.PutFinal
		}
		if err := put(ctx, store.Runs, id, rec); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkHeld is one question whether a run is held (the approvals poll
// asks it of each run recorded running), held and not.
func BenchmarkHeld(b *testing.B) {
	f, _, err := store.Init(filepath.Join(b.TempDir(), "hub"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	ctx := context.Background()
	release, err := f.Hold(ctx, store.Runs, "r1")
	if err != nil {
		b.Fatal(err)
	}
	defer release()
	for _, id := range []string{"r1", "r2"} {
		b.Run(id, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := f.Held(ctx, store.Runs, id); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
