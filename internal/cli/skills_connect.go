package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/capabilities-sh/capabilities/engine/harness"
	"github.com/capabilities-sh/capabilities/engine/harness/edit"
	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/skill"
)

// skillHarnesses are the harnesses of files that read skills, each once,
// with their skills folder.
func skillHarnesses(files []harness.File) map[string]string {
	env, err := harness.FromOS()
	if err != nil {
		return nil
	}
	out := map[string]string{}
	for _, f := range files {
		h, ok := harness.Lookup(f.Harness)
		if !ok {
			continue
		}
		if dir := h.SkillsDir(env); dir != "" {
			out[h.Name] = dir
		}
	}
	return out
}

// hubSkills reads the hub's skills (none when there is no hub yet).
func hubSkills() ([]*skill.Stored, error) {
	dir, err := hubDir()
	if err != nil {
		return nil, err
	}
	all, err := skill.Store{Dir: filepath.Join(dir, "skills")}.List()
	if err != nil {
		return nil, fmt.Errorf("reading the hub's skills: %w", err)
	}
	return all, nil
}

// profileSkillInstalls are skillInstalls of the skills profile shows: a
// profile that lists skills installs those; one that lists none, every
// skill of the hub.
func (e *env) profileSkillInstalls(ctx context.Context, files []harness.File, profile string) ([]edit.Change, error) {
	h, _, err := e.openHub()
	if err != nil {
		if profile == hub.DefaultProfile {
			return skillInstalls(files, nil) // no hub: no skills either
		}
		return nil, err
	}
	p, err := h.Profile(ctx, profile)
	h.Close()
	if err != nil {
		return nil, fmt.Errorf("connect --profile: %w", err)
	}
	return skillInstalls(files, p.ShowsSkill)
}

// skillInstalls are the changes that copy each hub skill (each that shows
// says yes to, when it is not nil) into the skills folder of each harness
// in files that reads skills: one change per file, <skills>/<name>/<file>.
// A folder of that name that does not hold the hub's files already is
// someone else's: that skill is refused for that harness (one error,
// nothing of it written).
func skillInstalls(files []harness.File, shows func(name string) bool) ([]edit.Change, error) {
	hs := skillHarnesses(files)
	if len(hs) == 0 {
		return nil, nil
	}
	skills, err := hubSkills()
	if err != nil {
		return nil, err
	}
	if shows != nil {
		skills = slices.DeleteFunc(skills, func(s *skill.Stored) bool { return !shows(s.Name) })
	}
	if len(skills) == 0 {
		return nil, nil
	}
	hubHome, err := hubDir()
	if err != nil {
		return nil, err
	}
	var out []edit.Change
	for _, name := range sortedKeys(hs) {
		root := hs[name]
		owned := map[string]edit.SnapFile{}
		recs, _ := edit.SkillFiles(filepath.Join(hubHome, "snapshots"), name)
		for _, r := range recs {
			owned[r.Path] = r
		}
		for _, s := range skills {
			dst := filepath.Join(root, s.Name)
			data := map[string][]byte{}
			for _, f := range s.Files {
				b, err := os.ReadFile(filepath.Join(s.Dir, filepath.FromSlash(f)))
				if err != nil {
					return nil, fmt.Errorf("reading the skill %s: %w", s.Name, err)
				}
				data[f] = b
			}
			if clash := foreign(dst, data, owned); clash != "" {
				msg := fmt.Sprintf("%s holds a skill %s that is not the hub's copy (%s): it is left as it is; rename one of them, or take the hub's out with `capabilities hub skills remove %s`", dst, s.Name, clash, s.Name)
				out = append(out, edit.Change{Harness: name, Path: filepath.Join(dst, "SKILL.md"), Skill: s.Name,
					Edit: func([]byte) ([]byte, error) { return nil, errors.New(msg) }})
				continue
			}
			for _, f := range s.Files {
				b := data[f]
				out = append(out, edit.Change{Harness: name, Path: filepath.Join(dst, filepath.FromSlash(f)), Skill: s.Name,
					Edit: func(src []byte) ([]byte, error) { return b, nil }})
			}
			// A file an earlier connect installed that the hub's skill no
			// longer has goes.
			for p, rec := range owned {
				rel, err := filepath.Rel(dst, p)
				if err != nil || strings.HasPrefix(rel, "..") || data[filepath.ToSlash(rel)] != nil {
					continue
				}
				out = append(out, edit.Change{Harness: name, Path: p, Skill: s.Name, Delete: true,
					Edit: func(src []byte) ([]byte, error) {
						if src != nil && !rec.Holds(src) {
							return nil, fmt.Errorf("it changed since hub connect installed it: left as it is")
						}
						return nil, nil
					}})
			}
		}
	}
	return out, nil
}

// foreign says why dst is not the hub's copy of a skill with files data,
// or "" when it is or is not there: each file in it holds the hub's bytes,
// or what an earlier connect wrote there (owned: the hub's skill changed
// since, and connect updates the copy).
func foreign(dst string, data map[string][]byte, owned map[string]edit.SnapFile) string {
	fi, err := os.Lstat(dst)
	if errors.Is(err, fs.ErrNotExist) {
		return ""
	}
	if err != nil {
		return err.Error()
	}
	if !fi.IsDir() {
		return "it is not a folder"
	}
	var why string
	err = filepath.WalkDir(dst, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dst, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == ".git" { // the hub's copy leaves it out too
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			why = rel + " is not a regular file"
			return filepath.SkipAll
		}
		now, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if b, ok := data[rel]; ok && bytes.Equal(now, b) {
			return nil
		}
		if rec, ok := owned[p]; ok && rec.Holds(now) {
			return nil
		}
		if _, ok := data[rel]; ok {
			why = rel + " differs"
		} else {
			why = rel + " is not the hub's"
		}
		return filepath.SkipAll
	})
	if err != nil {
		return err.Error()
	}
	return why
}

// skillRemovals are the changes that take out the skill files connect
// wrote into each harness in files (those that still hold what connect
// wrote; one changed since is refused, left as it is), and the folders
// those connects made, to remove once empty.
func skillRemovals(files []harness.File, snaps string) ([]edit.Change, []string) {
	hs := skillHarnesses(files)
	var out []edit.Change
	var dirs []string
	for _, name := range sortedKeys(hs) {
		root := hs[name]
		recs, made := edit.SkillFiles(snaps, name)
		for _, rec := range recs {
			if !strings.HasPrefix(rec.Path, root+string(filepath.Separator)) {
				continue // the harness's skills folder moved since
			}
			rec := rec
			out = append(out, edit.Change{Harness: name, Path: rec.Path, Skill: rec.Skill, Delete: true,
				Edit: func(src []byte) ([]byte, error) {
					if src != nil && !rec.Holds(src) {
						return nil, fmt.Errorf("it changed since hub connect installed it: left as it is (remove it yourself if it is not needed)")
					}
					return nil, nil
				}})
		}
		dirs = append(dirs, made...) // removed only when left empty
	}
	return out, dirs
}

func sortedKeys(m map[string]string) []string {
	var out []string
	for _, h := range harness.All() {
		if _, ok := m[h.Name]; ok {
			out = append(out, h.Name)
		}
	}
	return out
}
