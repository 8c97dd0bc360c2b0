package source

import (
	"bytes"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// clockTick is the unit of /proc's CPU times (USER_HZ, 100 on Linux).
const clockTick = 10 * time.Millisecond

// groupCPU is the CPU time the processes of the group pgid have used,
// with that of their children already waited for; -1 when it cannot be
// read.
func groupCPU(pgid int) time.Duration {
	d, err := os.Open("/proc")
	if err != nil {
		return -1
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return -1
	}
	var ticks int64
	found := false
	for _, n := range names {
		if n[0] < '0' || n[0] > '9' {
			continue
		}
		b, err := os.ReadFile("/proc/" + n + "/stat")
		if err != nil {
			continue // gone meanwhile
		}
		// pid (comm) state ppid pgrp … utime(14) stime cutime cstime:
		// comm may hold spaces and parentheses, so fields count from
		// its last ')'.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := bytes.Fields(b[i+1:])
		if len(f) < 15 {
			continue
		}
		if g, err := strconv.Atoi(string(f[2])); err != nil || g != pgid {
			continue
		}
		found = true
		for _, v := range f[11:15] {
			t, _ := strconv.ParseInt(string(v), 10, 64)
			ticks += t
		}
	}
	if !found {
		return -1
	}
	return time.Duration(ticks) * clockTick
}

// unread is how many bytes written to the pipe f are still waiting to be
// read by the process at its other end; -1 when it cannot be told.
func unread(f *os.File) int {
	rc, err := f.SyscallConn()
	if err != nil {
		return -1
	}
	n := -1
	_ = rc.Control(func(fd uintptr) {
		if v, err := unix.IoctlGetInt(int(fd), unix.TIOCINQ); err == nil {
			n = v
		}
	})
	return n
}
