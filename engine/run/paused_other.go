//go:build !unix

package run

import "io/fs"

func stampOf(info fs.FileInfo) recordStamp {
	return recordStamp{size: info.Size(), mod: info.ModTime()}
}
