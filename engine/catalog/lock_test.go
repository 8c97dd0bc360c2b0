package catalog

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func sampleLock() *Lock {
	at := time.Date(2026, 12, 5, 3, 0, 0, 0, time.UTC)
	return &Lock{Version: FormatVersion, Capabilities: []Locked{
		{Slug: "pdf-forms", Shape: ShapeSkill, Registry: "testdata/catalog", Repo: "https://example.org/s.git",
			Commit: "56d0c3a381be26d150c3a7144d401d3bbd521481", Path: "pdf-forms", FilesDigest: "sha256:00", InstalledAt: at,
			Wrote: []Place{{Kind: PlaceSkill, Name: "pdf-forms", Path: "/h/hub/skills/pdf-forms", Before: Absent, Files: map[string]string{"SKILL.md": "ab"}}}},
		{Slug: "memory", Shape: ShapeNPM, Registry: "testdata/catalog", Package: "@modelcontextprotocol/server-memory",
			Version: "2026.8.31", Integrity: "sha512-AA==", IntegrityFrom: "catalog", Command: []string{"npx", "-y", "@modelcontextprotocol/server-memory@2026.8.31"},
			ToolsDigest: "sha256:11", InstalledAt: at, Secrets: []string{"TOKEN"},
			Wrote: []Place{{Kind: PlaceSource, Name: "memory", Before: Absent}}},
	}}
}

func TestLockRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "stack", LockFile)
	l, err := ReadLock(path)
	if err != nil {
		t.Fatalf("reading a lock that does not exist: %v", err)
	}
	if len(l.Capabilities) != 0 {
		t.Fatalf("a missing lock should be empty: %+v", l)
	}
	in := sampleLock()
	if err := WriteLock(path, in); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("lock mode %v, want 600", fi.Mode().Perm())
	}
	if di, _ := os.Stat(filepath.Dir(path)); di.Mode().Perm() != 0o700 {
		t.Errorf("stack folder mode %v, want 700", di.Mode().Perm())
	}
	out, err := ReadLock(path)
	if err != nil {
		t.Fatal(err)
	}
	// Written by slug.
	want := sampleLock()
	want.Capabilities[0], want.Capabilities[1] = want.Capabilities[1], want.Capabilities[0]
	if d := cmp.Diff(want, out); d != "" {
		t.Fatalf("round trip (-want +got):\n%s", d)
	}
	// The same lock is the same bytes.
	b1, _ := in.Marshal()
	b2, _ := out.Marshal()
	if string(b1) != string(b2) {
		t.Errorf("the same lock marshals differently:\n%s\n%s", b1, b2)
	}
	if got := out.Find("memory"); got == nil || got.Slug != "memory" {
		t.Errorf("Find(slug) = %v", got)
	}
	if got := out.Find("pdf-forms"); got == nil || got.Shape != ShapeSkill {
		t.Errorf("Find(skill) = %v", got)
	}
	if got := out.Find("nope"); got != nil {
		t.Errorf("Find(nope) = %v", got)
	}
	if w := out.Without("memory"); len(w.Capabilities) != 1 || w.Capabilities[0].Slug != "pdf-forms" || len(out.Capabilities) != 2 {
		t.Errorf("Without = %+v (of %d)", w, len(out.Capabilities))
	}
	// No temporary file is left beside it.
	ents, _ := os.ReadDir(filepath.Dir(path))
	if len(ents) != 1 {
		t.Errorf("the stack folder holds %d entries, want the lock alone", len(ents))
	}
}

func TestLockFindByPlace(t *testing.T) {
	l := &Lock{Version: 1, Capabilities: []Locked{{Slug: "everything-remote", Shape: ShapeRemote, Wrote: []Place{{Kind: PlaceSource, Name: "everything", Before: Absent}}}}}
	if got := l.Find("everything"); got == nil || got.Slug != "everything-remote" {
		t.Fatalf("Find(namespace) = %v", got)
	}
}

func TestParseLockInvalid(t *testing.T) {
	for _, tc := range []struct{ name, doc, want string }{
		{"syntax", `{"version":1,`, "capabilities.lock: ends in the middle of a JSON value"},
		{"version", `{"version":3,"capabilities":[]}`, `capabilities.lock: "version" is 3`},
		{"unknown", `{"version":1,"capabilities":[],"x":1}`, `unknown field "x"`},
		{"bad slug", `{"version":1,"capabilities":[{"slug":"../x","shape":"npm","wrote":[{"kind":"hub-source","name":"x","before":"absent"}]}]}`, `slug "../x" is not a slug`},
		{"bad shape", `{"version":1,"capabilities":[{"slug":"x","shape":"box","wrote":[{"kind":"hub-source","name":"x","before":"absent"}]}]}`, `shape "box" is not`},
		{"no places", `{"version":1,"capabilities":[{"slug":"x","shape":"npm","wrote":[]}]}`, `"wrote" is empty`},
		{"bad place", `{"version":1,"capabilities":[{"slug":"x","shape":"npm","wrote":[{"kind":"file","name":"x","before":"absent"}]}]}`, `wrote[0]: kind "file" is not`},
		{"unnamed place", `{"version":1,"capabilities":[{"slug":"x","shape":"npm","wrote":[{"kind":"hub-source","name":"","before":"absent"}]}]}`, `wrote[0] has no name`},
		{"duplicate", `{"version":1,"capabilities":[{"slug":"x","shape":"npm","wrote":[{"kind":"hub-source","name":"x","before":"absent"}]},{"slug":"x","shape":"npm","wrote":[{"kind":"hub-source","name":"x","before":"absent"}]}]}`, `the slug is also capabilities[0]'s`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseLock([]byte(tc.doc))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("ParseLock error\n got: %v\nwant: …%s…", err, tc.want)
			}
		})
	}
}

func TestReadLockDamaged(t *testing.T) {
	path := filepath.Join(t.TempDir(), LockFile)
	if err := os.WriteFile(path, []byte("not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := ReadLock(path)
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "move it away to start a new one") {
		t.Fatalf("ReadLock of a damaged file: %v", err)
	}
}

// TestGuardSerializes: installs at once each keep their entry.
func TestGuardSerializes(t *testing.T) {
	dir := t.TempDir()
	path, mutex := filepath.Join(dir, "stack", LockFile), filepath.Join(dir, "locks", "lockfile.lock")
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- Guard(context.Background(), mutex, func() error {
				l, err := ReadLock(path)
				if err != nil {
					return err
				}
				slug := string(rune('a' + i))
				l.Capabilities = append(l.Capabilities, Locked{Slug: slug, Shape: ShapeNPM, Wrote: []Place{{Kind: PlaceSource, Name: slug, Before: Absent}}})
				return WriteLock(path, l)
			})
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	l, err := ReadLock(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Capabilities) != 8 {
		t.Fatalf("%d entries kept, want 8", len(l.Capabilities))
	}
}

// FuzzParseLock: ParseLock never panics, and what it accepts marshals to
// a lock that parses to the same thing.
func FuzzParseLock(f *testing.F) {
	b, err := sampleLock().Marshal()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte(`{"version":1,"capabilities":[]}`))
	f.Add([]byte(`{"version":1,"capabilities":[{"slug":"x","shape":"remote","url":"http://h/mcp","installedAt":"2026-01-01T00:00:00Z","wrote":[{"kind":"hub-source","name":"x","before":"absent"}]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := ParseLock(data)
		if err != nil {
			return
		}
		out, err := l.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		again, err := ParseLock(out)
		if err != nil {
			t.Fatalf("a marshaled lock does not parse: %v\n%s", err, out)
		}
		out2, err := again.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if string(out) != string(out2) {
			t.Fatalf("marshal is not stable:\n%s\n%s", out, out2)
		}
	})
}
