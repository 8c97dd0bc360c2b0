//go:build unix

package run

import (
	"io/fs"
	"syscall"
)

func stampOf(info fs.FileInfo) recordStamp {
	s := recordStamp{size: info.Size(), mod: info.ModTime()}
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		s.file = uint64(st.Ino)
	}
	return s
}
