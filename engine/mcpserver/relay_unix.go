//go:build unix

package mcpserver

import (
	"syscall"
)

// pidAlive reports whether a process with this id exists and belongs to
// this user: another user's process (EPERM) with a stale endpoint's pid is
// not this user's hub.
func pidAlive(pid int) bool {
	return syscall.Kill(pid, 0) == nil
}
