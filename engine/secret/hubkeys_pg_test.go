//go:build linux

package secret

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/capabilities-sh/capabilities/store"
	"github.com/capabilities-sh/capabilities/store/postgres"
)

// TestHubKeysPostgres: on a real PostgreSQL, two hub processes (two
// stores) keep the hub's own keys sealed among the secrets. A key made in
// clear before is adopted (same bytes, gone from the clear table); a new
// one is made once however many processes race for it; a KEK rotation
// keeps them; the wrong KEK opens none; and a pg_dump of the database
// holds none of them in any encoding.
func TestHubKeysPostgres(t *testing.T) {
	pg := testenv.StartPostgres(t)
	u := pg.NewDatabase(t)
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(90*time.Second))
	defer cancel()
	if err := postgres.Migrate(ctx, u); err != nil {
		t.Fatal(err)
	}
	open := func() *postgres.Store {
		st, err := postgres.Open(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	st1, st2 := open(), open()

	// A hub that served before its secrets were sealed: its token in clear.
	old, created, err := st1.Key(ctx, postgres.KeyHTTPToken, 32)
	if err != nil || !created {
		t.Fatalf("the clear token: %v (created %v)", err, created)
	}
	kek := mustKEK(t)
	h1 := NewHubKeys(mustOpen(t, st1, "", kek), st1)
	h2 := NewHubKeys(mustOpen(t, st2, "", kek), st2)
	got, err := h2.LookupKey(ctx, postgres.KeyHTTPToken)
	if err != nil || !bytes.Equal(got, old) {
		t.Fatalf("the adopted token: %x, %v; want the one made in clear", got, err)
	}
	if _, err := st1.LookupKey(ctx, postgres.KeyHTTPToken); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the clear table after adoption: %v; want no row", err)
	}
	if got, made, err := h1.Key(ctx, postgres.KeyHTTPToken, 32); err != nil || made || !bytes.Equal(got, old) {
		t.Fatalf("the token from the other process: %x, made %v, %v", got, made, err)
	}

	// Eight callers on two processes race to make the signing key: one
	// makes it, all get it.
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		keys  = map[string]int{}
		makes int
	)
	for i := range 8 {
		h := h1
		if i%2 == 1 {
			h = h2
		}
		wg.Go(func() {
			k, made, err := h.Key(ctx, "elicit-key", 32)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			keys[hex.EncodeToString(k)]++
			if made {
				makes++
			}
		})
	}
	wg.Wait()
	if len(keys) != 1 || makes != 1 {
		t.Fatalf("racing for a new key: %d different keys, made %d times; want 1 and 1", len(keys), makes)
	}
	var elicit []byte
	for k := range keys {
		elicit, _ = hex.DecodeString(k)
	}
	if _, err := st2.LookupKey(ctx, "elicit-key"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a new key in the clear table: %v; want none ever", err)
	}

	// A rotation re-seals them; the old KEK and a wrong one open nothing.
	newK := mustKEK(t)
	if _, err := Rotate(ctx, st1, "", kek, newK, true); err != nil {
		t.Fatal(err)
	}
	h3 := NewHubKeys(mustOpen(t, st2, "", newK), st2)
	for name, want := range map[string][]byte{postgres.KeyHTTPToken: old, "elicit-key": elicit} {
		if got, err := h3.LookupKey(ctx, name); err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s after the rotation: %x, %v", name, got, err)
		}
	}
	if _, err := OpenSealed(ctx, st2, "", mustKEK(t)); !errors.Is(err, ErrSealed) {
		t.Errorf("opening with a wrong KEK: %v; want ErrSealed", err)
	}

	// KeysOf follows the environment: the KEK set, the sealed keys; none
	// set on sealed secrets, an error naming what to set.
	t.Setenv(EnvKEKFile, "")
	t.Setenv(EnvKEK, base64.StdEncoding.EncodeToString(newK.key[:]))
	k, err := KeysOf(ctx, st1, st1, "")
	if _, ok := k.(*HubKeys); err != nil || !ok {
		t.Fatalf("KeysOf with the KEK set: %T, %v; want *HubKeys", k, err)
	}
	t.Setenv(EnvKEK, "")
	if _, err := KeysOf(ctx, st1, st1, ""); !errors.Is(err, ErrSealed) {
		t.Fatalf("KeysOf on sealed secrets with no KEK: %v; want ErrSealed", err)
	}

	out, err := exec.CommandContext(ctx, filepath.Join(pg.Bin, "pg_dump"), "--dbname="+u).Output()
	if err != nil {
		t.Fatalf("pg_dump: %v", err)
	}
	if !bytes.Contains(out, []byte("secret-v-")) {
		t.Fatalf("the dump holds no sealed record: the test would prove nothing (%d bytes)", len(out))
	}
	for _, key := range [][]byte{old, elicit} {
		for _, form := range []string{hex.EncodeToString(key), base64.StdEncoding.EncodeToString(key), string(key)} {
			if bytes.Contains(out, []byte(form)) {
				t.Errorf("the dump holds a hub key")
			}
		}
	}
}
