// Package skill reads, checks and stores skills: a folder holding a
// SKILL.md (YAML front matter with name and description, then the body)
// and any files beside it, the format Claude Code, Codex and others read.
//
// A skill is data. Nothing in it runs in the hub and nothing in it is
// read as policy: the hub copies its files, indexes its name and
// description for search, and hands its SKILL.md to describe.
package skill

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// Limits on what a skill may hold.
const (
	MaxFiles       = 1000
	MaxBytes       = 32 << 20 // all files together
	MaxDescription = 1024
)

// nameRE is what a skill's name may be: the folder name it is installed
// under in every harness, so no separator, no dot-dot, nothing hidden.
var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,63}$`)

// Skill is one skill as read from its folder.
type Skill struct {
	Name        string
	Description string
	Body        string   // SKILL.md after the front matter
	Doc         []byte   // SKILL.md as it is
	Files       []string // every file, slash-separated, relative, sorted; SKILL.md among them
	Dir         string   // the folder it was read from
}

// CheckName says what is wrong with a skill name, or nil.
func CheckName(name string) error {
	if !nameRE.MatchString(name) {
		return fmt.Errorf("skill name %q: use 1 to 64 lowercase letters, digits and hyphens, starting with a letter or digit", name)
	}
	return nil
}

// Frontmatter is SKILL.md's YAML front matter as a JSON-ready object,
// every field as the author wrote it.
func Frontmatter(doc []byte) (map[string]any, error) {
	fm, _, err := parseFront(doc)
	if err != nil {
		return nil, err
	}
	if fm == nil {
		fm = map[string]any{}
	}
	return fm, nil
}

// parseFront splits SKILL.md into its front matter, decoded, and its body.
func parseFront(doc []byte) (fm map[string]any, body string, err error) {
	if !utf8.Valid(doc) {
		return nil, "", errors.New("SKILL.md is not UTF-8 text")
	}
	text := strings.TrimPrefix(string(doc), "\ufeff")
	text = strings.ReplaceAll(text, "\r\n", "\n")
	if !strings.HasPrefix(text, "---\n") {
		return nil, "", errors.New("SKILL.md does not start with YAML front matter (a line ---, name: and description:, then ---)")
	}
	rest := text[len("---\n"):]
	end := strings.Index(rest, "\n---\n")
	front := ""
	switch {
	case strings.HasPrefix(rest, "---\n"):
		body = rest[len("---\n"):]
	case end >= 0:
		front, body = rest[:end], rest[end+len("\n---\n"):]
	case strings.HasSuffix(rest, "\n---"):
		front = strings.TrimSuffix(rest, "\n---")
	default:
		return nil, "", errors.New("SKILL.md's front matter has no closing --- line")
	}
	if err := yaml.Unmarshal([]byte(front), &fm); err != nil {
		return nil, "", fmt.Errorf("SKILL.md's front matter: %w", err)
	}
	return fm, body, nil
}

// Parse reads the SKILL.md document: its front matter and body.
func Parse(doc []byte) (name, description, body string, err error) {
	fm, body, err := parseFront(doc)
	if err != nil {
		return "", "", "", err
	}
	n, _ := fm["name"].(string)
	d, _ := fm["description"].(string)
	if _, ok := fm["name"]; !ok || n == "" {
		return "", "", "", errors.New("SKILL.md's front matter has no name (a string)")
	}
	if err := CheckName(n); err != nil {
		return "", "", "", fmt.Errorf("SKILL.md's front matter: %w", err)
	}
	d = strings.TrimSpace(d)
	if d == "" {
		return "", "", "", errors.New("SKILL.md's front matter has no description (a string saying what the skill is for and when to use it)")
	}
	if utf8.RuneCountInString(d) > MaxDescription {
		return "", "", "", fmt.Errorf("SKILL.md's description is %d characters long; the limit is %d", utf8.RuneCountInString(d), MaxDescription)
	}
	return n, d, body, nil
}

// Read reads and checks the skill in dir: SKILL.md's front matter, and
// every file beside it (regular files and folders only: a symbolic link or
// a device is refused, so a copy never reaches outside the folder). A .git
// folder at the top is left out.
func Read(dir string) (*Skill, error) {
	doc, err := os.ReadFile(filepath.Join(dir, "SKILL.md"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("reading the skill in %s: there is no SKILL.md in it", dir)
	}
	if err != nil {
		return nil, fmt.Errorf("reading the skill in %s: %w", dir, err)
	}
	name, desc, body, err := Parse(doc)
	if err != nil {
		return nil, fmt.Errorf("reading the skill in %s: %w", dir, err)
	}
	s := &Skill{Name: name, Description: desc, Body: body, Doc: doc, Dir: dir}
	var total int64
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == "." {
			return nil
		}
		if d.IsDir() {
			if rel == ".git" {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s is not a regular file (a symbolic link or device): a skill holds plain files only", rel)
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		total += fi.Size()
		s.Files = append(s.Files, filepath.ToSlash(rel))
		if len(s.Files) > MaxFiles {
			return fmt.Errorf("it holds more than %d files", MaxFiles)
		}
		if total > MaxBytes {
			return fmt.Errorf("its files take more than %d MB", MaxBytes>>20)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the skill in %s: %w", dir, err)
	}
	sort.Strings(s.Files)
	return s, nil
}

// Describe is what describe("skill:<name>") returns: SKILL.md as it is,
// then the files beside it.
func (s *Skill) Describe() string {
	var b strings.Builder
	fmt.Fprintf(&b, "// skill:%s: SKILL.md\n", s.Name)
	b.Write(bytes.TrimRight(s.Doc, "\n"))
	b.WriteString("\n")
	var others []string
	for _, f := range s.Files {
		if f != "SKILL.md" {
			others = append(others, f)
		}
	}
	if len(others) > 0 {
		fmt.Fprintf(&b, "// files of skill:%s, beside SKILL.md (%d):\n", s.Name, len(others))
		for _, f := range others {
			b.WriteString("//   " + f + "\n")
		}
	} else {
		fmt.Fprintf(&b, "// skill:%s has no files beside SKILL.md\n", s.Name)
	}
	return b.String()
}
