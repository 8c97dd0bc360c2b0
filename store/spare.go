package store

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// spares keeps empty files ready in a directory, so that writing a record
// or starting a log there creates no file on the caller's path. Creating a
// file costs 0.2–0.9 ms of kernel time on this machine's ext4, and in some
// directories of the same disk 15 µs: ext4 without a journal (this VM's)
// looks for a free inode past those deleted in the last minute (naming an
// existing empty file costs 30–60 µs). An execute that calls a tool takes
// three (its record, its journal, its final record), one that calls none
// takes one. The pool is refilled in the background once the directory has
// been quiet for a moment, so the refill does not compete with the executes
// that used the spares; spareCount lets a burst of about twenty executes
// with calls run before the files are created on their path (8 ran out
// after three: one call back to back over stdio, 30 in a row, p50 2.8 →
// 1.5 ms mean).
//
// A spare is a file with no name yet (O_TMPFILE, held open: spareFile), so
// the directory shows nothing of the pool: `rm -rf` of the hub while a
// refill runs removes it whole (with named spares it failed with
// "Directory not empty" on runs/), and a process that dies leaves nothing
// behind. A system without such files keeps no spares.
type spares struct {
	dir string

	mu      sync.Mutex
	ready   []*os.File
	taken   time.Time // last take
	filling bool
	closed  bool
	swept   bool // stale spares removed (by the first fill)
	filler  sync.WaitGroup
	// named counts the files made of a spare, missed the records and
	// journals that were not (no spare ready, or it failed): tests.
	named, missed atomic.Int64
}

const (
	// sparePrefix named the spares of earlier versions, files in the
	// directory; removeStale removes those a dead process left.
	sparePrefix = ".spare-"
	spareCount  = 64
	spareQuiet  = 5 * time.Millisecond
	spareStale  = time.Hour
)

func newSpares(dir string) *spares { return &spares{dir: dir} }

// take returns an empty file of mode 600 with no name, or nil when none is
// ready (the caller then creates its own).
func (s *spares) take() *os.File {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.taken = time.Now()
	if !s.filling && !s.closed {
		s.filling = true
		s.filler.Add(1)
		go s.fill()
	}
	if len(s.ready) == 0 {
		return nil
	}
	f := s.ready[len(s.ready)-1]
	s.ready = s.ready[:len(s.ready)-1]
	return f
}

// giveBack returns an unused spare.
func (s *spares) giveBack(f *os.File) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		_ = f.Close()
		return
	}
	s.ready = append(s.ready, f)
}

func (s *spares) fill() {
	defer s.filler.Done()
	if !s.swept { // only fill goroutines touch swept, one at a time
		s.swept = true
		s.removeStale()
	}
	for {
		s.mu.Lock()
		quiet := time.Since(s.taken)
		if s.closed || (quiet >= spareQuiet && len(s.ready) >= spareCount) {
			s.filling = false
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		if quiet < spareQuiet {
			time.Sleep(spareQuiet - quiet)
			continue
		}
		f, err := spareFile(s.dir)
		if err != nil {
			s.mu.Lock()
			s.filling = false
			s.mu.Unlock()
			return // callers create their own files
		}
		s.giveBack(f)
	}
}

// close stops filling and lets the spares not used go. Writes after close
// create their own files.
func (s *spares) close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.filler.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range s.ready {
		_ = f.Close()
	}
	s.ready = nil
}

// removeStale removes the named spares an earlier version's process left
// behind, once per process that writes runs (not on every Open: runs/ can
// hold thousands of files). One still in a live process's pool is only
// removed once it is an hour old; that process then creates its file
// itself.
func (s *spares) removeStale() {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), sparePrefix) {
			continue
		}
		if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > spareStale {
			_ = os.Remove(filepath.Join(s.dir, e.Name()))
		}
	}
}

// writeRecord writes data to path through a spare, named path at once when
// path is new, else named beside it and renamed over it (without fsync),
// or through writeFile when no spare is ready.
func (s *spares) writeRecord(path string, data []byte) error {
	sp := s.take()
	if sp == nil {
		s.missed.Add(1)
		return writeFile(path, data, false)
	}
	defer sp.Close()
	// Written at offset 0 of an empty file: no O_TRUNC (ext4 flushes a
	// file truncated to zero when it is closed, auto_da_alloc, which
	// doubled the cost of a write here).
	if _, err := sp.Write(data); err != nil {
		s.missed.Add(1)
		return writeFile(path, data, false)
	}
	err := nameSpare(sp, path)
	if errors.Is(err, fs.ErrExist) {
		tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp-"+randomSuffix())
		if err = nameSpare(sp, tmp); err == nil {
			if err = os.Rename(tmp, path); err != nil {
				_ = os.Remove(tmp)
			}
		}
	}
	if err != nil {
		s.missed.Add(1)
		return writeFile(path, data, false)
	}
	s.named.Add(1)
	return nil
}

// create makes path exist as an empty file of mode 600 by naming a spare
// path, unless it exists already. It reports nothing: the caller opens
// path with O_CREATE anyway.
func (s *spares) create(path string) {
	sp := s.take()
	if sp == nil {
		s.missed.Add(1)
		return
	}
	err := nameSpare(sp, path)
	if errors.Is(err, fs.ErrExist) {
		s.giveBack(sp)
		return
	}
	if err != nil {
		s.missed.Add(1)
	} else {
		s.named.Add(1)
	}
	_ = sp.Close()
}

func randomSuffix() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
