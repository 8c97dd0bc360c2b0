package main

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/jackc/pgx/v5"
	"github.com/rogpeppe/go-internal/testscript"
)

// cmdPostgres is `postgres NAME…`: it starts a real PostgreSQL
// (testenv.StartPostgres: initdb in a temporary folder, as an unprivileged
// user when root), stopped and removed at the script's end, and for each
// NAME creates an empty database and sets $NAME to its URL. It also sets
// $PG_PORT and $PG_PASSWORD (the superuser's, for nosecret checks). A script
// that uses it begins with `[!postgres] skip`: the condition is false
// without PostgreSQL, and an error under CI=true saying what to install.
func cmdPostgres(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) == 0 {
		ts.Fatalf("usage: postgres NAME…")
	}
	p := testenv.StartPostgres(scriptTB{ts: ts})
	ts.Setenv("PG_PORT", strconv.Itoa(p.Port))
	ts.Setenv("PG_PASSWORD", p.Password)
	for _, name := range args {
		ts.Setenv(name, p.NewDatabase(scriptTB{ts: ts}))
	}
}

// cmdPgExec is `pgexec URL SQL`: it runs one statement on a database (what
// psql -c does), e.g. to give a database a schema newer than the build's.
func cmdPgExec(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: pgexec URL SQL")
	}
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(30*time.Second))
	defer cancel()
	c, err := pgx.Connect(ctx, args[0])
	if err != nil {
		ts.Fatalf("pgexec: connecting: %v", err)
	}
	defer c.Close(context.Background())
	_, err = c.Exec(ctx, args[1])
	if (err != nil) != neg {
		ts.Fatalf("pgexec: %v (expected failure: %v)", err, neg)
	}
}

// cmdPgDump is `pgdump URL`: every row of every table of the database's
// public schema, one per line as PostgreSQL writes a row as text (bytea in
// hex), to stdout, for a script to check what a dump would hold.
func cmdPgDump(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: pgdump URL")
	}
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(30*time.Second))
	defer cancel()
	c, err := pgx.Connect(ctx, args[0])
	if err != nil {
		ts.Fatalf("pgdump: connecting: %v", err)
	}
	defer c.Close(context.Background())
	rows, err := c.Query(ctx, `SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE' ORDER BY 1`)
	if err != nil {
		ts.Fatalf("pgdump: listing the tables: %v", err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		ts.Fatalf("pgdump: listing the tables: %v", err)
	}
	var out strings.Builder
	for _, tb := range tables {
		rows, err := c.Query(ctx, `SELECT t::text FROM `+pgx.Identifier{tb}.Sanitize()+` t`)
		if err != nil {
			ts.Fatalf("pgdump: reading %s: %v", tb, err)
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			ts.Fatalf("pgdump: reading %s: %v", tb, err)
		}
		for _, l := range lines {
			fmt.Fprintf(&out, "%s %s\n", tb, l)
		}
	}
	ts.Stdout().Write([]byte(out.String()))
}

// scriptTB is the little of testing.TB that testenv.StartPostgres uses,
// on a testscript: its failures fail the script, its cleanups run at the
// script's end. Any other method panics (the embedded TB is nil).
type scriptTB struct {
	testing.TB
	ts *testscript.TestScript
}

func (s scriptTB) Helper()                        {}
func (s scriptTB) Cleanup(f func())               { s.ts.Defer(f) }
func (s scriptTB) Fatal(args ...any)              { s.ts.Fatalf("%s", fmt.Sprint(args...)) }
func (s scriptTB) Fatalf(format string, a ...any) { s.ts.Fatalf(format, a...) }
func (s scriptTB) Errorf(format string, a ...any) {
	s.ts.Logf("error: "+format, a...)
	s.ts.Fatalf(format, a...)
}
func (s scriptTB) Skip(args ...any) {
	s.ts.Fatalf("%s (guard the script with [!postgres] skip)", fmt.Sprint(args...))
}
func (s scriptTB) Logf(format string, args ...any) { s.ts.Logf(format, args...) }

// condPostgres is the condition `[postgres]`: PostgreSQL's server binaries
// are installed. Without them it is false, or an error under CI=true
// saying what to install.
func condPostgres() (bool, error) {
	if _, err := testenv.PostgresBin(); err != nil {
		if os.Getenv("CI") == "true" {
			return false, err
		}
		return false, nil
	}
	return true, nil
}

// cmdCapture is `capture NAME REGEXP`: it sets $NAME to the first
// submatch of REGEXP in the last command's stdout (a run's id where the
// runs are not files to list, as in a database store).
func cmdCapture(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: capture NAME REGEXP")
	}
	re, err := regexp.Compile(args[1])
	if err != nil {
		ts.Fatalf("capture: %v", err)
	}
	m := re.FindStringSubmatch(ts.ReadFile("stdout"))
	if len(m) < 2 {
		ts.Fatalf("capture: %q does not match stdout (or has no group)", args[1])
	}
	ts.Setenv(args[0], m[1])
}
