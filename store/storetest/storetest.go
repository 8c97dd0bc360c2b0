// Package storetest is the conformance suite every store.Store passes: the
// file store and the in-memory store run the same tests.
package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/capabilities-sh/capabilities/store"
	"github.com/google/go-cmp/cmp"
)

type record struct {
	Name  string `json:"name"`
	Count int    `json:"count"`
}

// Run runs the suite; open returns a fresh, empty store for each subtest.
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	ctx := context.Background()

	t.Run("PutGet", func(t *testing.T) {
		s := open(t)
		want := record{Name: "everything", Count: 3}
		if err := s.Put(ctx, store.Sources, "everything", want); err != nil {
			t.Fatal(err)
		}
		var got record
		if err := s.Get(ctx, store.Sources, "everything", &got); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Get after Put (-want +got):\n%s", diff)
		}
	})

	t.Run("NotFound", func(t *testing.T) {
		s := open(t)
		var got record
		err := s.Get(ctx, store.Sources, "nope", &got)
		if !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Get of a missing record: got %v, want ErrNotFound", err)
		}
	})

	t.Run("ListSorted", func(t *testing.T) {
		s := open(t)
		for _, id := range []string{"memory", "everything", "filesystem"} {
			if err := s.Put(ctx, store.Manifests, id, record{Name: id}); err != nil {
				t.Fatal(err)
			}
		}
		got, err := s.List(ctx, store.Manifests)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"everything", "filesystem", "memory"}, got); diff != "" {
			t.Errorf("List (-want +got):\n%s", diff)
		}
		other, err := s.List(ctx, store.Sources)
		if err != nil || len(other) != 0 {
			t.Errorf("List of another kind = %v, %v; want empty", other, err)
		}
	})

	t.Run("UpdateSerializes", func(t *testing.T) {
		s := open(t)
		const n = 40
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for range n {
			wg.Go(func() {
				errs <- store.UpdateJSON(ctx, s, store.Profiles, "default", func(old *record) (*record, error) {
					if old == nil {
						old = &record{Name: "default"}
					}
					old.Count++
					return old, nil
				})
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		got, err := store.Get[record](ctx, s, store.Profiles, "default")
		if err != nil {
			t.Fatal(err)
		}
		if got.Count != n {
			t.Errorf("after %d concurrent updates count = %d; updates were lost", n, got.Count)
		}
	})

	t.Run("UpdateErrorWritesNothing", func(t *testing.T) {
		s := open(t)
		if err := s.Put(ctx, store.Policies, "p", record{Name: "kept"}); err != nil {
			t.Fatal(err)
		}
		boom := errors.New("boom")
		err := s.Update(ctx, store.Policies, "p", func([]byte) ([]byte, error) { return nil, boom })
		if !errors.Is(err, boom) {
			t.Fatalf("Update = %v, want the callback's error", err)
		}
		got, err := store.Get[record](ctx, s, store.Policies, "p")
		if err != nil || got.Name != "kept" {
			t.Errorf("record after a failed update = %+v, %v; want it unchanged", got, err)
		}
	})

	t.Run("Corrupt", func(t *testing.T) {
		s := open(t)
		if err := s.Update(ctx, store.Sources, "bad", func([]byte) ([]byte, error) { return []byte(`{"name": "x",`), nil }); err != nil {
			t.Fatal(err)
		}
		var got record
		err := s.Get(ctx, store.Sources, "bad", &got)
		var ce *store.CorruptError
		if !errors.As(err, &ce) {
			t.Fatalf("Get of a corrupt record = %v, want a *CorruptError", err)
		}
		// Other records stay readable.
		if err := s.Put(ctx, store.Sources, "good", record{Name: "good"}); err != nil {
			t.Fatal(err)
		}
		if _, err := store.Get[record](ctx, s, store.Sources, "good"); err != nil {
			t.Errorf("a good record beside a corrupt one: %v", err)
		}
	})

	t.Run("Delete", func(t *testing.T) {
		s := open(t)
		if err := s.Put(ctx, store.Runs, "r1", record{}); err != nil {
			t.Fatal(err)
		}
		if err := s.Append(ctx, store.Runs, "r1", []byte(`{"seq":1}`)); err != nil {
			t.Fatal(err)
		}
		for range 2 { // idempotent
			if err := s.Delete(ctx, store.Runs, "r1"); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Get(ctx, store.Runs, "r1", &record{}); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Get after Delete = %v, want ErrNotFound", err)
		}
		lines, err := s.ReadLog(ctx, store.Runs, "r1")
		if err != nil || len(lines) != 0 {
			t.Errorf("ReadLog after Delete = %q, %v; want nothing", lines, err)
		}
	})

	t.Run("AppendInOrder", func(t *testing.T) {
		s := open(t)
		var want []string
		for i := range 25 {
			line := fmt.Sprintf(`{"seq":%d}`, i)
			want = append(want, line)
			if err := s.Append(ctx, store.Runs, "r2", []byte(line)); err != nil {
				t.Fatal(err)
			}
		}
		lines, err := s.ReadLog(ctx, store.Runs, "r2")
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, l := range lines {
			got = append(got, string(l))
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("ReadLog (-want +got):\n%s", diff)
		}
		if err := s.Append(ctx, store.Runs, "r2", []byte("a\nb")); err == nil {
			t.Error("Append of a line with a newline succeeded; want an error")
		}
	})

	t.Run("OpenLog", func(t *testing.T) {
		s := open(t)
		l, err := s.OpenLog(ctx, store.Runs, "r3")
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Append([]byte(`{"seq":1}`)); err != nil {
			t.Fatal(err)
		}
		// Another writer's line lands after it, in one piece.
		if err := s.Append(ctx, store.Runs, "r3", []byte(`{"seq":2}`)); err != nil {
			t.Fatal(err)
		}
		// Write (not synced) lands in order with Append's lines, whole.
		if err := l.Write([]byte(`{"seq":3}`)); err != nil {
			t.Fatal(err)
		}
		if err := l.Sync(); err != nil {
			t.Fatal(err)
		}
		if err := l.Append([]byte(`{"seq":4}`)); err != nil {
			t.Fatal(err)
		}
		if err := l.Append([]byte("a\rb")); err == nil {
			t.Error("Log.Append of a line with a carriage return succeeded; want an error")
		}
		if err := l.Write([]byte("a\nb")); err == nil {
			t.Error("Log.Write of a line with a newline succeeded; want an error")
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		lines, err := s.ReadLog(ctx, store.Runs, "r3")
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, l := range lines {
			got = append(got, string(l))
		}
		if diff := cmp.Diff([]string{`{"seq":1}`, `{"seq":2}`, `{"seq":3}`, `{"seq":4}`}, got); diff != "" {
			t.Errorf("ReadLog (-want +got):\n%s", diff)
		}
		// One log shared by parallel calls: every line lands whole.
		l, err = s.OpenLog(ctx, store.Runs, "r4")
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Go(func() {
				for i := range 20 {
					if err := l.Append(fmt.Appendf(nil, `{"g":%d,"i":%d,"pad":%q}`, g, i, strings.Repeat("x", 100*g))); err != nil {
						t.Error(err)
					}
				}
			})
		}
		wg.Wait()
		_ = l.Close()
		lines, err = s.ReadLog(ctx, store.Runs, "r4")
		if err != nil || len(lines) != 160 {
			t.Fatalf("ReadLog after parallel appends = %d lines, %v; want 160", len(lines), err)
		}
		for _, line := range lines {
			var v struct{ G, I int }
			if err := json.Unmarshal(line, &v); err != nil {
				t.Fatalf("a line was torn: %q: %v", line, err)
			}
		}
		if _, err := s.OpenLog(ctx, store.Runs, "../escape"); err == nil {
			t.Error("OpenLog with a bad id succeeded; want an error")
		}
	})

	t.Run("BadIDs", func(t *testing.T) {
		s := open(t)
		for _, id := range []string{"", "../escape", "a/b", ".hidden", "sp ace", string(make([]byte, 129))} {
			if err := s.Put(ctx, store.Sources, id, record{}); err == nil {
				t.Errorf("Put with id %q succeeded; want an error", id)
			}
			if err := s.Get(ctx, store.Sources, id, &record{}); err == nil || errors.Is(err, store.ErrNotFound) {
				t.Errorf("Get with id %q = %v; want an invalid-id error", id, err)
			}
		}
		if err := s.Put(ctx, store.Kind("etc"), "x", record{}); err == nil {
			t.Error("Put to an unknown kind succeeded; want an error")
		}
	})

	t.Run("Hold", func(t *testing.T) {
		s := open(t)
		release, err := s.Hold(ctx, store.Runs, "r1")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Hold(ctx, store.Runs, "r1"); !errors.Is(err, store.ErrBusy) {
			t.Fatalf("second Hold = %v, want ErrBusy", err)
		}
		// The record itself stays usable while held.
		if err := s.Put(ctx, store.Runs, "r1", record{Name: "x"}); err != nil {
			t.Fatal(err)
		}
		// Other records, and the same id of another kind, are not held.
		for _, k := range []struct {
			kind store.Kind
			id   string
		}{{store.Runs, "r2"}, {store.Blobs, "r1"}} {
			other, err := s.Hold(ctx, k.kind, k.id)
			if err != nil {
				t.Fatalf("Hold %s/%s while r1 is held: %v", k.kind, k.id, err)
			}
			other()
		}
		release()
		again, err := s.Hold(ctx, store.Runs, "r1")
		if err != nil {
			t.Fatalf("Hold after release: %v", err)
		}
		again()
	})

	t.Run("Held", func(t *testing.T) {
		s := open(t)
		// Only Linux tests a lock without taking it; elsewhere the file
		// store says held for every record (the safe side).
		canTell := runtime.GOOS == "linux"
		held := func(kind store.Kind, id string) bool {
			t.Helper()
			h, err := s.Held(ctx, kind, id)
			if err != nil {
				t.Fatalf("Held %s/%s: %v", kind, id, err)
			}
			return h
		}
		if canTell && held(store.Runs, "r1") {
			t.Error("Held before any Hold = true")
		}
		release, err := s.Hold(ctx, store.Runs, "r1")
		if err != nil {
			t.Fatal(err)
		}
		if !held(store.Runs, "r1") {
			t.Error("Held while held = false")
		}
		// Asking takes nothing: the holder's release and a new Hold work.
		release()
		if canTell && held(store.Runs, "r1") {
			t.Error("Held after release = true")
		}
		again, err := s.Hold(ctx, store.Runs, "r1")
		if err != nil {
			t.Fatalf("Hold after Held: %v", err)
		}
		defer again()
		if canTell && (held(store.Runs, "r2") || held(store.Blobs, "r1")) {
			t.Error("another record, or the same id of another kind, is held")
		}
		if _, err := s.Held(ctx, store.Runs, "../x"); err == nil {
			t.Error("Held of an invalid id: no error")
		}
	})

	t.Run("ChangesHeard", func(t *testing.T) {
		s := open(t)
		changes(t, s, s)
	})

	t.Run("ManyRecords", func(t *testing.T) {
		s := open(t)
		for i := range 50 {
			if err := s.Put(ctx, store.Blobs, "b"+strconv.Itoa(i), record{Count: i}); err != nil {
				t.Fatal(err)
			}
		}
		ids, err := s.List(ctx, store.Blobs)
		if err != nil || len(ids) != 50 {
			t.Errorf("List = %d ids, %v; want 50", len(ids), err)
		}
	})
}
