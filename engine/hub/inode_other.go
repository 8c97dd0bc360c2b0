//go:build !unix

package hub

import "os"

// inode reports none: os.Stat gives no file index on this system.
func inode(os.FileInfo) (int64, bool) { return 0, false }
