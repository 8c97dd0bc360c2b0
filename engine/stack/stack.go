package stack

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing/fstest"

	"github.com/capabilities-sh/capabilities/engine/catalog"
	"github.com/capabilities-sh/capabilities/engine/scrub"
	"github.com/capabilities-sh/capabilities/store"
)

// Dir is the stack directory: $CAPABILITIES_HOME/stack, a clone of the
// person's stack repository.
func Dir() (string, error) {
	home, err := store.Home()
	if err != nil {
		return "", err
	}
	return filepath.Join(home, "stack"), nil
}

// ErrNotLinked is a stack command run before `stack init`.
var ErrNotLinked = errors.New("no stack repository is linked on this machine: link one with `capabilities stack init <repo>` (a path, file://, ssh or https URL)")

// ErrRemoteMoved is a push the repository refused: it has commits this
// machine has not pulled.
var ErrRemoteMoved = errors.New("the stack repository has changes this machine has not pulled")

// Repo is a linked stack directory.
type Repo struct {
	Dir string
	git *Git
}

// Open opens the stack directory dir, or ErrNotLinked.
func Open(dir string) (*Repo, error) {
	if fi, err := os.Stat(filepath.Join(dir, ".git")); err != nil || !fi.IsDir() {
		return nil, ErrNotLinked
	}
	return &Repo{Dir: dir, git: &Git{Dir: dir}}, nil
}

// Git is the repository's git runner.
func (r *Repo) Git() *Git { return r.git }

// Remote is the URL of the stack repository (origin).
func (r *Repo) Remote(ctx context.Context) (string, error) {
	out, err := r.git.run(ctx, "config", "--get", "remote.origin.url")
	if err != nil {
		return "", fmt.Errorf("reading the stack's repository: %w", err)
	}
	return strings.TrimSpace(out), nil
}

// normalizeRepo makes a local path absolute (a clone's origin must not
// depend on where init ran); URLs are kept as given.
func normalizeRepo(repo string) string {
	if strings.Contains(repo, "://") || (strings.Contains(repo, ":") && !strings.HasPrefix(repo, "/") && !strings.HasPrefix(repo, ".")) {
		return repo // a URL, or scp-like ssh (git@host:path)
	}
	if abs, err := filepath.Abs(repo); err == nil {
		return abs
	}
	return repo
}

// Init links the stack repository repo: clones it into dir (an empty
// repository too: the first push makes its first commit). Linking the one
// already linked does nothing (already true); another one is refused,
// saying how to change it. Nothing is left behind when the clone fails.
func Init(ctx context.Context, dir, repo string) (already bool, err error) {
	if strings.HasPrefix(repo, "-") || strings.TrimSpace(repo) == "" {
		return false, fmt.Errorf("linking the stack: %q is not a git repository: give a path, file://, ssh or https URL", repo)
	}
	repo = normalizeRepo(repo)
	if r, err := Open(dir); err == nil {
		cur, err := r.Remote(ctx)
		if err != nil {
			return false, err
		}
		if cur == repo {
			return true, nil
		}
		return false, fmt.Errorf("linking the stack: this machine's stack is already linked to %s; to link %s instead, push what you want to keep (`capabilities stack push`), move %s away, and run `capabilities stack init %s` again", cur, repo, dir, repo)
	}
	// A folder holding only the lockfile is what `stack install` leaves
	// before a stack is linked: its entries are carried into the clone.
	var lock []byte
	if ents, err := os.ReadDir(dir); err == nil && len(ents) > 0 {
		if len(ents) != 1 || ents[0].Name() != catalog.LockFile || !ents[0].Type().IsRegular() {
			return false, fmt.Errorf("linking the stack: %s exists and is not a clone of a stack repository; move it away and run `capabilities stack init` again", dir)
		}
		if lock, err = os.ReadFile(filepath.Join(dir, catalog.LockFile)); err != nil {
			return false, fmt.Errorf("linking the stack: %w", err)
		}
	}
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return false, fmt.Errorf("linking the stack: %w", err)
	}
	tmp, err := os.MkdirTemp(parent, ".stack-init-")
	if err != nil {
		return false, fmt.Errorf("linking the stack: %w", err)
	}
	defer os.RemoveAll(tmp)
	g := &Git{Dir: tmp}
	if _, err := g.run(ctx, "-c", "core.hooksPath="+os.DevNull, "clone", "--quiet", "--no-recurse-submodules", "--", repo, "stack"); err != nil {
		return false, fmt.Errorf("linking the stack: cloning %s: %w", repo, err)
	}
	clone := &Git{Dir: filepath.Join(tmp, "stack")}
	// The clone's hooks never run: nothing of the repository runs here.
	if _, err := clone.run(ctx, "config", "core.hooksPath", os.DevNull); err != nil {
		return false, fmt.Errorf("linking the stack: %w", err)
	}
	if lock != nil {
		if err := carryLock(filepath.Join(clone.Dir, catalog.LockFile), lock); err != nil {
			return false, err
		}
		if err := os.Remove(filepath.Join(dir, catalog.LockFile)); err != nil {
			return false, fmt.Errorf("linking the stack: %w", err)
		}
	}
	_ = os.Remove(dir) // an empty folder
	if err := os.Rename(clone.Dir, dir); err != nil {
		return false, fmt.Errorf("linking the stack: %w", err)
	}
	return false, nil
}

// carryLock writes into path, the clone's lockfile, the entries of mine
// (the lockfile of installs made before the stack was linked) that it
// lacks; an entry both hold by the same slug keeps the repository's.
func carryLock(path string, mine []byte) error {
	ml, err := catalog.ParseLock(mine)
	if err != nil {
		return fmt.Errorf("linking the stack: this machine's %s: %w; move it away and run `capabilities stack init` again", catalog.LockFile, err)
	}
	theirs, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return catalog.WriteLock(path, ml)
	}
	if err != nil {
		return fmt.Errorf("linking the stack: %w", err)
	}
	tl, err := catalog.ParseLock(theirs)
	if err != nil {
		return fmt.Errorf("linking the stack: the repository's %s: %w", catalog.LockFile, err)
	}
	for _, c := range ml.Capabilities {
		if tl.Find(c.Slug) == nil {
			tl.Capabilities = append(tl.Capabilities, c)
		}
	}
	return catalog.WriteLock(path, tl)
}

// basePath is where the commit this machine last synced with is kept:
// inside .git, so it is never committed.
func (r *Repo) basePath() string { return filepath.Join(r.Dir, ".git", "capabilities-base") }

// Base is the commit this machine last synced with ("" when never).
func (r *Repo) Base() (string, error) {
	b, err := os.ReadFile(r.basePath())
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading the stack's last sync: %w", err)
	}
	c := strings.TrimSpace(string(b))
	if !hex40.MatchString(c) {
		return "", fmt.Errorf("reading the stack's last sync: %s does not hold a commit; remove it and run `capabilities stack pull`", r.basePath())
	}
	return c, nil
}

func (r *Repo) setBase(commit string) error {
	if err := store.WriteFileAtomic(r.basePath(), []byte(commit+"\n")); err != nil {
		return fmt.Errorf("recording the stack's last sync: %w", err)
	}
	return nil
}

// branch is the branch the work tree is on (main, master…).
func (r *Repo) branch(ctx context.Context) (string, error) {
	out, err := r.git.run(ctx, "symbolic-ref", "--short", "HEAD")
	if err != nil {
		return "", fmt.Errorf("reading the stack's branch: %w", err)
	}
	return strings.TrimSpace(out), nil
}

// remoteHead is the commit of the branch in the repository as last
// fetched ("" for an empty repository).
func (r *Repo) remoteHead(ctx context.Context) (string, error) {
	b, err := r.branch(ctx)
	if err != nil {
		return "", err
	}
	out, err := r.git.run(ctx, "rev-parse", "--verify", "--quiet", "refs/remotes/origin/"+b+"^{commit}")
	if err != nil {
		var ge *GitError
		if errors.As(err, &ge) {
			return "", nil
		}
		return "", err
	}
	return strings.TrimSpace(out), nil
}

// Fetch fetches the repository and returns the commit to pull ("" for an
// empty repository).
func (r *Repo) Fetch(ctx context.Context) (string, error) {
	if _, err := r.git.run(ctx, "fetch", "--quiet", "--prune", "origin"); err != nil {
		return "", fmt.Errorf("fetching the stack: %w; check the network and your access to the repository (`git -C %s fetch` says more)", err, r.Dir)
	}
	return r.remoteHead(ctx)
}

// Tree reads the stack's files at a commit.
func (r *Repo) Tree(ctx context.Context, commit string) (fstest.MapFS, error) {
	return r.git.Tree(ctx, commit)
}

// LeakError is a push refused because a file would hold a secret value.
type LeakError struct {
	Path  string
	Whose string
}

func (e *LeakError) Error() string {
	return fmt.Sprintf("refusing to push: %s would hold %s (in some encoding); nothing was committed. Keep credentials out of a source's command, arguments, env and headers: store them with `capabilities hub auth`", e.Path, e.Whose)
}

// PushResult is what a push did.
type PushResult struct {
	Commit  string   // the commit pushed
	Changed []string // the files it changed
	Nothing bool     // nothing changed since the last push: no commit
}

// Push writes the hub's state into the stack directory, commits it and
// pushes it. Before anything is written, every file is checked for every
// secret the hub holds (secrets: value → whose), in any encoding: one
// found is a LeakError and nothing is written. A push the repository
// refuses keeps the commit here (ErrRemoteMoved: pull first).
func (r *Repo) Push(ctx context.Context, st *State, secrets map[string]string, message string) (*PushResult, error) {
	base, err := r.Base()
	if err != nil {
		return nil, err
	}
	if head, err := r.remoteHead(ctx); err != nil {
		return nil, err
	} else if head != "" && head != base {
		return nil, fmt.Errorf("pushing the stack: %w (this machine last synced with %s, the repository is at %s): run `capabilities stack pull` first, then push", ErrRemoteMoved, orNever(base), short(head))
	}
	files, err := st.Render()
	if err != nil {
		return nil, err
	}
	values := make([]string, 0, len(secrets))
	for v := range secrets {
		values = append(values, v)
	}
	slices.Sort(values)
	sc := scrub.New(values...)
	check := func(p string, data []byte) error {
		if w := sc.Which(string(data)); len(w) > 0 {
			return &LeakError{Path: p, Whose: secrets[w[0]]}
		}
		// A value the scrubber cannot hold (too short) is checked as it is.
		for _, v := range values {
			if len(v) > 0 && bytes.Contains(data, []byte(v)) {
				return &LeakError{Path: p, Whose: secrets[v]}
			}
		}
		return nil
	}
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for _, p := range paths {
		if err := check(p, files[p]); err != nil {
			return nil, err
		}
	}
	// The files push does not write (capabilities.lock…) are committed as
	// they are: check them too.
	existing, err := r.workFiles()
	if err != nil {
		return nil, err
	}
	for _, p := range existing {
		if Owned(p) {
			continue
		}
		data, err := os.ReadFile(filepath.Join(r.Dir, filepath.FromSlash(p)))
		if err != nil {
			return nil, fmt.Errorf("pushing the stack: %w", err)
		}
		if err := check(p, data); err != nil {
			return nil, err
		}
	}
	if err := r.writeOwned(files, existing); err != nil {
		return nil, err
	}
	if _, err := r.git.run(ctx, "add", "--all", "."); err != nil {
		return nil, fmt.Errorf("pushing the stack: %w", err)
	}
	status, err := r.git.run(ctx, "status", "--porcelain")
	if err != nil {
		return nil, fmt.Errorf("pushing the stack: %w", err)
	}
	res := &PushResult{}
	for _, line := range strings.Split(strings.TrimRight(status, "\n"), "\n") {
		if len(line) > 3 {
			res.Changed = append(res.Changed, line[3:])
		}
	}
	remote, _ := r.remoteHead(ctx)
	if len(res.Changed) == 0 {
		head, err := r.git.run(ctx, "rev-parse", "--verify", "--quiet", "HEAD")
		head = strings.TrimSpace(head)
		if err == nil && head == remote {
			res.Nothing, res.Commit = true, head
			return res, r.setBase(head)
		}
	} else {
		r.git.ensureIdentity(ctx)
		if _, err := r.git.run(ctx, "commit", "--quiet", "--no-verify", "-m", message); err != nil {
			return nil, fmt.Errorf("pushing the stack: committing: %w", err)
		}
	}
	b, err := r.branch(ctx)
	if err != nil {
		return nil, err
	}
	head, err := r.git.run(ctx, "rev-parse", "HEAD")
	if err != nil {
		return nil, fmt.Errorf("pushing the stack: %w", err)
	}
	res.Commit = strings.TrimSpace(head)
	if _, err := r.git.run(ctx, "push", "--quiet", "--no-verify", "origin", "HEAD:refs/heads/"+b); err != nil {
		var ge *GitError
		if errors.As(err, &ge) && (strings.Contains(ge.Stderr, "rejected") || strings.Contains(ge.Stderr, "fetch first") || strings.Contains(ge.Stderr, "non-fast-forward")) {
			return nil, fmt.Errorf("pushing the stack: %w; the commit is kept in %s: run `capabilities stack pull`, then `capabilities stack push` again", ErrRemoteMoved, r.Dir)
		}
		return nil, fmt.Errorf("pushing the stack: %w; the commit is kept in %s and the hub is unchanged: run `capabilities stack push` again once the repository can be reached", err, r.Dir)
	}
	if _, err := r.git.run(ctx, "update-ref", "refs/remotes/origin/"+b, res.Commit); err != nil {
		return nil, fmt.Errorf("pushing the stack: %w", err)
	}
	return res, r.setBase(res.Commit)
}

func orNever(base string) string {
	if base == "" {
		return "nothing yet"
	}
	return short(base)
}

// workFiles lists the files of the work tree (slash paths, .git left out).
func (r *Repo) workFiles() ([]string, error) {
	var out []string
	err := filepath.WalkDir(r.Dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(r.Dir, p)
		if d.IsDir() {
			if rel == ".git" {
				return filepath.SkipDir
			}
			return nil
		}
		out = append(out, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the stack directory: %w", err)
	}
	return out, nil
}

// writeOwned makes the work tree's owned files exactly files: each one
// written atomically where it differs, the others removed.
func (r *Repo) writeOwned(files map[string][]byte, existing []string) error {
	for _, p := range existing {
		if _, keep := files[p]; Owned(p) && !keep {
			if err := os.Remove(filepath.Join(r.Dir, filepath.FromSlash(p))); err != nil {
				return fmt.Errorf("writing the stack: %w", err)
			}
		}
	}
	for p, data := range files {
		full := filepath.Join(r.Dir, filepath.FromSlash(p))
		if old, err := os.ReadFile(full); err == nil && bytes.Equal(old, data) {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o700); err != nil {
			return fmt.Errorf("writing the stack: %w", err)
		}
		if err := store.WriteFileAtomic(full, data); err != nil {
			return fmt.Errorf("writing the stack: %w", err)
		}
	}
	removeEmptyDirs(r.Dir)
	return nil
}

func removeEmptyDirs(root string) {
	for _, d := range []string{"sources", "profiles", "skills"} {
		var dirs []string
		_ = filepath.WalkDir(filepath.Join(root, d), func(p string, de fs.DirEntry, err error) error {
			if err == nil && de.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		for i := len(dirs) - 1; i >= 0; i-- {
			_ = os.Remove(dirs[i]) // fails, as it should, when not empty
		}
	}
}

// Synced moves the stack directory to theirs, the commit just pulled, and
// records it as the commit this machine last synced with. The files push
// writes become theirs; another file (capabilities.lock) becomes theirs
// where this machine did not change it since base, and is kept (named in
// kept) where it did.
func (r *Repo) Synced(ctx context.Context, base, theirs string) (kept []string, err error) {
	tf, err := r.Tree(ctx, theirs)
	if err != nil {
		return nil, err
	}
	bf := fstest.MapFS{}
	if base != "" {
		if bf, err = r.Tree(ctx, base); err != nil {
			return nil, err
		}
	}
	existing, err := r.workFiles()
	if err != nil {
		return nil, err
	}
	owned := map[string][]byte{}
	others := map[string]bool{}
	for p, f := range tf {
		if Owned(p) {
			owned[p] = f.Data
		} else {
			others[p] = true
		}
	}
	for p := range bf {
		if !Owned(p) {
			others[p] = true
		}
	}
	if err := r.writeOwned(owned, existing); err != nil {
		return nil, err
	}
	for p := range others {
		full := filepath.Join(r.Dir, filepath.FromSlash(p))
		local, lerr := os.ReadFile(full)
		var b, t []byte
		inB, inT := bf[p] != nil, tf[p] != nil
		if inB {
			b = bf[p].Data
		}
		if inT {
			t = tf[p].Data
		}
		localAbsent := errors.Is(lerr, fs.ErrNotExist)
		switch {
		case (localAbsent && !inT) || (!localAbsent && inT && bytes.Equal(local, t)):
			// already theirs
		case (localAbsent && !inB) || (!localAbsent && inB && bytes.Equal(local, b)):
			if !inT {
				if err := os.Remove(full); err != nil && !errors.Is(err, fs.ErrNotExist) {
					return nil, fmt.Errorf("updating the stack directory: %w", err)
				}
				continue
			}
			if err := os.MkdirAll(filepath.Dir(full), 0o700); err != nil {
				return nil, fmt.Errorf("updating the stack directory: %w", err)
			}
			if err := store.WriteFileAtomic(full, t); err != nil {
				return nil, fmt.Errorf("updating the stack directory: %w", err)
			}
		default:
			kept = append(kept, p)
		}
	}
	slices.Sort(kept)
	if _, err := r.git.run(ctx, "reset", "--quiet", "--mixed", theirs); err != nil {
		return nil, fmt.Errorf("updating the stack directory: %w", err)
	}
	return kept, r.setBase(theirs)
}
