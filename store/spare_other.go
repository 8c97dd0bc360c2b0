//go:build !linux

package store

import (
	"errors"
	"os"
)

var errNoSpares = errors.New("no files without a name on this system")

// spareFile: this system has no file without a name (O_TMPFILE), so no
// spares are kept; every record and journal creates its own file.
func spareFile(string) (*os.File, error) { return nil, errNoSpares }

func nameSpare(*os.File, string) error { return errNoSpares }

// RecordBytes is a record file's size: records are packed only on Linux.
func RecordBytes(fi os.FileInfo) int64 { return fi.Size() }
