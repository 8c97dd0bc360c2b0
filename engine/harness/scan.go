package harness

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
)

// Found is a config file that was read and its servers.
type Found struct {
	File    File
	Servers []Server
}

// Unreadable is a config file (or one entry of it) that could not be read.
type Unreadable struct {
	Harness string `json:"-"`
	Path    string `json:"path"`
	Error   string `json:"error"`
}

// Scan is what the harnesses' config files hold.
type Scan struct {
	Found      []Found
	Unreadable []Unreadable
	Skills     map[string]int // harness → skills found
}

// ScanFiles reads the config files of the harnesses that exist. A file that
// is missing is skipped; one that cannot be read or parsed, and entries not
// understood, are listed as unreadable, and the others are read.
func ScanFiles(env Env, hs []Harness) *Scan {
	sc := &Scan{Skills: map[string]int{}}
	type decoded struct {
		doc map[string]any
		err error
	}
	cache := map[string]decoded{}
	for _, h := range hs {
		for _, f := range h.Files(env) {
			d, seen := cache[f.Path]
			if !seen {
				data, err := os.ReadFile(f.Path)
				switch {
				case errors.Is(err, fs.ErrNotExist):
					d.err = fs.ErrNotExist
				case err != nil:
					d.err = fmt.Errorf("reading: %w", err)
				default:
					d.doc, d.err = Decode(f.Format, data)
				}
				cache[f.Path] = d
				if d.err != nil && d.err != fs.ErrNotExist {
					sc.Unreadable = append(sc.Unreadable, Unreadable{Harness: h.Name, Path: f.Path, Error: d.err.Error()})
				}
			}
			if d.err != nil {
				continue
			}
			servers, probs, err := Servers(f, d.doc)
			if err != nil {
				sc.Unreadable = append(sc.Unreadable, Unreadable{Harness: h.Name, Path: f.Path, Error: err.Error()})
				continue
			}
			for _, p := range probs {
				sc.Unreadable = append(sc.Unreadable, Unreadable{Harness: h.Name, Path: f.Path, Error: fmt.Sprintf("server %q: %v", p.Server, p.Err)})
			}
			if len(servers) > 0 {
				sc.Found = append(sc.Found, Found{File: f, Servers: servers})
			}
		}
		if dir := h.SkillsDir(env); dir != "" {
			if n := countSkills(dir); n > 0 {
				sc.Skills[h.Name] = n
			}
		}
	}
	return sc
}

// countSkills counts <dir>/*/SKILL.md.
func countSkills(dir string) int {
	m, _ := filepath.Glob(filepath.Join(dir, "*", "SKILL.md"))
	sort.Strings(m)
	return len(m)
}
