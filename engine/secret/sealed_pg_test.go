//go:build linux

package secret

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/scrub"
	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/capabilities-sh/capabilities/store/postgres"
)

// TestSealedPostgresDumpRevealsNothing seals credentials in a PostgreSQL
// store (a real server the test starts), rotates both keys, and reads the
// whole database as pg_dump writes it: the sealed records are there, and
// no value, nor any key, appears in any encoding.
func TestSealedPostgresDumpRevealsNothing(t *testing.T) {
	pg := testenv.StartPostgres(t)
	u := pg.NewDatabase(t)
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(60*time.Second))
	defer cancel()
	if err := postgres.Migrate(ctx, u); err != nil {
		t.Fatal(err)
	}
	st, err := postgres.Open(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	oldK, err := NewKEK()
	if err != nil {
		t.Fatal(err)
	}
	newK, _ := NewKEK()
	s, err := OpenSealed(ctx, st, "", oldK)
	if err != nil {
		t.Fatal(err)
	}
	values := map[string]string{
		"github/default": "ghp_PostgresSealed-0123456789abcdef",
		"slack/work":     `s3cr3t/T0k+n="q"&x%y`,
	}
	for ref, v := range values {
		if err := s.Set(ctx, ref, v); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Rotate(ctx, st, "", oldK, newK, true); err != nil {
		t.Fatal(err)
	}
	values["late/default"] = "late-Value_after+rotation"
	s, err = OpenSealed(ctx, st, "", newK)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Set(ctx, "late/default", values["late/default"]); err != nil {
		t.Fatal(err)
	}
	// Another process (a second store over the database) reads them all.
	st2, err := postgres.Open(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close()
	s2, err := OpenSealed(ctx, st2, "", newK)
	if err != nil {
		t.Fatal(err)
	}
	for ref, v := range values {
		if got, err := s2.Get(ctx, ref); err != nil || got != v {
			t.Errorf("%s from a second store: %q, %v", ref, got, err)
		}
	}

	out, err := exec.CommandContext(ctx, filepath.Join(pg.Bin, "pg_dump"), "--dbname="+u).Output()
	if err != nil {
		t.Fatalf("pg_dump: %v", err)
	}
	if !bytes.Contains(out, []byte("secret-key")) || !bytes.Contains(out, []byte("secret-v-")) {
		t.Fatalf("the dump holds no sealed record: the test would prove nothing (%d bytes)", len(out))
	}
	secrets := []string{string(oldK.key[:]), string(newK.key[:])}
	for _, v := range values {
		secrets = append(secrets, v)
	}
	for _, dk := range s2.keys {
		secrets = append(secrets, string(dk))
	}
	if w := scrub.New(secrets...).Which(string(out)); len(w) > 0 {
		t.Errorf("the dump holds %d secret(s)", len(w))
	}
	for _, v := range secrets {
		for _, form := range []string{v, base64.StdEncoding.EncodeToString([]byte(v)), hex.EncodeToString([]byte(v))} {
			if bytes.Contains(out, []byte(form)) {
				t.Errorf("the dump holds a secret")
			}
		}
	}
}
