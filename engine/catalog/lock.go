package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/gofrs/flock"

	"github.com/capabilities-sh/capabilities/store"
)

// LockFile is the lockfile's name in the stack directory.
const LockFile = "capabilities.lock"

// MaxLockBytes is the largest lockfile read.
const MaxLockBytes = 8 << 20

// Lock is capabilities.lock: every capability `stack install` installed,
// pinned, with what it wrote where. It holds secret names, never values.
type Lock struct {
	Version      int      `json:"version"`
	Capabilities []Locked `json:"capabilities"`
}

// Locked is one installed capability.
type Locked struct {
	Slug     string `json:"slug"`
	Shape    Shape  `json:"shape"`
	Registry string `json:"registry"` // the catalog it came from

	// npm: the package, the version run, and its integrity (npm's
	// dist.integrity) with where that came from ("npm" when npm gave it,
	// "catalog" when only the catalog did).
	Package       string   `json:"package,omitempty"`
	Version       string   `json:"version,omitempty"`
	Integrity     string   `json:"integrity,omitempty"`
	IntegrityFrom string   `json:"integrityFrom,omitempty"`
	Command       []string `json:"command,omitempty"`

	// remote: the URL.
	URL string `json:"url,omitempty"`

	// npm and remote: the digest of the tool list the hub read at install
	// (sha256 over each tool's name and contract, sorted).
	ToolsDigest string `json:"toolsDigest,omitempty"`

	// skill: the repository, the full commit, the folder, and the digest
	// of its files (sha256 over each file's path and sha256, sorted).
	Repo        string `json:"repo,omitempty"`
	Commit      string `json:"commit,omitempty"`
	Path        string `json:"path,omitempty"`
	FilesDigest string `json:"filesDigest,omitempty"`

	Secrets     []string  `json:"secrets,omitempty"` // names only
	InstalledAt time.Time `json:"installedAt"`
	// Wrote is every place install wrote, with what was there before.
	Wrote []Place `json:"wrote"`
}

// Place kinds.
const (
	// PlaceSource is a hub source (Name is its namespace), with its
	// manifest, review and connection.
	PlaceSource = "hub-source"
	// PlaceSkill is a skill in the hub's skills folder (Name, at Path,
	// relative to $CAPABILITIES_HOME), with the sha256 of each file
	// written (Files).
	PlaceSkill = "hub-skill"
)

// Place is one place install wrote. Before is what was there: "absent"
// (install refuses to write over anything).
type Place struct {
	Kind   string            `json:"kind"`
	Name   string            `json:"name"`
	Path   string            `json:"path,omitempty"`
	Before string            `json:"before"`
	Files  map[string]string `json:"files,omitempty"` // path → sha256 hex of what was written
}

// Absent is Place.Before for a place that did not exist.
const Absent = "absent"

// ParseLock decodes and checks a lockfile.
func ParseLock(data []byte) (*Lock, error) {
	if len(data) > MaxLockBytes {
		return nil, fmt.Errorf("%s is %d bytes; the most read is %d", LockFile, len(data), MaxLockBytes)
	}
	var l Lock
	if err := decodeStrict(data, &l); err != nil {
		return nil, fmt.Errorf("%s: %w", LockFile, err)
	}
	if l.Version != FormatVersion {
		return nil, fmt.Errorf("%s: \"version\" is %d; this capabilities reads version %d", LockFile, l.Version, FormatVersion)
	}
	seen := map[string]int{}
	for i := range l.Capabilities {
		c := &l.Capabilities[i]
		at := where(i, c.Slug)
		if !slugRE.MatchString(c.Slug) {
			return nil, fmt.Errorf("%s: %s: slug %q is not a slug", LockFile, at, c.Slug)
		}
		if j, dup := seen[c.Slug]; dup {
			return nil, fmt.Errorf("%s: %s: the slug is also capabilities[%d]'s", LockFile, at, j)
		}
		seen[c.Slug] = i
		switch c.Shape {
		case ShapeNPM, ShapeRemote, ShapeSkill:
		default:
			return nil, fmt.Errorf("%s: %s: shape %q is not %q, %q or %q", LockFile, at, c.Shape, ShapeNPM, ShapeRemote, ShapeSkill)
		}
		if len(c.Wrote) == 0 {
			return nil, fmt.Errorf("%s: %s: \"wrote\" is empty: the lock names where each capability was installed", LockFile, at)
		}
		for j, p := range c.Wrote {
			switch p.Kind {
			case PlaceSource, PlaceSkill:
			default:
				return nil, fmt.Errorf("%s: %s: wrote[%d]: kind %q is not %q or %q", LockFile, at, j, p.Kind, PlaceSource, PlaceSkill)
			}
			if p.Name == "" {
				return nil, fmt.Errorf("%s: %s: wrote[%d] has no name", LockFile, at, j)
			}
		}
	}
	return &l, nil
}

// ReadLock reads the lockfile at path; one that does not exist is empty.
func ReadLock(path string) (*Lock, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &Lock{Version: FormatVersion, Capabilities: []Locked{}}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	l, err := ParseLock(data)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w (fix it, or move it away to start a new one)", path, err)
	}
	return l, nil
}

// Marshal is the lockfile's bytes: entries by slug, indented, one
// trailing newline, so the same lock is always the same bytes (it lives in
// a git repository).
func (l *Lock) Marshal() ([]byte, error) {
	out := Lock{Version: FormatVersion, Capabilities: append([]Locked{}, l.Capabilities...)}
	sort.Slice(out.Capabilities, func(i, j int) bool { return out.Capabilities[i].Slug < out.Capabilities[j].Slug })
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// WriteLock writes l to path atomically (a temporary file renamed over
// it, mode 600), making its folder (mode 700) when needed.
func WriteLock(path string, l *Lock) error {
	b, err := l.Marshal()
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return store.WriteFileAtomic(path, b)
}

// Find is the entry whose slug is ref, else whose hub source or skill is
// named ref; nil when none.
func (l *Lock) Find(ref string) *Locked {
	for i := range l.Capabilities {
		if l.Capabilities[i].Slug == ref {
			return &l.Capabilities[i]
		}
	}
	for i := range l.Capabilities {
		for _, p := range l.Capabilities[i].Wrote {
			if p.Name == ref {
				return &l.Capabilities[i]
			}
		}
	}
	return nil
}

// Without is l without the entry of slug.
func (l *Lock) Without(slug string) *Lock {
	out := &Lock{Version: FormatVersion, Capabilities: []Locked{}}
	for _, c := range l.Capabilities {
		if c.Slug != slug {
			out.Capabilities = append(out.Capabilities, c)
		}
	}
	return out
}

// Guard holds the cross-process lock of the lockfile at mutex (a file
// outside the stack's git work tree) while fn reads and writes it: two
// installs at once each keep their entry.
func Guard(ctx context.Context, mutex string, fn func() error) error {
	if err := os.MkdirAll(filepath.Dir(mutex), 0o700); err != nil {
		return fmt.Errorf("locking %s: %w", mutex, err)
	}
	fl := flock.New(mutex, flock.SetPermissions(0o600))
	ok, err := fl.TryLockContext(ctx, 50*time.Millisecond)
	if err != nil {
		return fmt.Errorf("locking %s: %w", mutex, err)
	}
	if !ok {
		return fmt.Errorf("locking %s: %w", mutex, ctx.Err())
	}
	defer func() { _ = fl.Unlock() }()
	return fn()
}
