package skill

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

// Folder is a skills folder of an agent harness (Claude Code's
// ~/.claude/skills, Codex's $CODEX_HOME/skills).
type Folder struct {
	Harness string
	Dir     string
}

// What importing does with a skill found in a harness's folder.
const (
	FoundImport     = "import"     // not in the hub: importing copies it in
	FoundImported   = "imported"   // copied in
	FoundInHub      = "in-hub"     // the hub has the same files
	FoundClash      = "clash"      // the hub has (or imports) another skill of that name
	FoundDeclined   = "declined"   // the person said no
	FoundUnreadable = "unreadable" // not a skill the hub can hold
)

// Found is a skill in a harness's skills folder and what importing does
// with it.
type Found struct {
	Harness     string `json:"harness"`
	Name        string `json:"name"`
	Path        string `json:"path"`
	Status      string `json:"status"`
	Error       string `json:"error,omitempty"`
	Description string `json:"description,omitempty"`
	Skill       *Skill `json:"-"`
}

// Find reads the skills in the folders and says what importing each into
// st would do. The same skill in two folders is imported once; two
// different skills of one name are a clash, never a silent choice.
func Find(folders []Folder, st Store) []Found {
	var out []Found
	seen := map[string]*Skill{}
	for _, fo := range folders {
		if fo.Dir == "" {
			continue
		}
		docs, _ := filepath.Glob(filepath.Join(fo.Dir, "*", "SKILL.md"))
		sort.Strings(docs)
		for _, doc := range docs {
			f := Found{Harness: fo.Harness, Path: filepath.Dir(doc), Name: filepath.Base(filepath.Dir(doc))}
			s, err := Read(f.Path)
			if err != nil {
				f.Status, f.Error = FoundUnreadable, err.Error()
				out = append(out, f)
				continue
			}
			f.Name, f.Description, f.Skill = s.Name, s.Description, s
			have, err := st.Get(s.Name)
			switch {
			case err == nil && SameFiles(have.Skill, s):
				f.Status = FoundInHub
			case err == nil:
				f.Status, f.Error = FoundClash, fmt.Sprintf("the hub has another skill named %s (from %s): not imported", s.Name, have.Origin.String())
			case !errors.Is(err, ErrNotFound):
				f.Status, f.Error = FoundUnreadable, err.Error()
			case seen[s.Name] != nil && SameFiles(seen[s.Name], s):
				f.Status = FoundInHub // the same skill in a second harness
			case seen[s.Name] != nil:
				f.Status, f.Error = FoundClash, fmt.Sprintf("another skill named %s is imported from %s", s.Name, seen[s.Name].Dir)
			default:
				f.Status = FoundImport
				seen[s.Name] = s
			}
			out = append(out, f)
		}
	}
	return out
}

// Import copies a found skill whose status is FoundImport into st and
// marks it imported; anything else is left as it is.
func (st Store) Import(f *Found) error {
	if f.Status != FoundImport || f.Skill == nil {
		return fmt.Errorf("importing the skill %s: it is %s, not to import", f.Name, f.Status)
	}
	if err := st.Add(f.Skill, Origin{Path: f.Path}); err != nil {
		f.Status, f.Error = FoundUnreadable, err.Error()
		return fmt.Errorf("importing the skill %s: %w", f.Name, err)
	}
	f.Status = FoundImported
	return nil
}

// String says where a stored skill came from: a git URL at its commit,
// or a folder.
func (o Origin) String() string {
	if o.Git != "" {
		return o.Git + "@" + o.Commit
	}
	return o.Path
}

// SameFiles is true when a and b hold the same files with the same bytes.
func SameFiles(a, b *Skill) bool {
	if len(a.Files) != len(b.Files) {
		return false
	}
	for i, f := range a.Files {
		if b.Files[i] != f {
			return false
		}
		x, err1 := os.ReadFile(filepath.Join(a.Dir, filepath.FromSlash(f)))
		y, err2 := os.ReadFile(filepath.Join(b.Dir, filepath.FromSlash(f)))
		if err1 != nil || err2 != nil || !bytes.Equal(x, y) {
			return false
		}
	}
	return true
}
