package harness

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
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
				d.doc, d.err = readConfig(f)
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
			for i := range servers {
				servers[i] = ExpandServer(env, f, servers[i])
			}
			if f.Project {
				for i := range servers {
					s := &servers[i]
					if cwd := projectCwd(*s, env.Cwd); cwd != s.Cwd {
						s.Cwd, s.CwdWritten, s.CwdFromProject = cwd, s.Cwd, true
					}
				}
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

// projectCwd is the working directory a project's stdio server needs in the
// hub: the agent starts it in the project (dir), the hub anywhere. A
// relative cwd is made absolute, and a server with none whose command or
// an argument names a file of the project by a relative path (node
// ./server.js) gets dir; any other keeps what it has.
func projectCwd(s Server, dir string) string {
	if s.Kind != KindStdio || dir == "" || !filepath.IsAbs(dir) {
		return s.Cwd
	}
	if s.Cwd != "" {
		if filepath.IsAbs(s.Cwd) {
			return s.Cwd
		}
		return filepath.Join(dir, s.Cwd)
	}
	for _, a := range append([]string{s.Command}, s.Args...) {
		if a == "" || filepath.IsAbs(a) || strings.HasPrefix(a, "-") || a == "." || a == ".." {
			continue
		}
		if strings.HasPrefix(a, "./") || strings.HasPrefix(a, "../") {
			return dir
		}
		if strings.ContainsAny(a, `/\`) || filepath.Ext(a) != "" {
			if _, err := os.Stat(filepath.Join(dir, a)); err == nil {
				return dir
			}
		}
	}
	return ""
}

// countSkills counts <dir>/*/SKILL.md.
func countSkills(dir string) int {
	m, _ := filepath.Glob(filepath.Join(dir, "*", "SKILL.md"))
	sort.Strings(m)
	return len(m)
}
