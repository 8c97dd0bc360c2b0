package store

import (
	"os"
	"syscall"
)

// datasync flushes a file to the drive with fsync(2). os.File.Sync would use
// F_FULLFSYNC, which also empties the drive's cache and costs milliseconds on
// Apple SSDs, for every journaled call; like SQLite's default, the hub takes
// fsync: the line survives the process and the OS crashing.
func datasync(f *os.File) error { return syscall.Fsync(int(f.Fd())) }
