//go:build linux

// Package pgfaults puts a hub on PostgreSQL under faults (issue 40, "How it
// is shown to work", Faults): `capabilities hub serve --http` processes on
// one real PostgreSQL (internal/testenv.StartPostgres), driven by go-sdk MCP
// clients over HTTP, making writes to a real MCP server written for the test
// that keeps its own call log (an append-only file, fsynced a line at a
// time). The processes are killed with SIGKILL under load, PostgreSQL is
// restarted under load, and a process is frozen past its lease while
// another takes its run over; what the database and the upstream's log
// hold afterwards is checked: no run lost, no write made twice (I6 across
// processes), no record that does not parse. The start-up refusals (no
// database, wrong credentials, no hub, a newer schema) are here too, for
// the serve commands.
//
//	go test ./engine/mcpserver/pgfaults -v     # PGFAULTS_RUNS, _CLIENTS, _KILL_EVERY, _PACE, _HOLD tune the kill test
package pgfaults

import (
	"testing"

	"github.com/capabilities-sh/capabilities/internal/testenv"
)

// binPath is the capabilities binary built once for the package.
var binPath string

func TestMain(m *testing.M) { testenv.MainWithBinary(m, &binPath) }
