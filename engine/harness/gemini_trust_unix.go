//go:build unix

package harness

import (
	"io/fs"
	"syscall"
)

// rootOwned reports whether fi is owned by root (uid 0).
func rootOwned(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && st.Uid == 0
}
