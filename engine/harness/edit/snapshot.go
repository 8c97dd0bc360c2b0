package edit

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/capabilities-sh/capabilities/store"
)

// Change is one config file to edit.
type Change struct {
	Harness string
	Path    string // the config file; a symlink is kept and its target edited
	// Edit computes the new bytes from the current ones (nil when the
	// file does not exist yet).
	Edit func(src []byte) ([]byte, error)
	// Created is how many keys the edit creates (Missing), kept in the
	// snapshot for disconnect to take out again.
	Created func(src []byte) int
	// Replaced lists the harness's own entries the edit turns off (connect
	// --replace), kept in the snapshot for disconnect to turn on again.
	Replaced func(src []byte) []Replaced
	// Left lists the entries the edit would turn on again but leaves as
	// they are (disconnect: one connect --replace moved out whose name the
	// file holds again, the person's), for the report.
	Left func(src []byte) []Replaced
	// Skill names the hub skill this file is part of (connect installs
	// each file of a skill as a change of its own); kept in the snapshot.
	Skill string
	// Delete removes the file instead of writing it (disconnect taking out
	// a skill's copy); Edit, when set, is still called to check the bytes
	// there and may refuse them.
	Delete bool
	// RemoveEmpty removes the file instead of writing it when the edit
	// leaves it empty (Empty: an empty object, or blanks): disconnect
	// taking the hub's entry out of a file connect created (CreatedByConnect).
	RemoveEmpty bool
	// Format is how the file is written, for the snapshot to find the
	// credentials it holds (Credentials); "" for none (a skill's file).
	Format Format
	// Command is the command of the hub's entry the edit writes (connect),
	// kept in the snapshot: the entry is the hub's whatever the binary is
	// named (Commands).
	Command string
}

// Replaced is an entry of the harness that connect --replace turned off.
type Replaced struct {
	Name string `json:"name"`
	// Flag is the key set to turn it off ("enabled", "disabled"); "" when
	// the entry was moved out of the file, and Entry is its text.
	Flag  string `json:"flag,omitempty"`
	Prior string `json:"prior,omitempty"` // the flag's JSON value before, "" when it had none
	Entry string `json:"entry,omitempty"`
	// Place is where the moved entry sat, so that disconnect puts it back
	// there (zero in snapshots made before it was kept: last).
	Place Place `json:"place,omitzero"`
	// Snapshot is the folder of the connect snapshot that keeps this
	// record (set by ReplacedAt; not saved).
	Snapshot string `json:"-"`
}

// Result is what happened, or would happen, to one file.
type Result struct {
	Harness string
	Path    string
	Before  []byte
	After   []byte
	Existed bool
	Changed bool  // After differs from Before
	Err     error // nothing was written to this file
	// Replaced: the harness's entries the edit turns off.
	Replaced []Replaced
	// Left: the entries the edit would turn on again but leaves (Change.Left).
	Left   []Replaced
	Skill  string // the change's Skill
	Delete bool   // the change removes the file
}

// Snapshot is the record of one set of edits: each file's bytes before,
// without the credentials they hold: each is kept in the hub's secret
// store (Vault) and the copy names it (a placeholder); rollback puts them
// back.
type Snapshot struct {
	Time       string `json:"time"`
	Kind       string `json:"kind"` // connect, disconnect
	RolledBack bool   `json:"rolledBack,omitempty"`
	// Sealed: its copies hold no credential in clear (every snapshot
	// since 2026-12-04; Prune seals an older one).
	Sealed bool       `json:"sealed,omitempty"`
	Files  []SnapFile `json:"files"`
	// Dirs are the folders the edits made (a file's missing parents),
	// removed again by rollback when they are empty.
	Dirs []string `json:"dirs,omitempty"`
	dir  string
}

// SnapFile is one file of a snapshot.
type SnapFile struct {
	Harness string `json:"harness"`
	Path    string `json:"path"`
	Target  string `json:"target"` // the file edited (Path, or its symlink's target)
	Existed bool   `json:"existed"`
	Mode    uint32 `json:"mode"`
	SHA256  string `json:"sha256"`            // of the bytes before
	Written string `json:"written,omitempty"` // sha256 of the bytes the edit wrote
	// Writing is the sha256 of the bytes the edit is about to write, saved
	// before it writes them: a file holding them is the edit's own write,
	// also when the process died before it could say so (Written).
	Writing string `json:"writing,omitempty"`
	Removed bool   `json:"removed,omitempty"` // the edit removed the file
	// Removing: the edit is about to remove the file (saved before, as
	// Writing is).
	Removing bool   `json:"removing,omitempty"`
	Skill    string `json:"skill,omitempty"` // the hub skill the file is part of
	Created  int    `json:"created,omitempty"`
	Orig     string `json:"orig,omitempty"` // the bytes before, a file of the snapshot
	// Secrets are the secret store's entries that keep the credentials
	// taken out of Orig and of Replaced (each is a placeholder there).
	Secrets []string `json:"secrets,omitempty"`
	// Command: Change.Command.
	Command string `json:"command,omitempty"`
	// Blank is the bytes before when they were only whitespace (an empty
	// file, which reads as an empty object): disconnect gives them back
	// when it leaves nothing else there, rather than "{}".
	Blank *string `json:"blank,omitempty"`
	// Replaced: the harness's entries the edit turned off, their
	// credentials taken out as Orig's are.
	Replaced []Replaced `json:"replaced,omitempty"`
}

// Dir is where the snapshot is kept.
func (s *Snapshot) Dir() string { return s.dir }

func sum(b []byte) string { h := sha256.Sum256(b); return hex.EncodeToString(h[:]) }

// ErrChanged is a file that changed between reading and writing it.
var ErrChanged = errors.New("changed while it was being edited")

// target resolves a symlinked config to the file it points to.
func target(path string) (string, error) {
	t, err := filepath.EvalSymlinks(path)
	if errors.Is(err, fs.ErrNotExist) {
		if l, lerr := os.Readlink(path); lerr == nil { // a dangling link: write its target
			if !filepath.IsAbs(l) {
				l = filepath.Join(filepath.Dir(path), l)
			}
			return l, nil
		}
		return path, nil
	}
	return t, err
}

// read reads a config: its bytes, mode, and whether it exists.
func read(path string) (data []byte, mode fs.FileMode, existed bool, err error) {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0o600, false, nil
	}
	if err != nil {
		return nil, 0, false, fmt.Errorf("reading %s: %w", path, err)
	}
	if fi.IsDir() {
		return nil, 0, false, fmt.Errorf("reading %s: it is a directory, not a config file", path)
	}
	data, err = os.ReadFile(path)
	if err != nil {
		return nil, 0, false, fmt.Errorf("reading %s: %w", path, err)
	}
	return data, fi.Mode().Perm(), true, nil
}

// Plan reads each file and computes its edit; it writes nothing.
func Plan(changes []Change) []Result {
	out := make([]Result, len(changes))
	for i, c := range changes {
		r := Result{Harness: c.Harness, Path: c.Path, Skill: c.Skill, Delete: c.Delete}
		var mode fs.FileMode
		t, err := target(c.Path)
		if err == nil {
			r.Before, mode, r.Existed, err = read(t)
		}
		if err == nil && c.Edit != nil {
			r.After, err = c.Edit(r.Before)
			if err != nil {
				err = fmt.Errorf("editing %s: %w", c.Path, err)
			}
		}
		if err == nil && c.RemoveEmpty && r.Existed && Empty(c.Format, r.After) {
			r.Delete = true
		}
		if r.Delete {
			r.After = nil
		}
		// A read-only file is refused only when it would change: one that
		// already is as the edit wants it (connected, or without the entry
		// disconnect takes out) is no error.
		if err == nil && r.Existed && mode&0o200 == 0 && (r.Delete || !bytes.Equal(r.Before, r.After)) {
			err = fmt.Errorf("writing %s: the file is read-only (mode %v); make it writable or leave this harness out with --client", c.Path, mode)
		}
		if err == nil && c.Replaced != nil {
			r.Replaced = c.Replaced(r.Before)
		}
		if err == nil && c.Left != nil {
			r.Left = c.Left(r.Before)
		}
		r.Err = err
		r.Changed = err == nil && !bytes.Equal(r.Before, r.After)
		if r.Delete {
			r.Changed = err == nil && r.Existed
		}
		out[i] = r
	}
	return out
}

// Snaps is where the snapshots are kept: their folder, and the secret
// store that keeps the credentials their copies leave out.
type Snaps struct {
	Root  string
	Vault Vault
	// Keep is how many snapshots Apply keeps (0: DefaultKeep); see Prune.
	Keep int
}

// DefaultKeep is how many snapshots are kept: the newest 20, and older
// ones a later disconnect still needs (Prune).
const DefaultKeep = 20

// Apply edits the files: first a snapshot of every file it will change
// goes to Root/<time>/ (mode 700, files 600), its credentials in the
// vault, then each file is written atomically, keeping its mode. A file
// that changed since it was read is read and edited again once; a second
// change is an error for that file. The snapshot is nil when nothing
// changed. Snapshots beyond the newest Keep are then pruned.
func (sn Snaps) Apply(ctx context.Context, kind string, changes []Change) (*Snapshot, []Result, error) {
	snapRoot := sn.Root
	results := Plan(changes)
	snap := &Snapshot{Time: time.Now().UTC().Format("20060102T150405.000000000Z"), Kind: kind, Sealed: true}
	snap.dir = filepath.Join(snapRoot, snap.Time)
	var todo []int
	for i, r := range results {
		if r.Changed {
			todo = append(todo, i)
		}
	}
	if len(todo) == 0 {
		return nil, results, nil
	}
	if err := os.MkdirAll(snap.dir, 0o700); err != nil {
		return nil, results, fmt.Errorf("making the snapshot: %w", err)
	}
	if err := os.Chmod(snapRoot, 0o700); err != nil {
		return nil, results, fmt.Errorf("making the snapshot: %w", err)
	}
	snap.Dirs = missingDirs(changes, results, todo)
	for n, i := range todo {
		f, err := sn.snapFile(ctx, snap, n, changes[i], &results[i])
		if err != nil {
			sn.forget(ctx, snap)
			_ = os.RemoveAll(snap.dir)
			return nil, results, err
		}
		snap.Files = append(snap.Files, f)
	}
	if err := snap.save(); err != nil {
		return nil, results, err
	}
	for n, i := range todo {
		r, f := &results[i], &snap.Files[n]
		if r.Delete {
			f.Removing = true
			err := snap.save()
			if err == nil {
				err = removeChecked(f.Target, r.Before)
			}
			if err != nil {
				f.Removing = false
				r.Err, r.Changed = err, false
			} else {
				f.Removed = true
			}
			continue
		}
		err := sn.write(snap, f, r)
		if errors.Is(err, ErrChanged) { // once more, from what is there now
			again := Plan([]Change{changes[i]})[0]
			if again.Err == nil && again.Changed {
				sn.forgetFile(ctx, *f)
				if nf, serr := sn.snapFile(ctx, snap, n, changes[i], &again); serr == nil {
					*f, *r = nf, again
					err = sn.write(snap, f, r)
				} else {
					err = serr
				}
			} else if again.Err != nil {
				err = again.Err
			}
			if errors.Is(err, ErrChanged) {
				err = fmt.Errorf("writing %s: it %w twice (is the harness running and rewriting it?); nothing was written to it, run the command again", r.Path, ErrChanged)
			}
		}
		if err != nil {
			f.Writing = ""
			r.Err, r.Changed = err, false
			continue
		}
		f.Written = sum(r.After)
	}
	if err := snap.save(); err != nil {
		return snap, results, err
	}
	// The files are written: a prune that fails (a snapshot that does not
	// read) leaves more snapshots for the next one to take, nothing else.
	_ = sn.Prune(ctx)
	return snap, results, nil
}

// write writes r.After to f's file, after saving in the snapshot that it
// is about to (Writing).
func (sn Snaps) write(snap *Snapshot, f *SnapFile, r *Result) error {
	f.Writing = sum(r.After)
	if err := snap.save(); err != nil {
		return err
	}
	return writeChecked(f.Target, r.Before, r.After, fs.FileMode(f.Mode))
}

// snapFile copies file n of the snapshot, its credentials (and those of
// the entries the edit moves out, in r.Replaced) in the vault.
func (sn Snaps) snapFile(ctx context.Context, snap *Snapshot, n int, c Change, r *Result) (SnapFile, error) {
	t, err := target(c.Path)
	if err != nil {
		return SnapFile{}, err
	}
	_, mode, _, err := read(t)
	if err != nil {
		return SnapFile{}, err
	}
	f := SnapFile{Harness: c.Harness, Path: c.Path, Target: t, Existed: r.Existed, Mode: uint32(mode), SHA256: sum(r.Before), Skill: c.Skill, Command: c.Command}
	if c.Created != nil {
		f.Created = c.Created(r.Before)
	}
	if r.Existed && len(bytes.TrimSpace(r.Before)) == 0 {
		b := string(r.Before)
		f.Blank = &b
	}
	if !r.Existed {
		return f, nil
	}
	creds, ok := Credentials(c.Format, r.Before)
	s := &sealer{vault: sn.Vault, base: "snapshot/" + strings.ToLower(snap.Time) + "/" + strconv.Itoa(n)}
	var copied []byte
	if ok {
		copied, err = s.seal(ctx, c.Format, r.Before, creds)
	} else if sn.Vault != nil {
		copied, err = s.sealWhole(ctx, r.Before) // unreadable: nothing can be told apart
	} else {
		copied = r.Before
	}
	if err != nil {
		sn.forgetFile(ctx, SnapFile{Secrets: s.refs})
		return SnapFile{}, fmt.Errorf("%s: %w", c.Path, err)
	}
	for _, rep := range r.Replaced {
		if rep.Entry, err = s.sealText(ctx, rep.Entry); err == nil {
			rep.Place.Lead, err = s.sealText(ctx, rep.Place.Lead)
		}
		if err != nil {
			sn.forgetFile(ctx, SnapFile{Secrets: s.refs})
			return SnapFile{}, fmt.Errorf("%s: %w", c.Path, err)
		}
		f.Replaced = append(f.Replaced, rep)
	}
	f.Secrets = s.refs
	f.Orig = strconv.Itoa(n) + ".orig"
	if err := store.WriteFileAtomic(filepath.Join(snap.dir, f.Orig), copied); err != nil {
		sn.forgetFile(ctx, f)
		return SnapFile{}, fmt.Errorf("making the snapshot: %w", err)
	}
	return f, nil
}

// sealOld takes the credentials out of the copies of a snapshot made
// before snapshots were sealed, as Apply does: the record first (its
// entries moved out, the store's references), then each copy, so that a
// process dying between the two leaves a snapshot rollback still reads.
// A config's format is told by its name (.toml, else JSON with comments).
func (sn Snaps) sealOld(ctx context.Context, snap *Snapshot) error {
	if snap.Sealed || sn.Vault == nil {
		return nil
	}
	copies := map[string][]byte{}
	for n := range snap.Files {
		f := &snap.Files[n]
		if f.Orig == "" || f.Skill != "" || len(f.Secrets) > 0 {
			continue
		}
		b, err := os.ReadFile(filepath.Join(snap.dir, f.Orig))
		if err != nil || sum(b) != f.SHA256 {
			continue // not the copy it records: left as it is
		}
		format := JSONC
		if strings.EqualFold(filepath.Ext(f.Path), ".toml") {
			format = TOML
		}
		creds, ok := Credentials(format, b)
		if !ok || len(creds) == 0 {
			continue
		}
		s := &sealer{vault: sn.Vault, base: "snapshot/" + strings.ToLower(snap.Time) + "/" + strconv.Itoa(n)}
		sealed, err := s.seal(ctx, format, b, creds)
		for i := range f.Replaced {
			r := &f.Replaced[i]
			if err == nil {
				r.Entry, err = s.sealText(ctx, r.Entry)
			}
			if err == nil {
				r.Place.Lead, err = s.sealText(ctx, r.Place.Lead)
			}
		}
		if err != nil {
			return fmt.Errorf("sealing the snapshot %s: %w", snap.Time, err)
		}
		f.Secrets = s.refs
		copies[f.Orig] = sealed
	}
	snap.Sealed = true
	if err := snap.save(); err != nil {
		return err
	}
	for name, b := range copies {
		if err := store.WriteFileAtomic(filepath.Join(snap.dir, name), b); err != nil {
			return fmt.Errorf("sealing the snapshot %s: %w", snap.Time, err)
		}
	}
	return nil
}

// forget deletes the vault's entries of every file of snap.
func (sn Snaps) forget(ctx context.Context, snap *Snapshot) {
	for _, f := range snap.Files {
		sn.forgetFile(ctx, f)
	}
}

// forgetFile deletes the vault's entries of f.
func (sn Snaps) forgetFile(ctx context.Context, f SnapFile) {
	if sn.Vault == nil {
		return
	}
	for _, ref := range f.Secrets {
		_ = sn.Vault.Delete(ctx, ref) // one already gone is no matter
	}
}

func (s *Snapshot) save() error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	if err := store.WriteFileAtomic(filepath.Join(s.dir, "snapshot.json"), append(b, '\n')); err != nil {
		return fmt.Errorf("saving the snapshot: %w", err)
	}
	return nil
}

// writeChecked writes data to path atomically with mode: a temporary file
// in the same directory, synced, renamed over path. Just before the rename
// path is read again; when it no longer holds before, nothing is written
// and the error is ErrChanged.
func writeChecked(path string, before, data []byte, mode fs.FileMode) (err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".capabilities-*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	if err = tmp.Chmod(mode); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if _, err = tmp.Write(data); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err = tmp.Sync(); err != nil {
		return fmt.Errorf("syncing %s: %w", path, err)
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	now, _, existed, err := read(path)
	if err != nil {
		return err
	}
	if (before == nil) == existed || !bytes.Equal(now, before) {
		err = ErrChanged
		return err
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if d, derr := os.Open(dir); derr == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}

// missingDirs are the folders that writing the changes todo will make: the
// missing parents of each file that does not exist yet, deepest first.
func missingDirs(changes []Change, results []Result, todo []int) []string {
	var out []string
	seen := map[string]bool{}
	for _, i := range todo {
		if results[i].Existed || results[i].Delete {
			continue
		}
		t, err := target(changes[i].Path)
		if err != nil {
			continue
		}
		for d := filepath.Dir(t); !seen[d]; d = filepath.Dir(d) {
			if _, err := os.Lstat(d); err == nil || d == filepath.Dir(d) {
				break
			}
			seen[d] = true
			out = append(out, d)
		}
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

// removeChecked removes path when it still holds before (ErrChanged when
// it does not).
func removeChecked(path string, before []byte) error {
	now, _, existed, err := read(path)
	if err != nil {
		return err
	}
	if !existed || !bytes.Equal(now, before) {
		return fmt.Errorf("removing %s: it %w", path, ErrChanged)
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("removing %s: %w", path, err)
	}
	if d, derr := os.Open(filepath.Dir(path)); derr == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}

// RemoveEmptyDirs removes each folder of dirs that is empty, deepest first
// (folders an edit made, once the files in them are gone).
func RemoveEmptyDirs(dirs []string) {
	dirs = append([]string(nil), dirs...)
	sort.Slice(dirs, func(i, j int) bool { return len(dirs[i]) > len(dirs[j]) })
	for _, d := range dirs {
		_ = os.Remove(d) // fails, and keeps it, when something is in it
	}
}

// Snapshots lists the snapshots under snapRoot, newest first.
func Snapshots(snapRoot string) ([]*Snapshot, error) {
	ents, err := os.ReadDir(snapRoot)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the snapshots: %w", err)
	}
	var out []*Snapshot
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(snapRoot, e.Name(), "snapshot.json"))
		if err != nil {
			continue // not a snapshot, or one cut short before its record
		}
		s := &Snapshot{dir: filepath.Join(snapRoot, e.Name())}
		if err := json.Unmarshal(b, s); err != nil {
			return nil, fmt.Errorf("reading the snapshot %s: %w", e.Name(), err)
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Time > out[j].Time })
	return out, nil
}

// Restored is what rollback did to one file.
type Restored struct {
	Path string
	Err  error // not restored
}

// ErrChangedSinceWrite is a file that changed after the edit wrote it.
var ErrChangedSinceWrite = errors.New("changed since it was written")

// Rollback restores every file of the last snapshot not yet rolled back,
// byte for byte (a file the edit created is removed), its credentials read
// back from the vault. A file that changed since the edit wrote it is
// refused (ErrChangedSinceWrite) unless force; a file holding what the edit
// was writing when its process died is its own write. The snapshot is
// marked rolled back when every file was restored.
func (sn Snaps) Rollback(ctx context.Context, force bool) (*Snapshot, []Restored, error) {
	all, err := Snapshots(sn.Root)
	if err != nil {
		return nil, nil, err
	}
	var s *Snapshot
	for _, c := range all {
		if !c.RolledBack {
			s = c
			break
		}
	}
	if s == nil {
		return nil, nil, errors.New("rolling back: there is no snapshot to restore (connect and disconnect make one)")
	}
	var out []Restored
	ok := true
	for _, f := range s.Files {
		err := sn.restore(ctx, s.dir, f, force)
		if err != nil {
			ok = false
		}
		out = append(out, Restored{Path: f.Path, Err: err})
	}
	if ok {
		RemoveEmptyDirs(s.Dirs)
		s.RolledBack = true
		if err := s.save(); err != nil {
			return s, out, err
		}
	}
	return s, out, nil
}

func (sn Snaps) restore(ctx context.Context, dir string, f SnapFile, force bool) error {
	now, _, existed, err := read(f.Target)
	if err != nil {
		return err
	}
	if existed && sum(now) == f.SHA256 && f.Existed {
		return nil // already as it was
	}
	changed := !existed || (sum(now) != f.Written && sum(now) != f.Writing)
	if f.Removed || f.Removing {
		changed = existed
	}
	if !force && changed && !existed && !f.Removed {
		what := "puts it back as it was before"
		if !f.Existed {
			what = "leaves it gone, as it was before"
		}
		return fmt.Errorf("%s was removed after it was written (%w; rollback --force %s)", f.Path, ErrChangedSinceWrite, what)
	}
	if !force && changed {
		hint := "rollback --force restores it anyway, losing those changes"
		if f.Harness != "" {
			hint += "; `capabilities hub disconnect --client " + f.Harness + "` takes out only the hub's entry and keeps them"
		}
		return fmt.Errorf("%s %w (%s)", f.Path, ErrChangedSinceWrite, hint)
	}
	if !f.Existed {
		if err := os.Remove(f.Target); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("removing %s: %w", f.Path, err)
		}
		return nil
	}
	copied, err := os.ReadFile(filepath.Join(dir, f.Orig))
	if err != nil {
		return fmt.Errorf("reading the snapshot of %s: %w", f.Path, err)
	}
	o, err := unseal(ctx, sn.Vault, string(copied), f.Secrets)
	if err != nil {
		return fmt.Errorf("restoring %s: %w", f.Path, err)
	}
	orig := []byte(o)
	if sum(orig) != f.SHA256 {
		return fmt.Errorf("restoring %s: the snapshot's copy does not match its hash", f.Path)
	}
	if err := writeChecked(f.Target, nilIfAbsent(now, existed), orig, fs.FileMode(f.Mode)); err != nil {
		return fmt.Errorf("restoring %s: %w", f.Path, err)
	}
	return nil
}

func nilIfAbsent(b []byte, existed bool) []byte {
	if !existed {
		return nil
	}
	if b == nil {
		return []byte{}
	}
	return b
}

// LastConnect is the newest connect snapshot's record of path, if any.
func LastConnect(snapRoot, path string) (SnapFile, bool) {
	all, err := Snapshots(snapRoot)
	if err != nil {
		return SnapFile{}, false
	}
	for _, s := range all {
		if s.Kind != "connect" {
			continue
		}
		for _, f := range s.Files {
			if f.Path == path {
				return f, true
			}
		}
	}
	return SnapFile{}, false
}

// CreatedByConnect reports whether the file at path did not exist before
// connect first wrote it: the records of path (snapshots rolled back left
// out), newest first, lead back to a connect that created it, with no
// removal of the file between (after one, a file there again is another).
// dirs are the folders that connect made for it (its missing parents). A
// file that was there before the oldest record kept (the person's own, or
// one whose first connect a prune took) is not: it is kept.
func CreatedByConnect(snapRoot, path string) (created bool, dirs []string) {
	all, err := Snapshots(snapRoot)
	if err != nil {
		return false, nil
	}
	for _, s := range all {
		if s.RolledBack {
			continue
		}
		for _, f := range s.Files {
			if f.Path != path || f.Skill != "" {
				continue
			}
			if f.Removed || f.Removing {
				return false, nil
			}
			if f.Existed {
				continue
			}
			if s.Kind != "connect" || f.Written == "" {
				return false, nil
			}
			for _, d := range s.Dirs {
				if rel, err := filepath.Rel(d, f.Target); err == nil && !strings.HasPrefix(rel, "..") {
					dirs = append(dirs, d)
				}
			}
			return true, dirs
		}
	}
	return false, nil
}

// Empty reports whether b is what an empty config of format holds: an
// object with nothing in it (JSON; blanks around and inside, a byte order
// mark), or only blanks (TOML, or an empty file).
func Empty(format Format, b []byte) bool {
	rest := bytes.Map(func(r rune) rune {
		if r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\uFEFF' {
			return -1
		}
		return r
	}, b)
	switch format {
	case JSON, JSONC:
		return len(rest) == 0 || string(rest) == "{}"
	case TOML:
		return len(rest) == 0
	}
	return false
}

// SkillFiles lists the skill files connect wrote for harness that no
// rollback took back and no later connect or disconnect removed (the
// newest record of each path decides), and the folders those connects
// made. Connect never writes a
// skill file it did not make, so each is the hub's. Disconnect removes
// the files that still hold what connect wrote; connect updates them.
func SkillFiles(snapRoot, harness string) (files []SnapFile, dirs []string) {
	all, err := Snapshots(snapRoot)
	if err != nil {
		return nil, nil
	}
	seen := map[string]bool{}
	for _, s := range all {
		if s.RolledBack {
			continue
		}
		mine := false
		for _, f := range s.Files {
			if f.Skill == "" || f.Harness != harness || seen[f.Path] {
				continue
			}
			// The newest record of the file decides: a connect wrote it,
			// or a connect or a disconnect removed it.
			seen[f.Path] = true
			if s.Kind == "connect" && f.Written != "" && !f.Removed {
				files = append(files, f)
				mine = true
			}
		}
		if mine {
			dirs = append(dirs, s.Dirs...)
		}
	}
	return files, dirs
}

// Holds reports whether b is what the edit wrote to the file.
func (f SnapFile) Holds(b []byte) bool { return f.Written != "" && sum(b) == f.Written }

// ReplacedAt lists what connect --replace turned off in path and nothing
// has turned on again: the records of the connect snapshots of path since
// its last disconnect (rolled-back snapshots left out), newest first, each
// with the folder of its snapshot and its credentials read back from the
// vault.
func (sn Snaps) ReplacedAt(ctx context.Context, path string) ([]Replaced, error) {
	all, err := Snapshots(sn.Root)
	if err != nil {
		return nil, err
	}
	var out []Replaced
	seen := map[string]bool{}
	for _, s := range all {
		if s.RolledBack {
			continue
		}
		for _, f := range s.Files {
			if f.Path != path {
				continue
			}
			if s.Kind != "connect" {
				return out, nil
			}
			for _, r := range f.Replaced {
				if seen[r.Name] {
					continue
				}
				seen[r.Name] = true
				r.Snapshot = s.dir
				if r.Entry, err = unseal(ctx, sn.Vault, r.Entry, f.Secrets); err == nil {
					r.Place.Lead, err = unseal(ctx, sn.Vault, r.Place.Lead, f.Secrets)
				}
				if err != nil {
					return nil, fmt.Errorf("reading what connect --replace moved out of %s: %w", path, err)
				}
				out = append(out, r)
			}
		}
	}
	return out, nil
}

// Commands lists the commands of the hub's entries that connect wrote
// (Change.Command) in the snapshots not rolled back.
func Commands(snapRoot string) []string {
	all, err := Snapshots(snapRoot)
	if err != nil {
		return nil
	}
	var out []string
	for _, s := range all {
		for _, f := range s.Files {
			if s.Kind == "connect" && !s.RolledBack && f.Command != "" && !slices.Contains(out, f.Command) {
				out = append(out, f.Command)
			}
		}
	}
	return out
}

// Prune removes the snapshots beyond the newest Keep, with their entries
// in the vault, but never one a disconnect still needs: for each file, the
// connect snapshots since its last disconnect that moved entries out
// (connect --replace), and its newest connect record (the keys connect
// created, the skill files it wrote). The newest snapshot not rolled back, which a rollback
// restores, is among the newest. A folder left without its record by a
// process that died while it made it goes too once older than those kept.
func (sn Snaps) Prune(ctx context.Context) error {
	keep := sn.Keep
	if keep <= 0 {
		keep = DefaultKeep
	}
	all, err := Snapshots(sn.Root)
	if err != nil {
		return err
	}
	for _, s := range all {
		if err := sn.sealOld(ctx, s); err != nil {
			return err
		}
	}
	if len(all) <= keep {
		return nil
	}
	needed := map[*Snapshot]bool{}
	closed := map[string]bool{} // a disconnect of the path was seen (newest first)
	connected := map[string]bool{}
	for _, s := range all {
		for _, f := range s.Files {
			switch {
			case s.Kind == "disconnect" && !s.RolledBack:
				closed[f.Path] = true
			case s.Kind == "connect" && !s.RolledBack && !closed[f.Path] && len(f.Replaced) > 0:
				needed[s] = true
			}
			if s.Kind == "connect" && !connected[f.Path] {
				connected[f.Path] = true
				needed[s] = true
			}
		}
	}
	oldest := all[keep-1].Time
	for _, s := range all[keep:] {
		if needed[s] {
			continue
		}
		sn.forget(ctx, s)
		if err := os.RemoveAll(s.dir); err != nil {
			return fmt.Errorf("pruning the snapshots: %w", err)
		}
	}
	ents, err := os.ReadDir(sn.Root)
	if err != nil {
		return fmt.Errorf("pruning the snapshots: %w", err)
	}
	for _, e := range ents {
		dir := filepath.Join(sn.Root, e.Name())
		if _, err := os.Stat(filepath.Join(dir, "snapshot.json")); errors.Is(err, fs.ErrNotExist) && e.IsDir() && e.Name() < oldest {
			if err := os.RemoveAll(dir); err != nil {
				return fmt.Errorf("pruning the snapshots: %w", err)
			}
		}
	}
	return nil
}
