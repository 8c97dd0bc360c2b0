package testenv

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

func becomeSubreaper() error {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("becoming the subreaper of the tests' processes: %w", err)
	}
	return nil
}

// endLeftovers kills the live children of this process (its own, and the
// orphans it reaped as their subreaper) that are still there after a
// grace time (a process signalled at a test's end may still be exiting),
// reports them, and reaps them. A killed parent's children come to this
// process in turn: it looks again until none is left.
func endLeftovers(w io.Writer) int {
	var all []leftover
	deadline := time.Now().Add(Timeout(5 * time.Second))
	for {
		left := liveChildren()
		if len(left) == 0 {
			break
		}
		if time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		for _, p := range left {
			_ = syscall.Kill(p.pid, syscall.SIGKILL)
			var ws syscall.WaitStatus
			_, _ = syscall.Wait4(p.pid, &ws, 0, nil)
		}
		all = append(all, left...)
	}
	reapZombies()
	if len(all) > 0 {
		report(w, all)
	}
	return len(all)
}

// liveChildren lists the processes whose parent is this one and that
// have not exited (a zombie has: it waits to be reaped).
func liveChildren() []leftover {
	self := os.Getpid()
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var out []leftover
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // it ended meanwhile
		}
		// pid (comm) state ppid …; comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(string(b[i+1:]))
		if len(fields) < 2 || fields[0] == "Z" || fields[0] == "X" {
			continue
		}
		if ppid, _ := strconv.Atoi(fields[1]); ppid != self {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(f)))
		out = append(out, leftover{pid: pid, user: owner(pid), command: cmdline(pid)})
	}
	return out
}

func cmdline(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
}

func owner(pid int) string {
	var st syscall.Stat_t
	if err := syscall.Stat(fmt.Sprintf("/proc/%d", pid), &st); err != nil {
		return "?"
	}
	uid := strconv.Itoa(int(st.Uid))
	if u, err := user.LookupId(uid); err == nil {
		return u.Username
	}
	return uid
}

// reapZombies waits for the children that exited and that nothing waited
// for (orphans reaped as their subreaper).
func reapZombies() {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}
