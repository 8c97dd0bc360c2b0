//go:build !linux

package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/gofrs/flock"
)

// lockRecord takes the lock in slot for (kind, id): a flock on a file per
// record and slot in locks/ (Delete removes them). With wait it polls until
// ctx is done, else it returns ErrBusy at once.
func (f *File) lockRecord(ctx context.Context, kind Kind, id string, slot int64, wait bool) (func(), error) {
	l := flock.New(f.lockPaths(kind, id)[slot], flock.SetPermissions(fileMode))
	var ok bool
	var err error
	if wait {
		ok, err = l.TryLockContext(ctx, time.Millisecond)
	} else {
		ok, err = l.TryLock()
	}
	if err != nil {
		return nil, fmt.Errorf("locking %s/%s: %w", kind, id, err)
	}
	if !ok {
		if wait {
			return nil, fmt.Errorf("locking %s/%s: %w", kind, id, ctx.Err())
		}
		return nil, fmt.Errorf("claiming %s/%s: %w", kind, id, ErrBusy)
	}
	return func() { _ = l.Unlock() }, nil
}

// heldRecord cannot test a flock without taking it, and taking it, even for
// an instant, would refuse the holder that comes at that instant (an agent
// resuming the run): every record counts as held here.
func (f *File) heldRecord(Kind, string, int64) (bool, error) { return true, nil }

func (f *File) lockPaths(kind Kind, id string) [2]string {
	base := filepath.Join(f.dir, "locks", string(kind)+"."+id)
	return [2]string{base + ".lock", base + ".hold"}
}

// removeLocks removes a deleted record's lock files.
func (f *File) removeLocks(kind Kind, id string) {
	for _, p := range f.lockPaths(kind, id) {
		_ = os.Remove(p)
	}
}
