package secret

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/capabilities-sh/capabilities/store"
	"github.com/gofrs/flock"
)

// fileStore is the fallback: one JSON file, mode 600, in a mode-700
// directory, replaced atomically (temp file in the same directory, fsync,
// rename) under an exclusive lock on a sibling ".lock" file, so that every
// hub process sharing the file sees whole updates and loses none.
type fileStore struct {
	path string
}

type fileData struct {
	Version int               `json:"version"`
	Secrets map[string]string `json:"secrets"`
}

const lockRetry = 10 * time.Millisecond

func (f *fileStore) exists() bool {
	_, err := os.Stat(f.path)
	return err == nil
}

func (f *fileStore) lock(ctx context.Context, shared bool) (*flock.Flock, error) {
	if err := os.MkdirAll(filepath.Dir(f.path), 0o700); err != nil {
		return nil, fmt.Errorf("creating the directory of %s: %w", f.path, err)
	}
	l := flock.New(f.path+".lock", flock.SetPermissions(0o600))
	try := l.TryLockContext
	if shared {
		try = l.TryRLockContext
	}
	if _, err := try(ctx, lockRetry); err != nil {
		return nil, fmt.Errorf("locking %s: %w", l.Path(), err)
	}
	return l, nil
}

// read returns the secrets in the file; a missing file holds none. fixed
// reports that the file was readable by others and is now mode 600.
func (f *fileStore) read() (secrets map[string]string, fixed bool, err error) {
	data, err := os.ReadFile(f.path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]string{}, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("reading %s: %w", f.path, err)
	}
	if fi, err := os.Stat(f.path); err == nil && fi.Mode().Perm()&0o077 != 0 {
		if err := os.Chmod(f.path, 0o600); err != nil {
			return nil, false, fmt.Errorf("restricting %s to mode 600: %w", f.path, err)
		}
		fixed = true
	}
	var d fileData
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, fixed, fmt.Errorf("decoding %s: %w", f.path, err)
	}
	if d.Secrets == nil {
		d.Secrets = map[string]string{}
	}
	return d.Secrets, fixed, nil
}

func (f *fileStore) get(ctx context.Context, ref string) (value string, fixed bool, err error) {
	l, err := f.lock(ctx, true)
	if err != nil {
		return "", false, err
	}
	defer l.Unlock()
	m, fixed, err := f.read()
	if err != nil {
		return "", fixed, err
	}
	v, ok := m[ref]
	if !ok {
		return "", fixed, ErrNotFound
	}
	return v, fixed, nil
}

// update applies change to the secrets under the exclusive lock and writes
// the file when change reports a change.
func (f *fileStore) update(ctx context.Context, change func(map[string]string) bool) (fixed bool, err error) {
	l, err := f.lock(ctx, false)
	if err != nil {
		return false, err
	}
	defer l.Unlock()
	m, fixed, err := f.read()
	if err != nil {
		return fixed, err
	}
	if !change(m) {
		return fixed, nil
	}
	data, err := json.MarshalIndent(fileData{Version: 1, Secrets: m}, "", "  ")
	if err != nil {
		return fixed, fmt.Errorf("encoding %s: %w", f.path, err)
	}
	return fixed, store.WriteFileAtomic(f.path, append(data, '\n'))
}
