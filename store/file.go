package store

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/gofrs/flock"
)

const (
	dirMode  = 0o700
	fileMode = 0o600
)

// Hub is hub.json: what the store is.
type Hub struct {
	Schema    int       `json:"schema"`
	ID        string    `json:"id"`
	CreatedAt time.Time `json:"createdAt"`
}

// Home is the capabilities home: $CAPABILITIES_HOME, or ~/.capabilities.
func Home() (string, error) {
	if h := os.Getenv("CAPABILITIES_HOME"); h != "" {
		return filepath.Abs(h)
	}
	u, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("finding the home directory (set CAPABILITIES_HOME): %w", err)
	}
	return filepath.Join(u, ".capabilities"), nil
}

// OtherHome is the hub's home (Home) when it is not the default place,
// ~/.capabilities, and "" when it is: what a command the person types in
// another terminal, or an agent's entry, must name (CAPABILITIES_HOME) to
// reach this hub. A symlink to the default place is the default place.
func OtherHome() (string, error) {
	home, err := Home()
	if err != nil {
		return "", err
	}
	if u, err := os.UserHomeDir(); err == nil && sameDir(home, filepath.Join(u, ".capabilities")) {
		return "", nil
	}
	return home, nil
}

// sameDir reports whether a and b name the same directory: the same clean
// path, or (a symlink between them) the same file.
func sameDir(a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	fa, erra := os.Stat(a)
	fb, errb := os.Stat(b)
	return erra == nil && errb == nil && os.SameFile(fa, fb)
}

// File is the store on disk.
type File struct {
	dir  string
	hub  Hub
	runs *spares // empty files ready in runs/
	pack *pack   // this process's file of run records that will not change (PutFinal)
}

var _ Store = (*File)(nil)

// ErrNoHub is returned by Open when the hub was never initialized.
var ErrNoHub = errors.New("no hub here")

// Init creates the hub at dir (home/hub) if it does not exist and opens it.
// It is idempotent; created reports whether it made a new hub.
func Init(dir string) (f *File, created bool, err error) {
	if err := os.MkdirAll(dir, dirMode); err != nil {
		return nil, false, fmt.Errorf("creating the hub directory: %w", err)
	}
	if err := os.Chmod(dir, dirMode); err != nil {
		return nil, false, fmt.Errorf("setting the hub directory's mode: %w", err)
	}
	for _, sub := range append(kindDirs(), "locks") {
		p := filepath.Join(dir, sub)
		if err := os.MkdirAll(p, dirMode); err != nil {
			return nil, false, fmt.Errorf("creating %s: %w", p, err)
		}
		if err := os.Chmod(p, dirMode); err != nil {
			return nil, false, fmt.Errorf("setting the mode of %s: %w", p, err)
		}
	}
	hubPath := filepath.Join(dir, "hub.json")
	unlock, err := lockFile(context.Background(), filepath.Join(dir, "locks", "hub.lock"))
	if err != nil {
		return nil, false, err
	}
	defer unlock()
	if _, err := os.Stat(hubPath); errors.Is(err, fs.ErrNotExist) {
		h := Hub{Schema: SchemaVersion, ID: newID(), CreatedAt: time.Now().UTC().Truncate(time.Second)}
		b, err := marshal(h)
		if err != nil {
			return nil, false, err
		}
		if err := WriteFileAtomic(hubPath, b); err != nil {
			return nil, false, err
		}
		created = true
	}
	f, err = Open(dir)
	return f, created, err
}

// Open opens an existing hub at dir. It refuses a store written by a newer
// schema than this build understands.
func Open(dir string) (*File, error) {
	hubPath := filepath.Join(dir, "hub.json")
	data, err := os.ReadFile(hubPath)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("opening the hub: %w at %s; run `capabilities hub init` first", ErrNoHub, dir)
	}
	if err != nil {
		return nil, fmt.Errorf("opening the hub: %w", err)
	}
	var h Hub
	if err := DecodeRecord(hubPath, data, &h); err != nil {
		return nil, fmt.Errorf("opening the hub: %w", err)
	}
	if h.Schema > SchemaVersion {
		return nil, fmt.Errorf("opening the hub: %s was written by a newer capabilities (store schema %d; this build reads up to %d): upgrade capabilities, or point CAPABILITIES_HOME at another directory", hubPath, h.Schema, SchemaVersion)
	}
	if h.Schema < 1 || h.ID == "" {
		return nil, fmt.Errorf("opening the hub: %s has no schema version or hub id; remove it and run `capabilities hub init` (records in the other directories are kept)", hubPath)
	}
	runs := newSpares(filepath.Join(dir, string(Runs)))
	return &File{dir: dir, hub: h, runs: runs, pack: &pack{sp: runs}}, nil
}

// Close removes the empty files the store keeps ready and stops making
// them. The store stays usable.
func (f *File) Close() error {
	f.pack.close()
	f.runs.close()
	return nil
}

func kindDirs() []string {
	out := make([]string, len(Kinds))
	for i, k := range Kinds {
		out[i] = string(k)
	}
	return out
}

// Dir is the hub directory.
func (f *File) Dir() string { return f.dir }

// Hub describes the store.
func (f *File) Hub() Hub { return f.hub }

// Path is the file of a record.
func (f *File) Path(kind Kind, id string) string {
	return filepath.Join(f.dir, string(kind), id+".json")
}

func (f *File) logPath(kind Kind, id string) string {
	return filepath.Join(f.dir, string(kind), id+".journal.jsonl")
}

func check(kind Kind, id string) error {
	if err := validKind(kind); err != nil {
		return err
	}
	return ValidID(id)
}

func (f *File) Get(ctx context.Context, kind Kind, id string, v any) error {
	if err := check(kind, id); err != nil {
		return err
	}
	p := f.Path(kind, id)
	var data []byte
	var err error
	if kind == Runs {
		data, err = readRunRecord(p, id)
	} else {
		data, err = os.ReadFile(p)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("reading %s/%s: %w", kind, id, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("reading %s: %w", p, err)
	}
	if data == nil && kind == Runs {
		return noLine(p, id)
	}
	return DecodeRecord(p, data, v)
}

// unpacked is the record of id in data, the content of its file p, which
// may be shared with other run records (PutFinal).
func unpacked(kind Kind, id, p string, data []byte) ([]byte, error) {
	if kind != Runs {
		return data, nil
	}
	rec := unpack(data, id)
	if rec == nil {
		return nil, noLine(p, id)
	}
	return rec, nil
}

func noLine(p, id string) error {
	return &CorruptError{Path: p, Err: fmt.Errorf("a file of packed run records with no line for %s", id)}
}

func (f *File) Put(ctx context.Context, kind Kind, id string, v any) error {
	if err := check(kind, id); err != nil {
		return err
	}
	b, err := marshal(v)
	if err != nil {
		return err
	}
	unlock, err := f.lockRecord(ctx, kind, id, slotRecord, true)
	if err != nil {
		return err
	}
	defer unlock()
	if err := f.writeRecord(kind, f.Path(kind, id), b); err != nil {
		return err
	}
	return f.bump(kind)
}

// writeRecord writes a record atomically. Run records skip the fsync: a
// run's durable truth is its journal (a write's intent and outcome are
// synced before the request goes out and before the code sees the outcome;
// a read's outcome is written before the code sees it and synced by the
// next synced line, or before a pause is recorded), and a run record lost
// in a crash is rebuilt by resuming from the journal, so syncing each of its
// state changes would only add latency to every execute.
func (f *File) writeRecord(kind Kind, path string, data []byte) error {
	if kind == Runs {
		return f.runs.writeRecord(path, data)
	}
	return WriteFileAtomic(path, data)
}

func (f *File) Update(ctx context.Context, kind Kind, id string, fn func([]byte) ([]byte, error)) error {
	if err := check(kind, id); err != nil {
		return err
	}
	unlock, err := f.lockRecord(ctx, kind, id, slotRecord, true)
	if err != nil {
		return err
	}
	defer unlock()
	p := f.Path(kind, id)
	old, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		old = nil
	} else if err != nil {
		return fmt.Errorf("reading %s: %w", p, err)
	} else if old, err = unpacked(kind, id, p, old); err != nil {
		return err
	}
	next, err := fn(old)
	if err != nil {
		return err
	}
	if err := f.writeRecord(kind, p, next); err != nil {
		return err
	}
	return f.bump(kind)
}

func (f *File) Delete(ctx context.Context, kind Kind, id string) error {
	if err := check(kind, id); err != nil {
		return err
	}
	unlock, err := f.lockRecord(ctx, kind, id, slotRecord, true)
	if err != nil {
		return err
	}
	defer unlock()
	for _, p := range []string{f.Path(kind, id), f.logPath(kind, id)} {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("removing %s: %w", p, err)
		}
	}
	f.removeLocks(kind, id)
	return f.bump(kind)
}

func (f *File) List(ctx context.Context, kind Kind) ([]string, error) {
	if err := validKind(kind); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(filepath.Join(f.dir, string(kind)))
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", kind, err)
	}
	var ids []string
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || strings.HasPrefix(name, ".") || !strings.HasSuffix(name, ".json") {
			continue
		}
		ids = append(ids, strings.TrimSuffix(name, ".json"))
	}
	sort.Strings(ids)
	return ids, nil
}

func (f *File) Append(ctx context.Context, kind Kind, id string, line []byte) error {
	l, err := f.OpenLog(ctx, kind, id)
	if err != nil {
		return err
	}
	err = l.Append(line)
	if cerr := l.Close(); err == nil {
		err = cerr
	}
	return err
}

func (f *File) OpenLog(ctx context.Context, kind Kind, id string) (Log, error) {
	if err := check(kind, id); err != nil {
		return nil, err
	}
	p := f.logPath(kind, id)
	fh, err := os.OpenFile(p, os.O_RDWR|os.O_APPEND, fileMode)
	if err == nil {
		if err = cutTornLine(fh); err != nil {
			fh.Close()
			return nil, fmt.Errorf("opening %s: %w", p, err)
		}
	}
	if errors.Is(err, fs.ErrNotExist) {
		if kind == Runs {
			f.runs.create(p) // a new journal: from a spare, no file created here
		}
		fh, err = os.OpenFile(p, os.O_RDWR|os.O_APPEND|os.O_CREATE, fileMode)
	}
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", p, err)
	}
	return &fileLog{fh: fh, name: string(kind) + "/" + id}, nil
}

// cutTornLine removes what follows the last newline of a log: the part of
// a line whose write(2) a killed process did not finish (a fatal signal
// cuts a large write short). Nothing relied on that line, since a line
// counts once its write returned; left in place, the next line appended
// would be glued to it and the log unreadable from there on.
func cutTornLine(fh *os.File) error {
	fi, err := fh.Stat()
	if err != nil || fi.Size() == 0 {
		return err
	}
	end := fi.Size()
	buf := make([]byte, 64<<10)
	for off := end; off > 0; {
		n := int64(len(buf))
		if off < n {
			n = off
		}
		off -= n
		if _, err := fh.ReadAt(buf[:n], off); err != nil {
			return err
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			if off+int64(i)+1 == end {
				return nil // the last line is whole
			}
			return fh.Truncate(off + int64(i) + 1)
		}
	}
	return fh.Truncate(0)
}

// fileLog appends to an O_APPEND file with one write(2) per line, so the
// kernel appends it in one piece and concurrent appenders (in any process)
// never interleave; fdatasync makes each line durable before Append returns
// (a journaled call must survive a crash).
type fileLog struct {
	fh   *os.File
	name string
}

func (l *fileLog) Append(line []byte) error {
	if err := l.Write(line); err != nil {
		return err
	}
	return l.Sync()
}

// Write is Append without the fdatasync: the line is in the file (the
// page cache) when it returns, so a later fdatasync of the file, by Append
// or Sync, covers it.
func (l *fileLog) Write(line []byte) error {
	if bytes.ContainsAny(line, "\n\r") {
		return fmt.Errorf("appending to %s: a log line must not contain a newline", l.name)
	}
	if _, err := l.fh.Write(append(line[:len(line):len(line)], '\n')); err != nil {
		// A full disk takes part of the line: cut it off, or the next
		// line would be glued to it.
		if cerr := cutTornLine(l.fh); cerr != nil {
			err = errors.Join(err, cerr)
		}
		return fmt.Errorf("appending to %s: %w", l.fh.Name(), err)
	}
	return nil
}

func (l *fileLog) Sync() error {
	if err := datasync(l.fh); err != nil {
		return fmt.Errorf("syncing %s: %w", l.fh.Name(), err)
	}
	return nil
}

func (l *fileLog) Close() error { return l.fh.Close() }

func (f *File) ReadLog(ctx context.Context, kind Kind, id string) ([][]byte, error) {
	if err := check(kind, id); err != nil {
		return nil, err
	}
	p := f.logPath(kind, id)
	fh, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", p, err)
	}
	defer fh.Close()
	var lines [][]byte
	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 64*1024), 16<<20)
	sc.Split(wholeLines)
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		lines = append(lines, append([]byte(nil), sc.Bytes()...))
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading %s: %w", p, err)
	}
	return lines, nil
}

// wholeLines splits a log into its lines, leaving out a last one with no
// newline: a write a killed process did not finish (cutTornLine).
func wholeLines(data []byte, atEOF bool) (advance int, token []byte, err error) {
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		return i + 1, data[:i], nil
	}
	if atEOF {
		return len(data), nil, nil
	}
	return 0, nil, nil
}

// The two locks of a record (lockRecord, in lock_*.go): one taken by Put,
// Update and Delete, one by Hold, so that a held record stays writable.
const (
	slotRecord = 0
	slotHold   = 1
)

func (f *File) Hold(ctx context.Context, kind Kind, id string) (func(), error) {
	if err := check(kind, id); err != nil {
		return nil, err
	}
	return f.lockRecord(ctx, kind, id, slotHold, false)
}

func (f *File) Held(ctx context.Context, kind Kind, id string) (bool, error) {
	if err := check(kind, id); err != nil {
		return true, err
	}
	return f.heldRecord(kind, id, slotHold)
}

// lockFile takes an exclusive cross-process lock on path, waiting until ctx
// is done.
func lockFile(ctx context.Context, path string) (unlock func(), err error) {
	l := flock.New(path, flock.SetPermissions(fileMode))
	ok, err := l.TryLockContext(ctx, 5*time.Millisecond)
	if err != nil {
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	if !ok {
		return nil, fmt.Errorf("locking %s: %w", path, ctx.Err())
	}
	return func() { _ = l.Unlock() }, nil
}

// WriteFileAtomic writes data to path through a temporary file in the same
// directory that is synced and renamed over path, mode 600. On any error
// the old file is untouched and the temporary file removed.
func WriteFileAtomic(path string, data []byte) error {
	return writeFile(path, data, true)
}

func writeFile(path string, data []byte, durable bool) (err error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	if err = tmp.Chmod(fileMode); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if _, err = tmp.Write(data); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if durable {
		if err = tmp.Sync(); err != nil {
			return fmt.Errorf("syncing %s: %w", path, err)
		}
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("renaming into %s: %w", path, err)
	}
	if !durable {
		return nil
	}
	if d, derr := os.Open(dir); derr == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}

func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// NewID returns a random 128-bit id in hex, for runs and other records.
func NewID() string { return newID() }

// CheckModes walks dir and lists every entry whose mode is not 700 (a
// directory) or 600 (a file), with the chmod that fixes it; n is how many
// entries it checked.
func CheckModes(dir string) (problems []string, n int) {
	problems = []string{}
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", p, err))
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		n++
		want := fs.FileMode(fileMode)
		if d.IsDir() {
			want = dirMode
		}
		if got := info.Mode().Perm(); got != want {
			problems = append(problems, fmt.Sprintf("%s has mode %o, want %o (chmod %o %s)", p, got, want, want, p))
		}
		return nil
	})
	return problems, n
}
