package source

import (
	"os/exec"
	"strconv"
	"syscall"
)

// procAttr starts an upstream in its own process group (reaped by the hub;
// Windows has no parent-death signal).
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{CreationFlags: syscall.CREATE_NEW_PROCESS_GROUP}
}

// terminateGroup ends the process tree led by pid: a console process on
// Windows has no signal to end it gently, so it is killGroup.
func terminateGroup(pid int) { killGroup(pid) }

// killGroup ends the process tree led by pid at once.
func killGroup(pid int) {
	_ = exec.Command("taskkill", "/T", "/F", "/PID", strconv.Itoa(pid)).Run()
}
