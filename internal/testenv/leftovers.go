package testenv

import (
	"fmt"
	"io"
	"os"
	"testing"
)

// RunLeavingNothing runs a package's tests (a TestMain's m.Run) and then
// fails them when a process they started is still running: a test ends
// what it starts, and the whole process tree of it. On Linux the test
// binary is made the subreaper of every process it starts, so a process
// whose parent was ended without it (a test that kills `runuser` and not
// the listener runuser started) is reparented to the test binary, not to
// init, and is found among its children at the end. Each one left is
// named on stderr, with its command line and owner, and killed. It
// returns the code for os.Exit.
func RunLeavingNothing(m *testing.M) int {
	if err := becomeSubreaper(); err != nil {
		fmt.Fprintf(os.Stderr, "testenv: cannot find processes the tests leave running: %v\n", err)
		return m.Run()
	}
	code := m.Run()
	if left := endLeftovers(os.Stderr); left > 0 && code == 0 {
		code = 1
	}
	return code
}

// leftover is a process the tests left running.
type leftover struct {
	pid     int
	user    string
	command string
}

func report(w io.Writer, left []leftover) {
	fmt.Fprintf(w, "FAIL: the tests left %d process(es) running (a test must end what it starts: its own process group, Setpgid, ended with kill(-pgid)); killed now:\n", len(left))
	for _, p := range left {
		fmt.Fprintf(w, "  pid %d, user %s: %s\n", p.pid, p.user, p.command)
	}
}
