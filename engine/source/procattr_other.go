//go:build unix && !linux

package source

import "syscall"

// procAttr puts an upstream in its own process group (reaped by the hub;
// this system has no parent-death signal).
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
