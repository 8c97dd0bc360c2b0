package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/gofrs/flock"
)

// guestRoot is the empty directory qjs mounts as the guest's "/" (see
// harden.go, gap 1), one per Driver, in the system's temporary directory.
// The Driver holds a lock on it while it lives. A process that ends without
// closing its Driver (killed, or ended by a signal it does not wind down
// on) leaves its directory behind; the next process to close a Driver
// removes those no process holds (sweepRoots). Before, every such process
// left one for good: 4,589 in a day of this project's tests.
type guestRoot struct {
	dir  string
	lock *flock.Flock
}

// rootPrefix names guest roots. Directories named capabilities-sandbox-*
// by earlier versions, which took no lock, are never swept: their process
// may still run.
const rootPrefix = "capabilities-sandbox-root-"

// rootGrace is how old an unlocked guest root must be before it is swept:
// a new one is unlocked between its mkdir and its lock.
const rootGrace = time.Minute

func newGuestRoot() (*guestRoot, error) {
	dir, err := os.MkdirTemp("", rootPrefix+"*")
	if err != nil {
		return nil, fmt.Errorf("creating the sandbox's empty directory in %s (set TMPDIR to a writable directory): %w", os.TempDir(), err)
	}
	// Where the filesystem has no flock, the directory stays unlocked, and
	// sweepers, whose TryLock fails the same way, leave it alone.
	lock := flock.New(dir, flock.SetFlag(os.O_RDONLY))
	_, _ = lock.TryLock()
	if err := os.Chmod(dir, 0o500); err != nil {
		_ = lock.Close()
		_ = os.Remove(dir)
		return nil, fmt.Errorf("protecting empty sandbox directory %s: %w", dir, err)
	}
	return &guestRoot{dir: dir, lock: lock}, nil
}

// remove removes the directory and releases it, then, once per process,
// sweeps what other processes left.
func (r *guestRoot) remove() error {
	err := os.Remove(r.dir)
	_ = r.lock.Close()
	sweepOnce.Do(func() { sweepRoots(filepath.Dir(r.dir), time.Now()) })
	if err != nil {
		return fmt.Errorf("removing sandbox directory: %w", err)
	}
	return nil
}

var sweepOnce sync.Once

// sweepRoots removes the guest roots in dir that no process holds and that
// were made before now minus rootGrace, and reports how many. A directory
// that is not empty (someone put something there) is left alone, as are
// those of other users (they cannot be opened).
func sweepRoots(dir string, now time.Time) int {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	removed := 0
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), rootPrefix) {
			continue
		}
		info, err := e.Info()
		if err != nil || now.Sub(info.ModTime()) < rootGrace {
			continue
		}
		path := filepath.Join(dir, e.Name())
		lock := flock.New(path, flock.SetFlag(os.O_RDONLY))
		if ok, err := lock.TryLock(); err == nil && ok && os.Remove(path) == nil {
			removed++
		}
		_ = lock.Close()
	}
	return removed
}
