package stack

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/catalog"
	"github.com/capabilities-sh/capabilities/engine/policy"
	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/google/go-cmp/cmp"
)

// needGit skips without git, and fails under CI=true saying what to install.
func needGit(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("git is not installed: install git (apt-get install git) to run the stack tests")
		}
		t.Skip("git is not installed")
	}
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(2*time.Minute))
	t.Cleanup(cancel)
	return ctx
}

func bare(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "stack.git")
	if out, err := exec.Command("git", "init", "--quiet", "--bare", dir).CombinedOutput(); err != nil {
		t.Fatalf("git init --bare: %v\n%s", err, out)
	}
	return dir
}

func linked(t *testing.T, ctx context.Context, remote string) *Repo {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "stack")
	if _, err := Init(ctx, dir, remote); err != nil {
		t.Fatal(err)
	}
	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestPushAndSync(t *testing.T) {
	needGit(t)
	t.Setenv("HOME", t.TempDir()) // no identity: the fixed one is used
	var hooked bool
	GitEnv = func() []string { hooked = true; return []string{"CAPABILITIES_TEST_HOOK=1"} }
	t.Cleanup(func() { GitEnv = nil })
	ctx := ctxFor(t)
	remote := bare(t)
	a := linked(t, ctx, remote)
	if !hooked {
		t.Error("GitEnv was not asked for the environment")
	}
	st := state(src("github", "gh-mcp", Connection{Name: "default", Secret: "GITHUB_TOKEN", Env: "GITHUB_TOKEN"}), rule("github", policy.Deny))
	secrets := map[string]string{"ghp_0123456789abcdefghij0123": "the credential of github/default"}

	res, err := a.Push(ctx, st, secrets, "push from a")
	if err != nil {
		t.Fatal(err)
	}
	if res.Nothing || len(res.Changed) != 2 {
		t.Fatalf("first push: %+v", res)
	}
	if res, err := a.Push(ctx, st, secrets, "push from a"); err != nil || !res.Nothing {
		t.Fatalf("second push with nothing changed: %+v, %v", res, err)
	}
	log, err := exec.Command("git", "-C", remote, "log", "--all", "--format=%an %s").Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(log)); got != "capabilities push from a" {
		t.Errorf("the repository's log: %q, want one commit by the fixed identity", got)
	}

	// B, linked later, reads the same state at the repository's commit.
	b := linked(t, ctx, remote)
	theirs, err := b.Fetch(ctx)
	if err != nil || theirs != res.Commit {
		t.Fatalf("Fetch: %q, %v; want %s", theirs, err, res.Commit)
	}
	tree, err := b.Tree(ctx, theirs)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Read(tree)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(st, got); diff != "" {
		t.Fatalf("pulled state (-pushed +pulled):\n%s", diff)
	}
	// B has not synced yet: its push would drop A's work, so it is refused.
	if _, err := b.Push(ctx, NewState(), nil, "push from b"); !errors.Is(err, ErrRemoteMoved) {
		t.Fatalf("push before the first pull: %v, want ErrRemoteMoved", err)
	}
	// B's own capabilities.lock, changed here, is kept when it syncs.
	if err := os.WriteFile(filepath.Join(b.Dir, "capabilities.lock"), []byte("b's lock\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Synced(ctx, "", theirs); err != nil {
		t.Fatal(err)
	}
	if base, _ := b.Base(); base != theirs {
		t.Fatalf("base after sync: %q, want %s", base, theirs)
	}
	if data, _ := os.ReadFile(filepath.Join(b.Dir, "capabilities.lock")); string(data) != "b's lock\n" {
		t.Errorf("capabilities.lock after sync: %q", data)
	}

	// A pushes again; B's push is now refused by the repository itself
	// (its base is the old commit), and B's stack directory is intact.
	st2 := state(src("github", "gh-mcp-v2"), rule("github", policy.Deny))
	if _, err := a.Push(ctx, st2, secrets, "push 2 from a"); err != nil {
		t.Fatal(err)
	}
	stB := state(src("memory", "mem"))
	_, err = b.Push(ctx, stB, nil, "push from b")
	if !errors.Is(err, ErrRemoteMoved) {
		t.Fatalf("push over a moved repository: %v, want ErrRemoteMoved", err)
	}
	if !strings.Contains(err.Error(), "run `capabilities stack pull`") {
		t.Errorf("the error does not say what to do: %v", err)
	}
}

func TestPushRefusesASecret(t *testing.T) {
	needGit(t)
	t.Setenv("HOME", t.TempDir())
	ctx := ctxFor(t)
	remote := bare(t)
	a := linked(t, ctx, remote)
	const value = "s3cr3t/T0k+n=\"q\"&x%y"
	for name, where := range map[string]SourceFile{
		"in args":         {Source: Source{Namespace: "x", Kind: "stdio", Command: "srv", Args: []string{"--token", value}}},
		"in env, quoted":  {Source: Source{Namespace: "x", Kind: "stdio", Command: "srv", Env: map[string]string{"SETTING": value}}},
		"in a header":     {Source: Source{Namespace: "x", Kind: "http", URL: "https://h/mcp", Headers: map[string]string{"X-Cfg": value}}},
		"url-encoded too": {Source: Source{Namespace: "x", Kind: "http", URL: "https://h/mcp?k=s3cr3t%2FT0k%2Bn%3D%22q%22%26x%25y"}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := a.Push(ctx, state(where), map[string]string{value: "the credential of x/default"}, "leak")
			var leak *LeakError
			if !errors.As(err, &leak) || leak.Path != "sources/x.json" {
				t.Fatalf("push: %v, want a LeakError naming sources/x.json", err)
			}
			if strings.Contains(err.Error(), value) {
				t.Error("the error shows the secret")
			}
			if _, err := os.Stat(filepath.Join(a.Dir, "sources")); !errors.Is(err, os.ErrNotExist) {
				t.Error("a file was written before the check")
			}
		})
	}
	if out, _ := exec.Command("git", "-C", remote, "log", "--all", "--oneline").Output(); len(out) != 0 {
		t.Errorf("something was pushed: %s", out)
	}
}

func TestPushOffline(t *testing.T) {
	needGit(t)
	t.Setenv("HOME", t.TempDir())
	ctx := ctxFor(t)
	remote := bare(t)
	a := linked(t, ctx, remote)
	gone := remote + ".away"
	if err := os.Rename(remote, gone); err != nil {
		t.Fatal(err)
	}
	st := state(src("memory", "mem"))
	_, err := a.Push(ctx, st, nil, "offline")
	if err == nil || !strings.Contains(err.Error(), "run `capabilities stack push` again once the repository can be reached") {
		t.Fatalf("offline push: %v", err)
	}
	if err := os.Rename(gone, remote); err != nil {
		t.Fatal(err)
	}
	res, err := a.Push(ctx, st, nil, "offline")
	if err != nil || res.Nothing {
		t.Fatalf("push once back: %+v, %v (the kept commit must go)", res, err)
	}
}

func TestInit(t *testing.T) {
	needGit(t)
	t.Setenv("HOME", t.TempDir())
	ctx := ctxFor(t)
	remote := bare(t)
	dir := filepath.Join(t.TempDir(), "stack")
	if already, err := Init(ctx, dir, remote); err != nil || already {
		t.Fatalf("Init: %v, %v", already, err)
	}
	if already, err := Init(ctx, dir, remote); err != nil || !already {
		t.Fatalf("Init again: %v, %v", already, err)
	}
	other := bare(t)
	_, err := Init(ctx, dir, "file://"+other)
	if err == nil || !strings.Contains(err.Error(), "already linked to "+remote) || !strings.Contains(err.Error(), "move "+dir+" away") {
		t.Fatalf("Init of another: %v", err)
	}
	missing := filepath.Join(t.TempDir(), "nope", "stack")
	if _, err := Init(ctx, missing, filepath.Join(t.TempDir(), "none.git")); err == nil {
		t.Fatal("Init of a repository that does not exist succeeded")
	}
	if ents, _ := os.ReadDir(filepath.Dir(missing)); len(ents) != 0 {
		t.Errorf("a failed Init left %v behind", ents)
	}
	if _, err := Open(missing); !errors.Is(err, ErrNotLinked) {
		t.Errorf("Open of nothing: %v", err)
	}
}

// TestSyncIntoEmptyClone: a machine that linked the repository while it
// was empty syncs with what another pushed since.
func TestSyncIntoEmptyClone(t *testing.T) {
	needGit(t)
	t.Setenv("HOME", t.TempDir())
	ctx := ctxFor(t)
	remote := bare(t)
	a, b := linked(t, ctx, remote), linked(t, ctx, remote)
	if theirs, err := b.Fetch(ctx); err != nil || theirs != "" {
		t.Fatalf("Fetch of an empty repository: %q, %v", theirs, err)
	}
	res, err := a.Push(ctx, state(src("memory", "mem")), nil, "from a")
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := b.Fetch(ctx)
	if err != nil || theirs != res.Commit {
		t.Fatalf("Fetch: %q, %v; want %s", theirs, err, res.Commit)
	}
	if _, err := b.Synced(ctx, "", theirs); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(b.Dir, "sources", "memory.json")); err != nil {
		t.Errorf("the synced work tree: %v", err)
	}
	res2, err := b.Push(ctx, state(src("memory", "mem"), src("other", "o")), nil, "from b")
	if err != nil || res2.Nothing {
		t.Fatalf("push after sync: %+v, %v", res2, err)
	}
	out, err := exec.Command("git", "-C", remote, "log", "--format=%s", res2.Commit).Output()
	if err != nil || strings.TrimSpace(string(out)) != "from b\nfrom a" {
		t.Errorf("history: %q, %v", out, err)
	}
}

// TestInitCarriesTheLock: `stack install` before `stack init` leaves a
// lone capabilities.lock in the stack's folder; linking carries its entries
// into the clone, beside those the repository's lockfile holds.
func TestInitCarriesTheLock(t *testing.T) {
	needGit(t)
	t.Setenv("HOME", t.TempDir())
	ctx := ctxFor(t)
	lockOf := func(slugs ...string) *catalog.Lock {
		l := &catalog.Lock{Version: catalog.FormatVersion}
		for _, s := range slugs {
			l.Capabilities = append(l.Capabilities, catalog.Locked{Slug: s, Shape: catalog.ShapeRemote, Registry: "testdata/catalog", URL: "https://" + s + ".example/mcp",
				InstalledAt: time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC), Wrote: []catalog.Place{{Kind: catalog.PlaceSource, Name: s, Before: catalog.Absent}}})
		}
		return l
	}
	slugs := func(t *testing.T, path string) []string {
		t.Helper()
		l, err := catalog.ReadLock(path)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, c := range l.Capabilities {
			out = append(out, c.Slug+" "+c.URL)
		}
		return out
	}
	installed := func(t *testing.T, slugs ...string) string {
		t.Helper()
		dir := filepath.Join(t.TempDir(), "stack")
		if err := catalog.WriteLock(filepath.Join(dir, catalog.LockFile), lockOf(slugs...)); err != nil {
			t.Fatal(err)
		}
		return dir
	}

	// An empty repository: the lock is carried as it is.
	dir := installed(t, "memory")
	if _, err := Init(ctx, dir, bare(t)); err != nil {
		t.Fatalf("Init over a lone lockfile: %v", err)
	}
	if diff := cmp.Diff([]string{"memory https://memory.example/mcp"}, slugs(t, filepath.Join(dir, catalog.LockFile))); diff != "" {
		t.Errorf("the carried lock (-want +got):\n%s", diff)
	}

	// A repository with a lock of its own: merged by slug, the
	// repository's entry kept where both have one.
	remote := bare(t)
	a := linked(t, ctx, remote)
	theirs := lockOf("github", "memory")
	theirs.Capabilities[1].URL = "https://theirs.example/mcp"
	if err := catalog.WriteLock(filepath.Join(a.Dir, catalog.LockFile), theirs); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Push(ctx, NewState(), nil, "a lock"); err != nil {
		t.Fatal(err)
	}
	dir = installed(t, "memory", "pdf-forms")
	if _, err := Init(ctx, dir, remote); err != nil {
		t.Fatalf("Init over a lone lockfile: %v", err)
	}
	want := []string{"github https://github.example/mcp", "memory https://theirs.example/mcp", "pdf-forms https://pdf-forms.example/mcp"}
	if diff := cmp.Diff(want, slugs(t, filepath.Join(dir, catalog.LockFile))); diff != "" {
		t.Errorf("the merged lock (-want +got):\n%s", diff)
	}

	// Anything else in the folder is still refused.
	dir = installed(t, "memory")
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Init(ctx, dir, bare(t)); err == nil || !strings.Contains(err.Error(), "is not a clone of a stack repository") {
		t.Errorf("Init over a folder with more than the lock: %v", err)
	}
}
