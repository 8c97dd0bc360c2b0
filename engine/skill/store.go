package skill

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"
)

// Origin is where a stored skill came from.
type Origin struct {
	// Path is the folder it was copied from (a local skill).
	Path string `json:"path,omitempty"`
	// Git is the repository URL, Commit the full commit it is pinned to,
	// Subdir the folder inside the repository ("" for the top).
	Git    string    `json:"git,omitempty"`
	Commit string    `json:"commit,omitempty"`
	Subdir string    `json:"subdir,omitempty"`
	Added  time.Time `json:"added"`
}

// Stored is a skill in the hub and where it came from.
type Stored struct {
	*Skill
	Origin Origin
}

// Store is the hub's skills: <dir>/<name>/ holds each skill's files as
// they were added, <dir>/.origins/<name>.json where each came from.
type Store struct{ Dir string }

// ErrExists is a skill whose name the hub already has.
var ErrExists = errors.New("the hub already has a skill of that name")

// ErrNotFound is a skill the hub does not have.
var ErrNotFound = errors.New("the hub has no skill of that name")

func (st Store) origin(name string) string {
	return filepath.Join(st.Dir, ".origins", name+".json")
}

// Add copies the skill's files into the store. Nothing is left behind when
// it fails: the files go to a hidden folder first, renamed into place last.
func (st Store) Add(s *Skill, o Origin) (err error) {
	if err := CheckName(s.Name); err != nil {
		return fmt.Errorf("adding the skill: %w", err)
	}
	dst := filepath.Join(st.Dir, s.Name)
	if _, err := os.Lstat(dst); err == nil {
		return fmt.Errorf("adding the skill %s: %w (remove it first with `capabilities hub skills remove %s`)", s.Name, ErrExists, s.Name)
	}
	if err := os.MkdirAll(filepath.Join(st.Dir, ".origins"), 0o700); err != nil {
		return fmt.Errorf("adding the skill %s: %w", s.Name, err)
	}
	tmp, err := os.MkdirTemp(st.Dir, ".add-")
	if err != nil {
		return fmt.Errorf("adding the skill %s: %w", s.Name, err)
	}
	defer func() {
		if err != nil {
			_ = os.RemoveAll(tmp)
		}
	}()
	for _, f := range s.Files {
		if err := copyFile(filepath.Join(s.Dir, filepath.FromSlash(f)), filepath.Join(tmp, filepath.FromSlash(f))); err != nil {
			return fmt.Errorf("adding the skill %s: copying %s: %w", s.Name, f, err)
		}
	}
	// What was copied is what was checked: read the copy again.
	c, err := Read(tmp)
	if err != nil {
		return fmt.Errorf("adding the skill %s: %w", s.Name, err)
	}
	if c.Name != s.Name || len(c.Files) != len(s.Files) {
		return fmt.Errorf("adding the skill %s: its folder changed while it was copied; add it again", s.Name)
	}
	if o.Added.IsZero() {
		o.Added = time.Now().UTC()
	}
	b, err := json.MarshalIndent(o, "", "  ")
	if err != nil {
		return fmt.Errorf("adding the skill %s: %w", s.Name, err)
	}
	if err := os.WriteFile(st.origin(s.Name), append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("adding the skill %s: %w", s.Name, err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		_ = os.Remove(st.origin(s.Name))
		return fmt.Errorf("adding the skill %s: %w", s.Name, err)
	}
	return nil
}

// copyFile copies a regular file, mode 600 in folders of mode 700 like
// everything in the hub's folder (an executable bit is not kept: the hub
// runs nothing in a skill).
func copyFile(src, dst string) error {
	fi, err := os.Lstat(src)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", src)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return err
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}

// Get reads one stored skill.
func (st Store) Get(name string) (*Stored, error) {
	if CheckName(name) != nil {
		return nil, fmt.Errorf("reading the skill %q: %w", name, ErrNotFound)
	}
	dir := filepath.Join(st.Dir, name)
	if _, err := os.Stat(filepath.Join(dir, "SKILL.md")); errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("reading the skill %q: %w", name, ErrNotFound)
	}
	s, err := Read(dir)
	if err != nil {
		return nil, err
	}
	out := &Stored{Skill: s}
	if b, err := os.ReadFile(st.origin(name)); err == nil {
		_ = json.Unmarshal(b, &out.Origin)
	}
	return out, nil
}

// List reads every stored skill, by name. A folder that cannot be read as
// a skill is an error naming it.
func (st Store) List() ([]*Stored, error) {
	ents, err := os.ReadDir(st.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing the skills: %w", err)
	}
	var out []*Stored
	for _, e := range ents {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		s, err := st.Get(e.Name())
		if err != nil {
			return nil, fmt.Errorf("listing the skills: %w", err)
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Remove takes a skill out of the store.
func (st Store) Remove(name string) error {
	if _, err := st.Get(name); err != nil {
		return fmt.Errorf("removing the skill: %w", err)
	}
	gone := filepath.Join(st.Dir, ".rm-"+name+"-"+randHex())
	if err := os.Rename(filepath.Join(st.Dir, name), gone); err != nil {
		return fmt.Errorf("removing the skill %s: %w", name, err)
	}
	_ = os.Remove(st.origin(name))
	if err := os.RemoveAll(gone); err != nil {
		return fmt.Errorf("removing the skill %s: %w", name, err)
	}
	return nil
}

func randHex() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// gitRef is URL@commit, with an optional //subdir after the commit.
var gitRef = regexp.MustCompile(`^(.+)@([0-9a-fA-F]{7,64})(//(.+))?$`)

// GitEnv, when set, gives extra environment entries for the git commands
// FromGit runs (the CLI sets a credential helper for `capabilities login`).
var GitEnv func() []string

// ParseGit splits "URL@commit[//subdir]". ok is false when s is not of
// that form.
func ParseGit(s string) (url, commit, subdir string, ok bool) {
	m := gitRef.FindStringSubmatch(s)
	if m == nil {
		return "", "", "", false
	}
	return m[1], strings.ToLower(m[2]), m[4], true
}

// FromGit clones url into a folder under tmpRoot, checks out commit and
// returns the skill folder (subdir inside it) and the full commit. The
// caller removes the clone (the returned cleanup). Nothing of the
// repository runs: no hooks, no submodules.
func FromGit(ctx context.Context, tmpRoot, url, commit, subdir string) (dir, full string, cleanup func(), err error) {
	if _, err := exec.LookPath("git"); err != nil {
		return "", "", nil, fmt.Errorf("fetching the skill from %s: git is not installed (install git, or add the skill from a folder)", url)
	}
	if subdir != "" {
		clean := filepath.Clean(filepath.FromSlash(subdir))
		if filepath.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, ".."+string(filepath.Separator)) {
			return "", "", nil, fmt.Errorf("fetching the skill from %s: the folder %q is outside the repository", url, subdir)
		}
		subdir = clean
	}
	if err := os.MkdirAll(tmpRoot, 0o700); err != nil {
		return "", "", nil, fmt.Errorf("fetching the skill from %s: %w", url, err)
	}
	tmp, err := os.MkdirTemp(tmpRoot, ".git-")
	if err != nil {
		return "", "", nil, fmt.Errorf("fetching the skill from %s: %w", url, err)
	}
	cleanup = func() { _ = os.RemoveAll(tmp) }
	run := func(args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, "git", append([]string{"-c", "core.hooksPath=" + os.DevNull, "-c", "advice.detachedHead=false"}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0")
		if GitEnv != nil {
			cmd.Env = append(cmd.Env, GitEnv()...)
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("git %s: %w: %s", args[0], err, strings.TrimSpace(string(out)))
		}
		return strings.TrimSpace(string(out)), nil
	}
	repo := filepath.Join(tmp, "repo")
	if _, err := run("clone", "--quiet", "--no-checkout", "--", url, repo); err != nil {
		cleanup()
		return "", "", nil, fmt.Errorf("fetching the skill from %s: %w", url, err)
	}
	full, err = run("-C", repo, "rev-parse", "--verify", "--end-of-options", commit+"^{commit}")
	if err != nil {
		cleanup()
		return "", "", nil, fmt.Errorf("fetching the skill from %s: the repository has no commit %s", url, commit)
	}
	if _, err := run("-C", repo, "checkout", "--quiet", full); err != nil {
		cleanup()
		return "", "", nil, fmt.Errorf("fetching the skill from %s: %w", url, err)
	}
	dir = repo
	if subdir != "" {
		dir = filepath.Join(repo, subdir)
		real, err := filepath.EvalSymlinks(dir)
		rrepo, rerr := filepath.EvalSymlinks(repo)
		if err != nil || rerr != nil || !strings.HasPrefix(real, rrepo+string(filepath.Separator)) {
			cleanup()
			return "", "", nil, fmt.Errorf("fetching the skill from %s: the folder %q is not a folder of the repository at %s", url, subdir, full)
		}
	}
	return dir, full, cleanup, nil
}
