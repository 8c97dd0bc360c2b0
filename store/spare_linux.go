package store

import (
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// spareFile opens an empty file of mode 600 in dir that has no name
// (O_TMPFILE): nothing in the directory shows it until nameSpare.
func spareFile(dir string) (*os.File, error) {
	fd, err := unix.Open(dir, unix.O_TMPFILE|unix.O_RDWR|unix.O_CLOEXEC, fileMode)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	return os.NewFile(uintptr(fd), dir+"/(spare)"), nil
}

// nameSpare gives the spare f the name path, which must not exist
// (fs.ErrExist). It links the file through /proc/self/fd, as an
// unprivileged process may (AT_EMPTY_PATH needs CAP_DAC_READ_SEARCH).
func nameSpare(f *os.File, path string) error {
	err := unix.Linkat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(int(f.Fd())), unix.AT_FDCWD, path, unix.AT_SYMLINK_FOLLOW)
	if err != nil {
		return &os.LinkError{Op: "link", Old: f.Name(), New: path, Err: err} // EEXIST is fs.ErrExist
	}
	return nil
}

// RecordBytes is the part of a record file's size that is one record's:
// a file of packed run records (PutFinal) has a name for each record it
// holds, and each takes its share.
func RecordBytes(fi os.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Nlink > 1 {
		return fi.Size() / int64(st.Nlink)
	}
	return fi.Size()
}
