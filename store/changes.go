package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"

	"github.com/fsnotify/fsnotify"
)

// Change is one record written or removed, in this process or another, as
// a change feed (Changer) reports it.
type Change struct {
	Kind Kind   // the record's kind
	ID   string // the record's id (in a folder that WatchFolder follows, an entry's name)
	// Resync says that changes may have been missed (a lost connection to
	// the database, an overflow of the kernel's queue): Kind and ID are
	// empty, and a consumer reads everything it follows again.
	Resync bool
}

// Changer is a store with a change feed: the notifications by which every
// process sharing the store learns of a write of another at once, instead
// of polling (a decision recorded anywhere wakes the hub that resumes the
// run; a source added by `hub add` reaches the tool lists of every serve).
type Changer interface {
	// Changes reports the writes and removals of records of the kinds
	// that have followers (Followed), by this Store or any other on the
	// same store, made after it returns. A change may be reported more
	// than once, or several changes of one record once; a Change with
	// Resync stands for any number of them. The channel is closed when ctx
	// is done or the store is closed.
	Changes(ctx context.Context) (<-chan Change, error)
}

// Followed lists the kinds every change feed reports: what makes the hub's
// catalog (sources, manifests, connections, policies, profiles) and runs
// (a person's decision). Blobs are written by the run that reads them.
var Followed = []Kind{Sources, Manifests, Connections, Policies, Profiles, Runs}

// IsFollowed reports whether the kind's changes are reported by change feeds.
func IsFollowed(k Kind) bool {
	for _, x := range Followed {
		if x == k {
			return true
		}
	}
	return false
}

var (
	_ Changer = (*File)(nil)
	_ Changer = (*Mem)(nil)
)

// Changes follows the kinds' folders with one inotify (or kqueue) watcher:
// a record's write (a rename onto NAME.json) or removal is reported as its
// kind and id; other files (temporary files, logs, spare files) are not.
func (f *File) Changes(ctx context.Context) (<-chan Change, error) {
	folders := make([]folder, 0, len(Followed))
	for _, k := range Followed {
		folders = append(folders, folder{dir: filepath.Join(f.dir, string(k)), kind: k, records: true})
	}
	return watchFolders(ctx, folders)
}

// WatchFolder reports each entry made, changed, renamed or removed directly
// in dir (not in its subfolders) as a Change of kind with the entry's name
// as ID: for what a hub keeps in files beside its store (skills).
func WatchFolder(ctx context.Context, dir string, kind Kind) (<-chan Change, error) {
	return watchFolders(ctx, []folder{{dir: dir, kind: kind}})
}

type folder struct {
	dir     string
	kind    Kind
	records bool // only NAME.json with a valid id, reported as NAME
}

// watchFolders is the one fsnotify loop of the hub.
func watchFolders(ctx context.Context, folders []folder) (<-chan Change, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("following the store's changes: %w", err)
	}
	byDir := map[string]folder{}
	for _, fo := range folders {
		if err := w.Add(fo.dir); err != nil {
			_ = w.Close()
			return nil, fmt.Errorf("following the store's changes in %s: %w", fo.dir, err)
		}
		byDir[filepath.Clean(fo.dir)] = fo
	}
	out := make(chan Change, 64)
	go func() {
		defer close(out)
		defer w.Close()
		for {
			var c Change
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-w.Events:
				if !ok {
					return
				}
				fo, known := byDir[filepath.Dir(ev.Name)]
				if !known || ev.Op == fsnotify.Chmod {
					continue
				}
				name := filepath.Base(ev.Name)
				if fo.records {
					id, isRecord := strings.CutSuffix(name, ".json")
					if !isRecord || ValidID(id) != nil {
						continue
					}
					name = id
				}
				c = Change{Kind: fo.kind, ID: name}
			case err, ok := <-w.Errors:
				if !ok {
					return
				}
				if !errors.Is(err, fsnotify.ErrEventOverflow) {
					slog.Warn("following the store's changes", "err", err)
					continue
				}
				c = Change{Resync: true}
			}
			select {
			case out <- c:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}

// Changes reports the writes of this Mem (it shares nothing with another).
func (m *Mem) Changes(ctx context.Context) (<-chan Change, error) {
	return m.feed.subscribe(ctx), nil
}

// feed hands the changes one process makes to its subscribers.
type feed struct {
	mu   sync.Mutex
	subs map[chan Change]context.Context
}

func (f *feed) subscribe(ctx context.Context) <-chan Change {
	ch := make(chan Change, 64)
	f.mu.Lock()
	if f.subs == nil {
		f.subs = map[chan Change]context.Context{}
	}
	f.subs[ch] = ctx
	f.mu.Unlock()
	go func() {
		<-ctx.Done()
		f.mu.Lock()
		delete(f.subs, ch)
		f.mu.Unlock()
		close(ch)
	}()
	return ch
}

// publish hands c to each subscriber, waiting for a slow one (until its
// context ends). Call it without holding the store's lock.
func (f *feed) publish(c Change) {
	if !IsFollowed(c.Kind) {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for ch, ctx := range f.subs {
		select {
		case ch <- c:
		case <-ctx.Done():
		}
	}
}
