package source

import "syscall"

// procAttr puts an upstream in its own process group, and has the kernel
// kill it if the hub dies without reaping it.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
