// Package watch notices an MCP server added to an agent harness's config
// (Claude Code, Codex, …) while it runs, and offers to import it into the
// hub: "Claude Code added `linear` — add it to the hub?".
//
// It watches the directories of every config file the importer reads (not
// the files: editors and harnesses replace a file by renaming a new one over
// it). A directory that does not exist yet (~/.codex before Codex first
// runs) is watched through its nearest existing parent, and watched itself
// once it appears; no directory is created. A burst of writes is read once,
// after a quiet period. A server is offered when a read of its file holds an
// entry not seen in it since the Watcher started (what the files held then
// is not offered: that is `hub import`'s), the hub has no source running
// it, and the entry was not declined. An entry is a harness, a file and the
// server's command, arguments and environment (or URL): renaming a server
// in a config is not a new server. Declined entries are kept in the store
// directory, so they are never offered again, also after a restart.
//
// The package only reads configs and offers; adding the source (the hub's
// Propose, Accept and review) is the caller's.
package watch

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/capabilities-sh/capabilities/engine/harness"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/fsnotify/fsnotify"
)

// Default timings.
const (
	// DefaultQuiet is how long the files must be left alone before a burst
	// of writes is read.
	DefaultQuiet = 250 * time.Millisecond
	// DefaultMaxDelay bounds how long a stream of writes that never pauses
	// can hold a read back.
	DefaultMaxDelay = time.Second
)

// Options are what a Watcher needs besides the harness environment.
type Options struct {
	// Dir is the store's directory ($CAPABILITIES_HOME/hub); the declined
	// entries are kept in Dir/DeclinedFile. Required.
	Dir string
	// Sources returns the hub's sources; a server one of them runs is not
	// offered. Called only when a config gained a server. nil: none.
	Sources func(ctx context.Context) ([]model.Source, error)
	// Harnesses are the harnesses watched; nil is harness.All().
	Harnesses []harness.Harness
	// Quiet is the debounce period (0: DefaultQuiet); MaxDelay bounds it
	// under writes that never pause (0: DefaultMaxDelay).
	Quiet, MaxDelay time.Duration
	// Log receives what went wrong that is not fatal (an unreadable file, a
	// failed Sources); nil discards.
	Log *slog.Logger
}

// Offer is one server an agent's config gained, to offer for import.
type Offer struct {
	Harness string // harness name, "claude-code"
	Title   string // as people write it, "Claude Code"
	Path    string // the config file
	Server  harness.Server
	// Proposal is what to import: Proposal.Request() is the hub.AddRequest,
	// under a namespace the hub does not have yet. When the same server was
	// added to several harnesses at once, it is one offer and Origins lists
	// them all.
	Proposal harness.Proposal
	// At is when the change that made the offer was first seen.
	At time.Time
}

// Message is the notification's text.
func (o Offer) Message() string {
	return fmt.Sprintf("%s added `%s` — add it to the hub?", o.Title, o.Server.Name)
}

// Watcher watches the harness configs. Make one with New, start it with
// Run, read Offers, and call Decline for an offer the person refused.
type Watcher struct {
	env     harness.Env
	opts    Options
	log     *slog.Logger
	files   []harness.File
	titles  map[string]string // harness name → title
	offers  chan Offer
	started chan struct{} // closed once Run has read the starting state and watches

	// Owned by Run's goroutine.
	seen    map[string]map[string]bool // file id → entry keys read in it since Run began
	watched map[string]bool            // directories watched
	targets map[string]string          // a config as events name it, when not by its path → the config

	mu       sync.Mutex
	declined *declined
}

// New makes a Watcher for the harness configs of env. Nothing is watched
// until Run. An env with no Cwd watches the user configs only (what a
// desktop app wants: its working directory is no project).
func New(env harness.Env, opts Options) (*Watcher, error) {
	if opts.Dir == "" {
		return nil, errors.New("watching harness configs: no store directory")
	}
	if opts.Harnesses == nil {
		opts.Harnesses = harness.All()
	}
	if opts.Quiet <= 0 {
		opts.Quiet = DefaultQuiet
	}
	if opts.MaxDelay <= 0 {
		opts.MaxDelay = DefaultMaxDelay
	}
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	d, err := loadDeclined(filepath.Join(opts.Dir, DeclinedFile))
	if err != nil {
		return nil, fmt.Errorf("watching harness configs: %w", err)
	}
	w := &Watcher{env: env, opts: opts, log: log, titles: map[string]string{}, offers: make(chan Offer, 16), started: make(chan struct{}),
		seen: map[string]map[string]bool{}, watched: map[string]bool{}, declined: d}
	for _, h := range opts.Harnesses {
		w.titles[h.Name] = h.Title
		for _, f := range h.Files(env) {
			f.Path = filepath.Clean(f.Path)
			w.files = append(w.files, f)
		}
	}
	return w, nil
}

// Offers delivers the offers; it is closed when Run returns. It holds 16:
// past that, Run waits for the reader (and reads no file meanwhile).
func (w *Watcher) Offers() <-chan Offer { return w.offers }

// Paths lists the config files watched (existing or not).
func (w *Watcher) Paths() []string {
	var out []string
	for _, f := range w.files {
		if !slices.Contains(out, f.Path) {
			out = append(out, f.Path)
		}
	}
	return out
}

// Decline records that the person does not want the offer's server: no
// entry it came from is offered again, by this Watcher or a later one on
// the same store directory.
func (w *Watcher) Decline(o Offer) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	origins := o.Proposal.Origins
	if len(origins) == 0 {
		origins = []harness.Origin{{Harness: o.Harness, Path: o.Path}}
	}
	for _, or := range origins {
		w.declined.add(entryID(or.Harness, or.Path, serverKey(o.Server)), or.Harness, or.Path, o.Server.Name)
	}
	if err := w.declined.save(); err != nil {
		return fmt.Errorf("declining %s: %w", o.Server.Name, err)
	}
	return nil
}

func (w *Watcher) isDeclined(harnessName, path string, s harness.Server) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.declined.has(entryID(harnessName, path, serverKey(s)))
}

// Run reads the configs as they are now (what they hold is not offered),
// then watches them until ctx is done. It returns nil when ctx is done, an
// error when watching cannot start. It closes Offers when it returns.
func (w *Watcher) Run(ctx context.Context) error {
	defer close(w.offers)
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watching harness configs: %w", err)
	}
	defer fw.Close()
	w.resync(fw)
	for _, p := range w.Paths() {
		w.read(p, nil)
	}
	close(w.started)
	pending := map[string]time.Time{} // path → first event since the last read
	var quiet, deadline <-chan time.Time
	var quietT, deadlineT *time.Timer
	stop := func(t *time.Timer) {
		if t != nil {
			t.Stop()
		}
	}
	defer func() { stop(quietT); stop(deadlineT) }()
	// schedule marks paths to be read once things are quiet (and no later
	// than MaxDelay after the first).
	schedule := func(paths []string) {
		now := time.Now()
		for _, p := range paths {
			if _, ok := pending[p]; !ok {
				pending[p] = now
			}
		}
		stop(quietT)
		quietT = time.NewTimer(w.opts.Quiet)
		quiet = quietT.C
		if deadline == nil {
			deadlineT = time.NewTimer(w.opts.MaxDelay)
			deadline = deadlineT.C
		}
	}
	flush := func() {
		stop(quietT)
		stop(deadlineT)
		quiet, deadline = nil, nil
		w.flush(ctx, fw, pending)
		pending = map[string]time.Time{}
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-fw.Events:
			if !ok {
				return nil
			}
			touched := w.relevant(ev.Name)
			if w.onPathTo(ev.Name) && ev.Op&(fsnotify.Create|fsnotify.Remove|fsnotify.Rename) != 0 {
				// A directory on the way to a config appeared or went:
				// watch the nearest existing one, read what is now under
				// the newly watched directories, and look again when
				// things are quiet (a directory made inside the new one
				// before it was watched sends no event).
				schedule(append(touched, w.resync(fw)...))
				continue
			}
			if len(touched) > 0 {
				schedule(touched)
			}
		case err, ok := <-fw.Errors:
			if !ok {
				return nil
			}
			w.log.Warn("watching harness configs", "err", err)
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				schedule(w.Paths()) // events were lost: read everything again
			}
		case <-quiet:
			flush()
		case <-deadline:
			flush()
		}
	}
}

// flush reads the pending files and sends the offers they make.
func (w *Watcher) flush(ctx context.Context, fw *fsnotify.Watcher, pending map[string]time.Time) {
	// A directory may have appeared without an event reaching us (made
	// inside a directory before it was watched): check again.
	for _, p := range w.resync(fw) {
		if _, ok := pending[p]; !ok {
			pending[p] = time.Now()
		}
	}
	paths := make([]string, 0, len(pending))
	for p := range pending {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	sc := &harness.Scan{}
	for _, p := range paths {
		w.read(p, sc)
	}
	if len(sc.Found) == 0 {
		return
	}
	var sources []model.Source
	if w.opts.Sources != nil {
		var err error
		if sources, err = w.opts.Sources(ctx); err != nil {
			// Without the hub's sources an offer could be for a server it
			// has; the entries stay new to be offered on the next change.
			w.log.Warn("watching harness configs: listing the hub's sources", "err", err)
			w.forget(sc)
			return
		}
	}
	for _, p := range harness.Propose(sc, sources) {
		if p.Existing != "" {
			continue
		}
		if _, _, err := p.Request(); errors.Is(err, harness.ErrUnset) {
			// Add would fail: the entry refers to what the hub cannot
			// fill in here. `hub import` says the same, with the fix.
			w.log.Warn("an agent's config gained a server the hub cannot add as written", "server", p.Server.Name, "err", err)
			continue
		}
		o := p.Origins[0]
		select {
		case w.offers <- Offer{Harness: o.Harness, Title: w.titles[o.Harness], Path: o.Path, Server: p.Server, Proposal: p, At: pending[o.Path]}:
		case <-ctx.Done():
			return
		}
	}
}

// read reads the config file at path for every harness file there, records
// its entries, and adds those never seen in it before, enabled, not the hub
// itself and not declined to sc (nil: record only). What was seen is kept
// across reads (a union, not the last read): a half-written file that
// parses with fewer servers, or a server removed and put back, makes no
// second offer. A file that does not parse is skipped until it does.
func (w *Watcher) read(path string, sc *harness.Scan) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		// A file not there is known to hold nothing: what it holds when
		// it appears is new. One that went keeps its last read.
		for _, f := range w.files {
			if id := fileID(f); f.Path == path && w.seen[id] == nil {
				w.seen[id] = map[string]bool{}
			}
		}
		return
	}
	if err != nil {
		w.log.Warn("watching harness configs: reading", "path", path, "err", err)
		return
	}
	var doc map[string]any
	for _, f := range w.files {
		if f.Path != path {
			continue
		}
		if doc == nil {
			if doc, err = harness.Decode(f.Format, data); err != nil {
				// Likely half written: the next write brings it back.
				w.log.Debug("watching harness configs: not parsed yet", "path", path, "err", err)
				return
			}
		}
		servers, _, err := harness.Servers(f, doc)
		if err != nil {
			w.log.Debug("watching harness configs: no servers read", "path", path, "err", err)
			continue
		}
		id := fileID(f)
		seen, known := w.seen[id]
		if !known {
			seen = map[string]bool{}
			w.seen[id] = seen
		}
		var added []harness.Server
		for _, s := range servers {
			s = harness.ExpandServer(w.env, f, s)
			if s.Disabled || harness.IsHub(s) || s.Transport == "sse" {
				// A server turned on later is new then. The legacy
				// HTTP+SSE transport is not one the hub speaks: import
				// refuses it, so there is nothing to offer.
				continue
			}
			k := serverKey(s)
			if known && !seen[k] && !w.isDeclined(f.Harness, f.Path, s) {
				added = append(added, s)
			}
			seen[k] = true
		}
		if sc != nil && len(added) > 0 {
			sc.Found = append(sc.Found, harness.Found{File: f, Servers: added})
		}
	}
}

// forget drops sc's servers from what was seen, so they count as new again.
func (w *Watcher) forget(sc *harness.Scan) {
	for _, f := range sc.Found {
		for _, s := range f.Servers {
			delete(w.seen[fileID(f.File)], serverKey(s))
		}
	}
}

// relevant lists the config files an event on name may have changed.
func (w *Watcher) relevant(name string) []string {
	name = filepath.Clean(name)
	var out []string
	for _, p := range w.Paths() {
		if p == name || w.targets[name] == p {
			out = append(out, p)
		}
	}
	return out
}

// onPathTo reports whether name is a directory a config file lies under.
func (w *Watcher) onPathTo(name string) bool {
	name = filepath.Clean(name)
	for _, p := range w.Paths() {
		if strings.HasPrefix(p, name+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

// resync watches, for every config file, its directory or, while that does
// not exist, the nearest existing parent, and stops watching directories
// no longer needed. A config that is a symlink (into a dotfiles
// repository) is written through the link, in its target's directory: that
// directory is watched too. It returns the config files under directories
// it began to watch: they may have been written before the watch was in
// place.
func (w *Watcher) resync(fw *fsnotify.Watcher) []string {
	want := map[string]bool{}
	dirsOf := map[string][]string{} // config file → the directories its writes show in
	byReal := map[string]string{}   // a directory's real path → the one watched for it
	targets := map[string]string{}  // a config as events name it, when not by its path → the config
	watch := func(p, d string) string {
		r, err := filepath.EvalSymlinks(d)
		if err != nil {
			r = d
		}
		// One watch per directory: two names for one directory would
		// share the watch, and its events carry only one of them.
		if o, ok := byReal[r]; ok {
			d = o
		} else {
			byReal[r] = d
			want[d] = true
		}
		dirsOf[p] = append(dirsOf[p], d)
		return d
	}
	for _, p := range w.Paths() {
		d := nearestDir(filepath.Dir(p))
		if d == "" {
			continue
		}
		if wd := watch(p, d); wd != d && d == filepath.Dir(p) {
			targets[filepath.Join(wd, filepath.Base(p))] = p // its folder under another name
		}
		if fi, err := os.Lstat(p); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			continue
		}
		if t, err := filepath.EvalSymlinks(p); err == nil {
			td := watch(p, filepath.Dir(t))
			if name := filepath.Join(td, filepath.Base(t)); name != p {
				targets[name] = p
			}
		}
	}
	w.targets = targets
	var fresh []string
	for d := range want {
		if w.watched[d] {
			continue
		}
		if err := fw.Add(d); err != nil {
			w.log.Warn("watching harness configs", "dir", d, "err", err)
			continue
		}
		w.watched[d] = true
		for p, ds := range dirsOf {
			if slices.Contains(ds, d) && (filepath.Dir(p) == d || ds[0] != d) && !slices.Contains(fresh, p) {
				fresh = append(fresh, p)
			}
		}
	}
	for d := range w.watched {
		if !want[d] {
			_ = fw.Remove(d) // fails when the directory is gone, which removed the watch already
			delete(w.watched, d)
		}
	}
	sort.Strings(fresh)
	return fresh
}

// nearestDir is dir, or its nearest parent that exists ("" for none).
func nearestDir(dir string) string {
	for {
		if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			return ""
		}
		dir = up
	}
}

// fileID names a harness file: the same path holds several (Claude Code's
// user servers and a project's, in ~/.claude.json).
func fileID(f harness.File) string {
	return f.Harness + "\x00" + f.Path + "\x00" + strings.Join(f.ServersKey, "\x00")
}

// serverKey identifies a server: its command, arguments and environment,
// or its URL. Its name is not part of it.
func serverKey(s harness.Server) string {
	if s.Kind == harness.KindHTTP {
		return "http\x00" + strings.TrimRight(s.URL, "/")
	}
	env := make([]string, 0, len(s.Env))
	for k, v := range s.Env {
		env = append(env, k+"="+v)
	}
	sort.Strings(env)
	return "stdio\x00" + s.Command + "\x00" + strings.Join(s.Args, "\x00") + "\x00\x00" + strings.Join(env, "\x00")
}
