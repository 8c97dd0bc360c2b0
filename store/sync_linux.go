package store

import (
	"os"
	"syscall"
)

// datasync flushes a file's data (not its metadata) to disk.
func datasync(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }
