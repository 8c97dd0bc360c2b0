package testenv

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// ReadFiles calls fn with the path and the content of every regular file
// under dir, for checks of what a hub left on disk (no secret in any
// file). A hub may be writing meanwhile (the automatic prune's mark, run
// records, spare files): a file renamed or removed between the listing and
// the read is skipped, and then the tree is walked again, up to five times
// in all, so that what it was renamed to is read too. fn may see a path
// more than once.
func ReadFiles(dir string, fn func(path string, data []byte)) error {
	for range 5 {
		moved := false
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if errors.Is(err, fs.ErrNotExist) && p != dir {
				moved = true
				return nil
			}
			if err != nil || d.IsDir() || !d.Type().IsRegular() {
				return err
			}
			data, err := os.ReadFile(p)
			if errors.Is(err, fs.ErrNotExist) {
				moved = true
				return nil
			}
			if err != nil {
				return err
			}
			fn(p, data)
			return nil
		})
		if err != nil || !moved {
			return err
		}
	}
	return nil
}
