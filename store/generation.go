package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// A store's generation tells a running hub, at the cost of one stat, whether
// anything a run sees has changed since it last looked, whoever wrote it:
// every write (Put, Update, Delete) of a source, manifest, connection,
// policy or profile bumps it once the record is in place, so a hub that
// checks it at the start of each request reads what a `hub add` in another
// terminal wrote the moment that command returned (read-your-writes across
// processes). Runs and blobs do not bump it: they change nothing a run sees
// and are written on every execute.
//
// On disk the marker is the file generation in the hub directory, and a
// bump appends one byte to it (O_APPEND: one write, no lock, no rename, and
// no sync: a process that starts reads every record anyway). Every bump
// makes it longer, so its size tells two generations apart however close
// together the writes came, where a modification time would not (the
// filesystem's clock ticks every few milliseconds); once it reaches
// generationMax bytes a writer cuts it back to none, which changes its
// size too (and its modification time, which a reader compares as well, so
// that a size seen before a cut and reached again after it is not taken
// for the same generation).

// Generation identifies a state of the store's sources, manifests,
// connections, policies and profiles. Two values are equal when nothing
// of those was written between the two reads (the zero value is no
// generation: a store that keeps none).
type Generation struct {
	size, mtimeNs int64
}

// Generationer is a store that keeps a generation.
type Generationer interface {
	// Generation reads the store's current generation: for the file
	// store, one stat.
	Generation() (Generation, error)
}

// GenerationFile is the name of the marker in the hub directory.
const GenerationFile = "generation"

// generationMax is the marker's size at which it is cut back to none.
const generationMax = 64 << 10

// bumps reports whether a write of the kind changes what a run sees.
func bumps(kind Kind) bool {
	switch kind {
	case Sources, Manifests, Connections, Policies, Profiles:
		return true
	}
	return false
}

// Generation is one stat of the marker. A marker not made yet (no write
// since the hub was made) is the zero Generation.
func (f *File) Generation() (Generation, error) {
	fi, err := os.Stat(f.generationPath())
	if errors.Is(err, fs.ErrNotExist) {
		return Generation{}, nil
	}
	if err != nil {
		return Generation{}, fmt.Errorf("reading the store's generation: %w", err)
	}
	return Generation{size: fi.Size(), mtimeNs: fi.ModTime().UnixNano()}, nil
}

func (f *File) generationPath() string { return filepath.Join(f.dir, GenerationFile) }

// bump moves the generation on after a write of kind (nothing for a kind
// that does not bump it). Call it once the record is in place.
func (f *File) bump(kind Kind) error {
	if !bumps(kind) {
		return nil
	}
	fh, err := os.OpenFile(f.generationPath(), os.O_WRONLY|os.O_APPEND|os.O_CREATE, fileMode)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // the hub's folder is gone: no process reads it any more (Gone)
	}
	if err != nil {
		return fmt.Errorf("bumping the store's generation: %w", err)
	}
	_, err = fh.Write([]byte{'.'})
	if err == nil {
		var fi os.FileInfo
		if fi, err = fh.Stat(); err == nil && fi.Size() >= generationMax {
			err = fh.Truncate(0)
		}
	}
	if cerr := fh.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("bumping the store's generation: %w", err)
	}
	return nil
}

// Generation counts the writes that bump it.
func (m *Mem) Generation() (Generation, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return Generation{size: m.gen}, nil
}
