//go:build unix

package source

import "syscall"

// terminateGroup asks the process group led by pid to end (SIGTERM).
func terminateGroup(pid int) { _ = syscall.Kill(-pid, syscall.SIGTERM) }

// killGroup ends the process group led by pid at once (SIGKILL).
func killGroup(pid int) { _ = syscall.Kill(-pid, syscall.SIGKILL) }
