package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync"
)

// A record that will not change once written (a run that called no tool
// and ended in its first attempt) can share its file with others: its
// name is a hard link to a file that holds several records, one a line,
// each after its id and a space. Creating a file is what a run's record
// cost under load (0.2–0.5 ms of kernel time an inode where the file
// system's allocator steps over recently deleted inodes, as in /tmp, and
// on 2 cores that time is the other runs'); a line appended to a file
// already there and a link to it take no new inode. One file in packCount
// records is created.
//
// A file that does not start with '{' holds packed records (an id cannot
// start with it, nor with white space): Get and Update read the line of
// their id. A packed record is replaced as any other (a new file renamed
// over its name) and deleted as any other (its name goes; the file goes
// with its last name). A process writes only to its own file, which has
// no name of its own (a spare), so processes never append to one file.
//
// A crash between a line's write and its link leaves a line nobody names,
// and loses that record as a crash before a write would: the run called
// nothing, so it has nothing in its journal to repeat or to lose (I6).

// FinalPutter is a Store that can store a record that will not change
// more cheaply than Put (see PutFinal).
type FinalPutter interface {
	PutFinal(ctx context.Context, kind Kind, id string, v any) error
}

// PutFinal stores v as a new record that is not expected to change: a run
// that ended without calling a tool. A store without a cheaper way Puts it.
// It may be replaced or deleted later like any other record.
func PutFinal(ctx context.Context, s Store, kind Kind, id string, v any) error {
	if p, ok := s.(FinalPutter); ok {
		return p.PutFinal(ctx, kind, id, v)
	}
	return s.Put(ctx, kind, id, v)
}

const (
	packCount = 32       // records a shared file holds at most
	packBytes = 64 << 10 // and bytes; a record larger than packLine is written alone
	packLine  = 8 << 10
)

// pack is a process's current shared file in a directory.
type pack struct {
	sp *spares

	mu     sync.Mutex
	f      *os.File // nil: none open
	n      int      // records in f
	size   int64    // bytes in f
	closed bool     // the store was closed: records are written alone
	// packed counts the records written in a shared file: tests.
	packed int64
}

// PutFinal writes a run record into this process's shared file and links
// its name to it; other kinds, and what cannot be packed, are Put.
func (f *File) PutFinal(ctx context.Context, kind Kind, id string, v any) error {
	if kind != Runs {
		return f.Put(ctx, kind, id, v)
	}
	if err := check(kind, id); err != nil {
		return err
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding record: %w", err)
	}
	if len(b) == 0 || b[0] != '{' || len(b) > packLine || bytes.IndexByte(b, '\n') >= 0 {
		return f.Put(ctx, kind, id, v)
	}
	line := make([]byte, 0, len(id)+1+len(b)+1)
	line = append(append(append(append(line, id...), ' '), b...), '\n')
	if f.pack.write(f.Path(kind, id), line) {
		return nil
	}
	return f.Put(ctx, kind, id, v)
}

// write appends line to the shared file and names it path. It reports
// false when it did not name it (no spare file, path exists, an error):
// the caller writes the record alone.
func (p *pack) write(path string, line []byte) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	if p.f == nil {
		p.f = p.sp.take()
		if p.f == nil {
			sf, err := spareFile(p.sp.dir)
			if err != nil {
				return false
			}
			p.f = sf
		}
		p.n, p.size = 0, 0
	}
	// One write(2) at the end: a reader of another name of this file sees
	// this line whole or not at all among the lines it reads, and looks
	// only for its own, which was whole before its name existed.
	_, err := p.f.WriteAt(line, p.size)
	if err != nil {
		p.closeLocked()
		return false
	}
	p.size += int64(len(line))
	err = nameSpare(p.f, path)
	if err != nil {
		// The line stays in the file, named by no one.
		if !errors.Is(err, fs.ErrExist) {
			p.closeLocked()
		}
		return false
	}
	p.n++
	p.packed++
	if p.n >= packCount || p.size >= packBytes {
		p.closeLocked()
	}
	return true
}

func (p *pack) closeLocked() {
	if p.f != nil {
		_ = p.f.Close()
		p.f = nil
	}
}

func (p *pack) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	p.closeLocked()
}

// unpack returns the record of id in data, a record file's content: data
// itself, or its line of id in a shared file (nil when it has none).
func unpack(data []byte, id string) []byte {
	if len(data) == 0 || !isPacked(data[0]) {
		return data
	}
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			return nil // a line whose write was cut short: not id's, which was whole
		}
		var line []byte
		line, data = data[:i], data[i+1:]
		if len(line) > len(id) && line[len(id)] == ' ' && string(line[:len(id)]) == id {
			return line[len(id)+1:]
		}
	}
	return nil
}

// isPacked says whether a record file starting with c holds packed
// records: a record is a JSON object ('{'), a packed line starts with an
// id.
func isPacked(c byte) bool {
	return c != '{' && c != '[' && c != ' ' && c != '\t' && c != '\n' && c != '\r'
}

// runFileBufs are the buffers readRunRecord reads files into.
var runFileBufs = sync.Pool{New: func() any { return new([]byte) }}

// readRunRecord reads run id's record from its file p through a buffer
// kept for the next read, and returns a copy of the record alone: listing
// a week of runs reads a shared file once for each record it holds, and
// keeps only that record. It returns nil and no error when p is a shared
// file with no line for id.
func readRunRecord(p, id string) ([]byte, error) {
	fh, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	bp := runFileBufs.Get().(*[]byte)
	defer runFileBufs.Put(bp)
	buf := (*bp)[:0]
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, rerr := fh.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			err = rerr
			break
		}
	}
	if cap(buf) <= 2*packBytes {
		*bp = buf[:0]
	} else {
		*bp = nil // a large record's buffer is not kept
	}
	if err != nil {
		return nil, err
	}
	rec := unpack(buf, id)
	if rec == nil {
		return nil, nil
	}
	return bytes.Clone(rec), nil
}
