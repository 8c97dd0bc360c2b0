package store

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// Record locks and holds are byte-range locks (open file description locks)
// in one file per kind, locks/<kind>.lock, at an offset derived from the
// record's id: taking one costs an open and a fcntl, where a lock file per
// record cost a file creation (0.1–0.9 ms on this machine's disk) and left
// a file behind for every run. A lock belongs to its own open file
// description, so it excludes other goroutines of this process as well as
// other processes, and the kernel drops it when the process dies.

// lockRecord takes the lock in slot for (kind, id); with wait it polls until
// ctx is done, else it returns ErrBusy at once.
func (f *File) lockRecord(ctx context.Context, kind Kind, id string, slot int64, wait bool) (func(), error) {
	p := filepath.Join(f.dir, "locks", string(kind)+".lock")
	fh, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, fileMode)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", p, err)
	}
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: lockStart(id, slot), Len: 1}
	for {
		err = unix.FcntlFlock(fh.Fd(), unix.F_OFD_SETLK, &lk)
		if err == nil {
			return func() { _ = fh.Close() }, nil // closing the description drops its lock
		}
		if !errors.Is(err, unix.EAGAIN) && !errors.Is(err, unix.EACCES) {
			_ = fh.Close()
			return nil, fmt.Errorf("locking %s/%s: %w", kind, id, err)
		}
		if !wait {
			_ = fh.Close()
			return nil, fmt.Errorf("claiming %s/%s: %w", kind, id, ErrBusy)
		}
		select {
		case <-ctx.Done():
			_ = fh.Close()
			return nil, fmt.Errorf("locking %s/%s: %w", kind, id, ctx.Err())
		case <-time.After(time.Millisecond):
		}
	}
}

// lockStart is the byte of locks/<kind>.lock that stands for (id, slot):
// a hash of the id, its lowest bit the slot. Two ids may share a byte (a
// hash collision): their locks then exclude each other, which costs a
// refused Hold, never a second holder.
func lockStart(id string, slot int64) int64 {
	h := fnv.New64a()
	h.Write([]byte(id))
	return int64(h.Sum64()>>2)&^1 | slot
}

// heldRecord tests the lock in slot for (kind, id) without taking it
// (F_OFD_GETLK): a holder taking it at the same instant is not refused. A
// lock on the same byte for another id (a collision) counts as held.
func (f *File) heldRecord(kind Kind, id string, slot int64) (bool, error) {
	p := filepath.Join(f.dir, "locks", string(kind)+".lock")
	fh, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil // nothing was ever locked
	}
	if err != nil {
		return true, fmt.Errorf("opening %s: %w", p, err)
	}
	defer fh.Close()
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: lockStart(id, slot), Len: 1}
	if err := unix.FcntlFlock(fh.Fd(), unix.F_OFD_GETLK, &lk); err != nil {
		return true, fmt.Errorf("testing the lock of %s/%s: %w", kind, id, err)
	}
	return lk.Type != unix.F_UNLCK, nil
}

// removeLocks has nothing to remove: the lock file is shared.
func (f *File) removeLocks(Kind, string) {}
