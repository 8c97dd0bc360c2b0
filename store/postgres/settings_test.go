package postgres_test

import (
	"bytes"
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/capabilities-sh/capabilities/store"
	"github.com/capabilities-sh/capabilities/store/postgres"
)

// TestHubKeys: the hub's keys are made once for every process (16
// processes asking at once agree, one made it), and a one-time token is
// spent once across them.
func TestHubKeys(t *testing.T) {
	pg := testenv.StartPostgres(t)
	ctx := context.Background()
	a, u := fresh(t, pg)
	b := open(t, u)
	procs := []*postgres.Store{a, b}

	if _, err := a.LookupKey(ctx, "k"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("LookupKey of a key never made = %v; want ErrNotFound", err)
	}
	const n = 16
	keys := make([][]byte, n)
	made := make([]bool, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { keys[i], made[i], errs[i] = procs[i%2].Key(ctx, "k", 32) })
	}
	wg.Wait()
	creators := 0
	for i := range n {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if !bytes.Equal(keys[i], keys[0]) || len(keys[i]) != 32 {
			t.Fatalf("Key on process %d = %d bytes, not process 0's", i%2, len(keys[i]))
		}
		if made[i] {
			creators++
		}
	}
	if creators != 1 {
		t.Errorf("%d calls made the key; want 1", creators)
	}
	if got, err := b.LookupKey(ctx, "k"); err != nil || !bytes.Equal(got, keys[0]) {
		t.Errorf("LookupKey = %d bytes, %v; want the key", len(got), err)
	}
	if other, _, err := a.Key(ctx, "other", 32); err != nil || bytes.Equal(other, keys[0]) {
		t.Errorf("another name's key: equal %v, %v; want a key of its own", bytes.Equal(other, keys[0]), err)
	}
	if _, _, err := a.Key(ctx, "short", 8); err == nil {
		t.Error("a key of 8 bytes was made")
	}

	exp := time.Now().Add(time.Hour)
	fresh := make([]bool, n)
	for i := range n {
		wg.Go(func() { fresh[i], errs[i] = procs[i%2].Spend(ctx, "link", "t1", exp) })
	}
	wg.Wait()
	spent := 0
	for i := range n {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if fresh[i] {
			spent++
		}
	}
	if spent != 1 {
		t.Errorf("one token spent %d times across two processes; want once", spent)
	}
	if ok, err := b.Spend(ctx, "other-purpose", "t1", exp); err != nil || !ok {
		t.Errorf("the same id for another purpose = %v, %v; want spent now, once", ok, err)
	}
	if _, err := a.Spend(ctx, "", "t1", exp); err == nil {
		t.Error("a token without a purpose was spent")
	}
}

// BenchmarkHubKeys: what a process pays for the hub's keys on a database
// store: Key once at start (the row exists), Spend once per approval page
// link opened.
func BenchmarkHubKeys(b *testing.B) {
	pg := testenv.StartPostgres(b)
	ctx := context.Background()
	u := pg.NewDatabase(b)
	if err := postgres.Migrate(ctx, u); err != nil {
		b.Fatal(err)
	}
	s, err := postgres.Open(ctx, u)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	if _, _, err := s.Key(ctx, "k", 32); err != nil {
		b.Fatal(err)
	}
	b.Run("Key", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := s.Key(ctx, "k", 32); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Spend", func(b *testing.B) {
		exp := time.Now().Add(time.Hour)
		i := 0
		for b.Loop() {
			i++
			if ok, err := s.Spend(ctx, "bench", strconv.Itoa(i), exp); err != nil || !ok {
				b.Fatal(ok, err)
			}
		}
	})
}
