package store

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// spares keeps empty files ready in a directory, so that writing a record
// or starting a log there creates no file on the caller's path. Creating a
// file costs 0.2–0.9 ms of kernel time on this machine's ext4, and in some
// directories of the same disk 15 µs: ext4 without a journal (this VM's)
// looks for a free inode past those deleted in the last minute (writing into an existing empty file and renaming
// it costs 30–60 µs). An execute that calls a tool takes three (its record,
// its journal, its final record), one that calls none takes one. The pool
// is refilled in the background once the directory has been quiet for a
// moment, so the refill does not compete with the executes that used the
// spares; spareCount lets a burst of about twenty executes with calls run
// before the files are created on their path (8 ran out after three: one
// call back to back over stdio, 30 in a row, p50 2.8 → 1.5 ms mean).
type spares struct {
	dir string

	mu      sync.Mutex
	ready   []string
	taken   time.Time // last take
	filling bool
	closed  bool
	swept   bool // stale spares removed (by the first fill)
	filler  sync.WaitGroup
}

const (
	sparePrefix = ".spare-"
	spareCount  = 64
	spareQuiet  = 5 * time.Millisecond
	spareStale  = time.Hour
)

func newSpares(dir string) *spares { return &spares{dir: dir} }

// take returns the path of an empty file of mode 600, or "" when none is
// ready (the caller then creates its own).
func (s *spares) take() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.taken = time.Now()
	if !s.filling && !s.closed {
		s.filling = true
		s.filler.Add(1)
		go s.fill()
	}
	if len(s.ready) == 0 {
		return ""
	}
	p := s.ready[len(s.ready)-1]
	s.ready = s.ready[:len(s.ready)-1]
	return p
}

// giveBack returns an unused spare.
func (s *spares) giveBack(p string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		_ = os.Remove(p)
		return
	}
	s.ready = append(s.ready, p)
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
		fh, err := os.CreateTemp(s.dir, sparePrefix+"*")
		if err != nil {
			s.mu.Lock()
			s.filling = false
			s.mu.Unlock()
			return // callers create their own files
		}
		_ = fh.Close()
		s.giveBack(fh.Name())
	}
}

// close stops filling and removes the spares not used. Writes after close
// create their own files.
func (s *spares) close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.filler.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.ready {
		_ = os.Remove(p)
	}
	s.ready = nil
}

// removeStale removes spares an earlier process left behind, once per
// process that writes runs (not on every Open: runs/ can hold thousands of
// files). A spare still in a live process's pool is only removed once it is
// an hour old; that process then creates its file itself.
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

// writeRecord writes data to path through a spare, renamed over path
// (without fsync), or through writeFile when no spare is ready.
func (s *spares) writeRecord(path string, data []byte) error {
	sp := s.take()
	if sp == "" {
		return writeFile(path, data, false)
	}
	// No O_TRUNC: a spare is empty (a failed write removes it), and ext4
	// flushes a file truncated to zero when it is closed (auto_da_alloc),
	// which doubled the cost of a write here.
	fh, err := os.OpenFile(sp, os.O_WRONLY, fileMode)
	if err != nil { // removed meanwhile (stale cleanup by another process)
		return writeFile(path, data, false)
	}
	_, err = fh.Write(data)
	if cerr := fh.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(sp, path)
	}
	if err != nil {
		_ = os.Remove(sp)
		return writeFile(path, data, false)
	}
	return nil
}

// create makes path exist as an empty file of mode 600 by linking a spare to
// it, unless it exists already. It reports nothing: the caller opens path
// with O_CREATE anyway.
func (s *spares) create(path string) {
	sp := s.take()
	if sp == "" {
		return
	}
	if err := os.Link(sp, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			s.giveBack(sp)
			return
		}
		_ = os.Remove(sp)
		return
	}
	_ = os.Remove(sp)
}
