package stack

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"strings"
	"testing/fstest"
)

// GitEnv, when set, gives extra environment entries for every git command
// (NAME=value): a credential helper for the stack repository's host.
var GitEnv func() []string

// Git runs the git binary in one work tree.
type Git struct {
	Dir string
	// identity is set once a command found the person has no user.email.
	identity []string
	checked  bool
}

// GitError is a git command that failed: its arguments and what it said.
type GitError struct {
	Args   []string
	Stderr string
	Err    error
}

func (e *GitError) Error() string {
	msg := strings.TrimSpace(e.Stderr)
	if msg == "" {
		msg = e.Err.Error()
	}
	return fmt.Sprintf("git %s: %s", strings.Join(e.Args, " "), msg)
}

func (e *GitError) Unwrap() error { return e.Err }

// ErrNoGit is returned when the git binary is not on PATH.
var ErrNoGit = errors.New("git is not installed (or not on PATH): install it (https://git-scm.com/downloads) and try again")

// env is the environment of every git command: the person's own (their
// credential helpers, ssh agent and proxy), without the variables that
// would point git at another repository, never the system config, never
// a prompt on the terminal (a command waiting for a password nobody sees
// would hang), plus GitEnv's entries and, when the person has no identity,
// a fixed one.
func (g *Git) env() []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_CONFIG", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT", "GIT_NAMESPACE", "GIT_CEILING_DIRECTORIES", "GIT_PREFIX":
			continue
		}
		out = append(out, kv)
	}
	out = append(out, "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0", "GIT_ASKPASS=", "SSH_ASKPASS=", "LC_ALL=C")
	if os.Getenv("GIT_SSH_COMMAND") == "" {
		out = append(out, "GIT_SSH_COMMAND=ssh -o BatchMode=yes")
	}
	if GitEnv != nil {
		out = append(out, GitEnv()...)
	}
	return append(out, g.identity...)
}

// run runs git with args in g.Dir and returns its standard output.
func (g *Git) run(ctx context.Context, args ...string) (string, error) {
	return g.runIn(ctx, nil, args...)
}

func (g *Git) runIn(ctx context.Context, stdin io.Reader, args ...string) (string, error) {
	b, err := g.output(ctx, stdin, args...)
	return string(b), err
}

func (g *Git) output(ctx context.Context, stdin io.Reader, args ...string) ([]byte, error) {
	if _, err := exec.LookPath("git"); err != nil {
		return nil, ErrNoGit
	}
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = g.Dir
	cmd.Env = g.env()
	cmd.Stdin = stdin
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("git %s: %w", strings.Join(args, " "), context.Cause(ctx))
		}
		return nil, &GitError{Args: args, Stderr: stderr.String(), Err: err}
	}
	return stdout.Bytes(), nil
}

// ensureIdentity gives commits a fixed author when the person has no
// user.name or user.email (a fresh machine, a CI runner): git would
// refuse to commit.
func (g *Git) ensureIdentity(ctx context.Context) {
	if g.checked {
		return
	}
	g.checked = true
	name, _ := g.run(ctx, "config", "user.name")
	email, _ := g.run(ctx, "config", "user.email")
	if strings.TrimSpace(name) != "" && strings.TrimSpace(email) != "" {
		return
	}
	if os.Getenv("GIT_AUTHOR_EMAIL") != "" && os.Getenv("GIT_COMMITTER_EMAIL") != "" {
		return
	}
	g.identity = []string{
		"GIT_AUTHOR_NAME=capabilities", "GIT_AUTHOR_EMAIL=capabilities@localhost",
		"GIT_COMMITTER_NAME=capabilities", "GIT_COMMITTER_EMAIL=capabilities@localhost",
	}
}

// Tree reads every file of a commit (git archive), by slash path. A
// symbolic link or a submodule in it is an error naming it: the stack
// holds plain files.
func (g *Git) Tree(ctx context.Context, commit string) (fstest.MapFS, error) {
	b, err := g.output(ctx, nil, "archive", "--format=tar", commit)
	if err != nil {
		return nil, fmt.Errorf("reading the stack at %s: %w", short(commit), err)
	}
	fsys := fstest.MapFS{}
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading the stack at %s: %w", short(commit), err)
		}
		name := strings.TrimSuffix(path.Clean(hdr.Name), "/")
		if !fs.ValidPath(name) {
			return nil, fmt.Errorf("reading the stack at %s: the path %q is not one a stack holds", short(commit), hdr.Name)
		}
		switch hdr.Typeflag {
		case tar.TypeDir, tar.TypeXGlobalHeader:
			continue
		case tar.TypeReg:
		default:
			return nil, fmt.Errorf("reading the stack at %s: %s is not a plain file (a symbolic link or submodule); the stack holds plain files only", short(commit), name)
		}
		if hdr.Size > maxFile {
			return nil, fmt.Errorf("reading the stack at %s: %s is larger than %d MB", short(commit), name, maxFile>>20)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return nil, fmt.Errorf("reading the stack at %s: %s: %w", short(commit), name, err)
		}
		fsys[name] = &fstest.MapFile{Data: data, Mode: 0o600}
	}
	return fsys, nil
}

func short(commit string) string {
	if len(commit) > 12 {
		return commit[:12]
	}
	return commit
}
