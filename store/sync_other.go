//go:build !linux && !darwin

package store

import "os"

// datasync flushes a file to disk.
func datasync(f *os.File) error { return f.Sync() }
