package skill

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const pdfDoc = "---\nname: pdf-forms\ndescription: Fill PDF forms. Use when the user hands you a PDF with fields.\n---\n# PDF forms\n\nRead reference.md first.\n"

func write(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestParse: the front matter must hold a name fit to be a folder name in
// every harness and a description; anything else is refused with what is
// wrong.
func TestParse(t *testing.T) {
	tests := []struct {
		name, doc, wantName, wantDesc, wantBody, wantErr string
	}{
		{name: "ok", doc: pdfDoc, wantName: "pdf-forms", wantDesc: "Fill PDF forms. Use when the user hands you a PDF with fields.", wantBody: "# PDF forms\n\nRead reference.md first.\n"},
		{name: "crlf", doc: "---\r\nname: a\r\ndescription: b\r\n---\r\nbody\r\n", wantName: "a", wantDesc: "b", wantBody: "body\n"},
		{name: "no front matter", doc: "# hello\n", wantErr: "does not start with YAML front matter"},
		{name: "unclosed", doc: "---\nname: a\ndescription: b\n", wantErr: "no closing ---"},
		{name: "bad yaml", doc: "---\nname: [a\n---\n", wantErr: "front matter: yaml"},
		{name: "no name", doc: "---\ndescription: b\n---\n", wantErr: "has no name"},
		{name: "no description", doc: "---\nname: a\n---\n", wantErr: "has no description"},
		{name: "traversal", doc: "---\nname: ../../.bashrc\ndescription: b\n---\n", wantErr: `skill name "../../.bashrc"`},
		{name: "slash", doc: "---\nname: a/b\ndescription: b\n---\n", wantErr: "lowercase letters"},
		{name: "upper", doc: "---\nname: PDF\ndescription: b\n---\n", wantErr: "lowercase letters"},
		{name: "long description", doc: "---\nname: a\ndescription: " + strings.Repeat("x", 1025) + "\n---\n", wantErr: "limit is 1024"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, d, b, err := Parse([]byte(tt.doc))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]string{tt.wantName, tt.wantDesc, tt.wantBody}, []string{n, d, b}); diff != "" {
				t.Error(diff)
			}
		})
	}
}

// TestStoreRoundTrip: a skill folder is copied byte for byte (files in
// subfolders too, .git left out), listed, described with its files, and
// removed; a second skill of the same name is refused and changes nothing.
func TestStoreRoundTrip(t *testing.T) {
	src := t.TempDir()
	write(t, src, map[string]string{"SKILL.md": pdfDoc, "reference.md": "fields\n", "scripts/fill.py": "print(1)\n", ".git/HEAD": "x"})
	s, err := Read(src)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"SKILL.md", "reference.md", "scripts/fill.py"}, s.Files); diff != "" {
		t.Fatal(diff)
	}
	st := Store{Dir: filepath.Join(t.TempDir(), "skills")}
	if err := st.Add(s, Origin{Path: src}); err != nil {
		t.Fatal(err)
	}
	for _, f := range s.Files {
		a, _ := os.ReadFile(filepath.Join(src, f))
		b, _ := os.ReadFile(filepath.Join(st.Dir, "pdf-forms", f))
		if string(a) != string(b) {
			t.Errorf("%s: copy differs", f)
		}
	}
	before := listTree(t, st.Dir)
	if err := st.Add(s, Origin{Path: src}); !errors.Is(err, ErrExists) {
		t.Fatalf("second add: %v, want ErrExists", err)
	}
	if diff := cmp.Diff(before, listTree(t, st.Dir)); diff != "" {
		t.Errorf("a refused add changed the store: %s", diff)
	}
	all, err := st.List()
	if err != nil || len(all) != 1 || all[0].Name != "pdf-forms" || all[0].Origin.Path != src {
		t.Fatalf("list: %v %+v", err, all)
	}
	d := all[0].Describe()
	for _, want := range []string{"name: pdf-forms", "Read reference.md first.", "//   reference.md", "//   scripts/fill.py"} {
		if !strings.Contains(d, want) {
			t.Errorf("describe lacks %q:\n%s", want, d)
		}
	}
	if err := st.Remove("pdf-forms"); err != nil {
		t.Fatal(err)
	}
	if all, _ := st.List(); len(all) != 0 {
		t.Errorf("after remove: %v", all)
	}
	if err := st.Remove("pdf-forms"); !errors.Is(err, ErrNotFound) {
		t.Errorf("removing again: %v, want ErrNotFound", err)
	}
	if err := st.Remove("../skills"); !errors.Is(err, ErrNotFound) {
		t.Errorf("removing a path: %v, want ErrNotFound", err)
	}
}

// TestReadRefuses: a folder without SKILL.md, or with a symbolic link
// (which a copy would follow out of the folder), is not a skill.
func TestReadRefuses(t *testing.T) {
	empty := t.TempDir()
	if _, err := Read(empty); err == nil || !strings.Contains(err.Error(), "no SKILL.md") {
		t.Errorf("no SKILL.md: %v", err)
	}
	linked := t.TempDir()
	write(t, linked, map[string]string{"SKILL.md": pdfDoc})
	if err := os.Symlink("/etc/passwd", filepath.Join(linked, "passwd")); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(linked); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("symlink: %v", err)
	}
}

// TestFromGit: a skill in a bare repository is fetched at the commit it is
// pinned to, not at the branch's tip; a commit the repository lacks and a
// folder outside it are refused.
func TestFromGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("git is not installed: install git (apt-get install git)")
		}
		t.Skip("git is not installed: install git (apt-get install git)")
	}
	root := t.TempDir()
	work, bare := filepath.Join(root, "work"), filepath.Join(root, "skills.git")
	git := func(dir string, args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t", "GIT_CONFIG_GLOBAL="+os.DevNull)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	write(t, work, map[string]string{"pdf/SKILL.md": pdfDoc, "pdf/reference.md": "v1\n"})
	git(root, "init", "--quiet", "-b", "main", work)
	git(work, "add", ".")
	git(work, "commit", "--quiet", "-m", "v1")
	first := git(work, "rev-parse", "HEAD")
	write(t, work, map[string]string{"pdf/reference.md": "v2\n"})
	git(work, "commit", "--quiet", "-am", "v2")
	git(root, "clone", "--quiet", "--bare", work, bare)

	dir, full, cleanup, err := FromGit(context.Background(), filepath.Join(root, "tmp"), bare, first[:10], "pdf")
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	if full != first {
		t.Errorf("commit %s, want %s", full, first)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "reference.md")); string(b) != "v1\n" {
		t.Errorf("reference.md %q: want the pinned commit's v1", b)
	}
	if _, _, _, err := FromGit(context.Background(), filepath.Join(root, "tmp"), bare, "0123456789abcdef", ""); err == nil || !strings.Contains(err.Error(), "no commit 0123456789abcdef") {
		t.Errorf("unknown commit: %v", err)
	}
	if _, _, _, err := FromGit(context.Background(), filepath.Join(root, "tmp"), bare, first, "../.."); err == nil || !strings.Contains(err.Error(), "outside the repository") {
		t.Errorf("traversal: %v", err)
	}
	if u, c, sub, ok := ParseGit("https://example.org/s.git@" + first + "//pdf"); !ok || u != "https://example.org/s.git" || c != first || sub != "pdf" {
		t.Errorf("ParseGit: %q %q %q %v", u, c, sub, ok)
	}
	if _, _, _, ok := ParseGit("https://example.org/s.git"); ok {
		t.Error("ParseGit took a URL without a commit")
	}
}

func listTree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		rel, _ := filepath.Rel(dir, p)
		out = append(out, rel)
		return nil
	})
	return out
}
