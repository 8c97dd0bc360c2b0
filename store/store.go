// Package store keeps the hub's records: sources, manifests, connections,
// policies, profiles, runs and their journals.
//
// The file store lives at $CAPABILITIES_HOME/hub (default ~/.capabilities/hub):
// directories mode 700, files mode 600. Every write goes to a temporary file
// in the same directory, is synced and renamed over the record, so a reader
// sees the old record or the new one, never half of one. Several processes
// (each `serve --stdio`, the CLI, the desktop app) share the store through
// per-record lock files under locks/; there is no daemon.
//
// Mem is an in-memory store with the same behaviour, for unit tests of
// logic; one conformance suite (storetest) runs against both.
package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"time"

	sjson "github.com/segmentio/encoding/json"
)

// Kind names a collection of records; each is a directory of the store.
type Kind string

const (
	Sources     Kind = "sources"
	Manifests   Kind = "manifests"
	Connections Kind = "connections"
	Policies    Kind = "policies"
	Profiles    Kind = "profiles"
	Runs        Kind = "runs"
	Blobs       Kind = "blobs"
)

// Kinds lists every collection, in the order `doctor` shows them.
var Kinds = []Kind{Sources, Manifests, Connections, Policies, Profiles, Runs, Blobs}

// SchemaVersion is the newest store schema this build reads and writes.
const SchemaVersion = 1

// ErrNotFound is returned when a record does not exist.
var ErrNotFound = errors.New("not found")

// Store is the record store every engine package uses. Records are JSON
// documents named by kind and id; logs are append-only JSON-lines files
// beside them (a run's journal).
type Store interface {
	// Get reads the record into v. It returns an error wrapping ErrNotFound
	// when there is none, and a *CorruptError when it cannot be decoded.
	Get(ctx context.Context, kind Kind, id string, v any) error
	// Put replaces the record atomically.
	Put(ctx context.Context, kind Kind, id string, v any) error
	// Update reads the record (nil when absent), calls fn and writes what fn
	// returns, holding the record's lock throughout so concurrent updates from
	// other processes are serialized. fn returning an error writes nothing.
	Update(ctx context.Context, kind Kind, id string, fn func(old []byte) (new []byte, err error)) error
	// Delete removes the record and its log; deleting a missing record is not
	// an error.
	Delete(ctx context.Context, kind Kind, id string) error
	// List returns the ids of the kind's records, sorted.
	List(ctx context.Context, kind Kind) ([]string, error)
	// Append adds one line (a JSON value, no newline) to the record's log,
	// durably and in one piece.
	Append(ctx context.Context, kind Kind, id string, line []byte) error
	// OpenLog opens the record's log for a writer that appends several
	// lines, creating it when it does not exist.
	OpenLog(ctx context.Context, kind Kind, id string) (Log, error)
	// ReadLog returns the lines of the record's log, in order.
	ReadLog(ctx context.Context, kind Kind, id string) ([][]byte, error)
	// Hold takes a long-lived exclusive claim on (kind, id) without waiting,
	// apart from the record's own lock: it returns ErrBusy while another
	// holder (in this or another process) has it. The claim ends with
	// release, or when the holding process dies.
	Hold(ctx context.Context, kind Kind, id string) (release func(), err error)
	// Held reports whether a Hold on (kind, id) is taken, in this or another
	// live process, without taking it: a holder coming at that instant is
	// never refused because of it. It errs on the side of held: two ids that
	// share a lock (a hash collision), an error, or a system with no way to
	// test a lock without taking it (every one but Linux) say held.
	Held(ctx context.Context, kind Kind, id string) (bool, error)
}

// Log is a record's log open for appending. It is safe for concurrent use.
type Log interface {
	// Append adds one line (a JSON value, no newline), durably and in one
	// piece.
	Append(line []byte) error
	// Write adds one line in one piece, in order, like Append, without
	// waiting for it to reach the drive: the next Append or Sync makes it
	// durable, with every line before it. A process that dies leaves it
	// written; a machine that crashes may lose it (and only the lines after
	// the last durable one).
	Write(line []byte) error
	// Sync makes every line written so far durable.
	Sync() error
	Close() error
}

// Aged is a record as a store that keeps each record's time lists it
// (store/postgres.Store.Oldest), without reading it: when it was last
// written (the store's clock) and what it takes, its log included.
type Aged struct {
	ID      string
	Written time.Time
	Size    int64
}

// ErrBusy is returned by Hold when the claim is held elsewhere.
var ErrBusy = errors.New("busy")

// CorruptError reports a record that exists but cannot be decoded.
type CorruptError struct {
	Path string // the file, or kind/id for the memory store
	Err  error
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("reading %s: the record is corrupt (%v); fix the file by hand or remove it and re-create the record", e.Path, e.Err)
}

func (e *CorruptError) Unwrap() error { return e.Err }

// ValidID checks that id can name a record: 1–128 bytes of a-z, A-Z, 0-9,
// '_', '-', '.', not starting with '.'.
func ValidID(id string) error {
	if id == "" || len(id) > 128 {
		return fmt.Errorf("record id %q must be 1 to 128 characters", id)
	}
	if id[0] == '.' {
		return fmt.Errorf("record id %q must not start with '.'", id)
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_-.", r)) {
			return fmt.Errorf("record id %q may contain only letters, digits, '_', '-' and '.'", id)
		}
	}
	return nil
}

func validKind(k Kind) error {
	for _, x := range Kinds {
		if x == k {
			return nil
		}
	}
	return fmt.Errorf("unknown record kind %q", k)
}

// DecodeRecord decodes a stored record strictly: exactly one JSON value, no
// trailing data. path names the record in errors.
//
// segmentio's decoder does the work: it decodes what encoding/json does, the
// same way, 4–5 times as fast (a hub of 10,000 tools keeps 26 MB of
// manifests, which a start reads before its first execute can know the
// hub's namespaces). Its errors have no offset, so a record it refuses is
// decoded again by encoding/json, for the line and column of what is wrong.
func DecodeRecord(path string, data []byte, v any) error {
	if sjson.Unmarshal(data, v) == nil {
		return nil
	}
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Pointer && !rv.IsNil() {
		rv.Elem().SetZero() // what the first decode left
	}
	if err := json.Unmarshal(data, v); err != nil {
		return &CorruptError{Path: path, Err: describeJSONError(data, err)}
	}
	return nil
}

// describeJSONError adds the line and column to a JSON syntax error.
func describeJSONError(data []byte, err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		line, col := lineCol(data, se.Offset)
		return fmt.Errorf("invalid JSON at line %d, column %d: %w", line, col, err)
	case errors.As(err, &te):
		line, col := lineCol(data, te.Offset)
		return fmt.Errorf("wrong type at line %d, column %d (field %q): %w", line, col, te.Field, err)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("the file is empty or truncated: %w", err)
	}
	return err
}

func lineCol(data []byte, off int64) (line, col int) {
	line, col = 1, 1
	for i := int64(0); i < off && i < int64(len(data)); i++ {
		if data[i] == '\n' {
			line++
			col = 1
		} else {
			col++
		}
	}
	return line, col
}

// Get is a typed shorthand for s.Get.
func Get[T any](ctx context.Context, s Store, kind Kind, id string) (*T, error) {
	var v T
	if err := s.Get(ctx, kind, id, &v); err != nil {
		return nil, err
	}
	return &v, nil
}

// UpdateJSON is a typed Update: fn gets the decoded record (nil when absent)
// and returns the value to store.
func UpdateJSON[T any](ctx context.Context, s Store, kind Kind, id string, fn func(old *T) (*T, error)) error {
	return s.Update(ctx, kind, id, func(old []byte) ([]byte, error) {
		var cur *T
		if old != nil {
			cur = new(T)
			if err := DecodeRecord(string(kind)+"/"+id, old, cur); err != nil {
				return nil, err
			}
		}
		next, err := fn(cur)
		if err != nil {
			return nil, err
		}
		return marshal(next)
	})
}

func marshal(v any) ([]byte, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encoding record: %w", err)
	}
	return append(b, '\n'), nil
}
