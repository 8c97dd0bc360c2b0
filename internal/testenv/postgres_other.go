//go:build !linux

package testenv

import (
	"testing"
)

// Postgres is a PostgreSQL server a test started; the tests start one on
// Linux only.
type Postgres struct {
	Bin, Dir, User, Password string
	Port                     int
}

// StartPostgres skips the test: the tests run PostgreSQL on Linux only.
func StartPostgres(t testing.TB) *Postgres {
	t.Helper()
	t.Skip("the PostgreSQL tests run on Linux only (scripts/setup.sh --tests installs PostgreSQL there)")
	return nil
}

func (p *Postgres) Stop(t testing.TB)               {}
func (p *Postgres) Start(t testing.TB)              {}
func (p *Postgres) URL(db string) string            { return "" }
func (p *Postgres) NewDatabase(t testing.TB) string { return "" }
