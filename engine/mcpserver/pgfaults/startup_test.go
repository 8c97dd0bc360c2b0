//go:build linux

package pgfaults

import (
	"context"
	"errors"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/jackc/pgx/v5"
)

// TestServeRefusesABadDatabaseAtStart: `hub serve --http` and `hub serve
// --stdio` on a database that does not answer, with a password PostgreSQL
// refuses, on a database never initialised, and on a schema newer than the
// binary's: each exits 1 at once with a message saying what is wrong and
// what to do, never the password, and leaves nothing behind (no token, no
// port open). store_postgres.txtar covers the other commands.
func TestServeRefusesABadDatabaseAtStart(t *testing.T) {
	pg := testenv.StartPostgres(t)
	good := pg.NewDatabase(t)
	fresh := pg.NewDatabase(t)
	newer := pg.NewDatabase(t)
	work := t.TempDir()
	hubCLI(t, good, filepath.Join(work, "init"), "hub", "init")
	hubCLI(t, newer, filepath.Join(work, "init"), "hub", "init")
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(30*time.Second))
	defer cancel()
	conn, err := pgx.Connect(ctx, newer)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO capabilities_migrations (version_id, is_applied) VALUES (999, true)`); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)

	with := func(raw string, f func(u *url.URL)) string {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		f(u)
		return u.String()
	}
	const wrongPassword = "n0tTheRightOne"
	nobody := testenv.FreePort(t)
	cases := []struct {
		name, db string
		want     *regexp.Regexp
	}{
		{"unreachable", with(good, func(u *url.URL) { u.Host = "127.0.0.1:" + strconv.Itoa(nobody) }),
			regexp.MustCompile(`PostgreSQL cannot be reached \(is it running, and are the host and port in the store URL right\?\)`)},
		{"wrong password", with(good, func(u *url.URL) { u.User = url.UserPassword(pg.User, wrongPassword) }),
			regexp.MustCompile(`PostgreSQL refused user "capabilities" .*: fix the user and password in the store URL`)},
		{"never initialised", fresh, regexp.MustCompile("has no hub yet: run `capabilities hub init` to create it")},
		{"newer schema", newer, regexp.MustCompile(`its schema \(version 999\) was written by a newer capabilities; this build reads up to version [0-9]+: upgrade capabilities`)},
	}
	for _, tc := range cases {
		for _, serve := range [][]string{{"--http", "--port", strconv.Itoa(testenv.FreePort(t))}, {"--stdio"}} {
			t.Run(tc.name+"/"+serve[0][2:], func(t *testing.T) {
				home := filepath.Join(t.TempDir(), "home")
				wait := testenv.Timeout(30 * time.Second)
				ctx, cancel := context.WithTimeout(context.Background(), wait)
				defer cancel()
				cmd := exec.CommandContext(ctx, binPath, append([]string{"hub", "serve"}, serve...)...)
				cmd.Env = hubEnv(tc.db, home)
				// stdin stays open: a serve --stdio that started would
				// wait on it, not exit.
				stdin, err := cmd.StdinPipe()
				if err != nil {
					t.Fatal(err)
				}
				defer stdin.Close()
				out, err := cmd.CombinedOutput()
				if ctx.Err() != nil {
					t.Fatalf("serve %s did not exit within %v:\n%s", serve[0], wait, out)
				}
				var ee *exec.ExitError
				if !errors.As(err, &ee) || ee.ExitCode() != 1 {
					t.Errorf("serve %s: %v, want exit 1\n%s", serve[0], err, out)
				}
				t.Logf("exit %v: %s", err, strings.TrimSpace(string(out)))
				if !tc.want.Match(out) {
					t.Errorf("serve %s said:\n%s\nwant %s", serve[0], out, tc.want)
				}
				for _, secret := range []string{pg.Password, wrongPassword} {
					if strings.Contains(string(out), secret) {
						t.Errorf("serve %s printed a password:\n%s", serve[0], out)
					}
				}
				if _, err := os.Stat(filepath.Join(home, "hub", "http-token")); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("serve %s left a token behind: %v", serve[0], err)
				}
				if serve[0] == "--http" {
					if c, err := net.DialTimeout("tcp", "127.0.0.1:"+serve[2], time.Second); err == nil {
						c.Close()
						t.Errorf("serve --http: port %s is open after it exited", serve[2])
					}
				}
			})
		}
	}
}
