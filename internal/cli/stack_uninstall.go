package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/capabilities-sh/capabilities/engine/catalog"
	"github.com/capabilities-sh/capabilities/engine/harness"
	"github.com/capabilities-sh/capabilities/engine/harness/edit"
	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/skill"
	"github.com/spf13/cobra"
)

func newStackUninstallCmd(e *env) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "uninstall <slug | namespace | skill>",
		Short: "Remove what stack install installed: from the hub, the agents' skills folders, and capabilities.lock",
		Long: `Remove a capability 'stack install' installed, named by its slug, or by the hub namespace or
skill name it was installed as: the hub source (with its manifest, review, rules and stored
credential) or the hub's skill, the copies 'hub connect' made of that skill in your agents'
skills folders (each file only while it still holds what connect wrote; one changed since is
left, and named), and its entry in $CAPABILITIES_HOME/stack/capabilities.lock. What was there
before install is there again, byte for byte: install wrote only where nothing was.`,
		Args: exactArgs(1, "one slug, namespace or skill name"),
		RunE: func(c *cobra.Command, args []string) error {
			ctx := c.Context()
			lockPath, mutex, err := lockPaths()
			if err != nil {
				return err
			}
			return catalog.Guard(ctx, mutex, func() error {
				l, err := catalog.ReadLock(lockPath)
				if err != nil {
					return err
				}
				rec := l.Find(args[0])
				if rec == nil {
					return &codedError{code: codeNotFound, err: notInstalled(args[0], l)}
				}
				h, _, err := e.openHub()
				if err != nil {
					return err
				}
				defer h.Close()
				var removed, left []string
				for _, p := range rec.Wrote {
					r, lft, err := uninstallPlace(ctx, h, p)
					removed, left = append(removed, r...), append(left, lft...)
					if err != nil {
						return fmt.Errorf("uninstalling %s: %w (it stays in %s; run uninstall again)", rec.Slug, err, lockPath)
					}
				}
				if err := catalog.WriteLock(lockPath, l.Without(rec.Slug)); err != nil {
					return fmt.Errorf("uninstalling %s: taken out of the hub, but not out of %s: %w", rec.Slug, lockPath, err)
				}
				if asJSON {
					return e.printJSON(map[string]any{"uninstalled": rec.Slug, "removed": nonNil(removed), "left": nonNil(left)})
				}
				for _, r := range removed {
					fmt.Fprintf(e.stdout, "  removed %s\n", r)
				}
				for _, r := range left {
					fmt.Fprintf(e.stdout, "  left %s\n", r)
				}
				fmt.Fprintf(e.stdout, "Uninstalled %s.\n", rec.Slug)
				return nil
			})
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return c
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// notInstalled is uninstall's error for a ref the lock does not hold.
func notInstalled(ref string, l *catalog.Lock) error {
	var names []string
	for _, c := range l.Capabilities {
		names = append(names, c.Slug)
		for _, p := range c.Wrote {
			if p.Name != c.Slug {
				names = append(names, p.Name)
			}
		}
	}
	if len(l.Capabilities) == 0 {
		return fmt.Errorf("uninstalling %s: stack install installed nothing (the lock is empty); a source or skill added another way goes with `capabilities hub remove` or `capabilities hub skills remove`", ref)
	}
	msg := fmt.Sprintf("uninstalling %s: stack install installed nothing of that slug, namespace or skill name", ref)
	if c := catalog.Closest(ref, names, 3); len(c) > 0 {
		msg += "; did you mean " + strings.Join(c, ", ") + "?"
	}
	return errors.New(msg)
}

// uninstallPlace takes out what install wrote at p: what it removed and
// what it left (and why), for a person.
func uninstallPlace(ctx context.Context, h *hub.Hub, p catalog.Place) (removed, left []string, err error) {
	switch p.Kind {
	case catalog.PlaceSource:
		if _, serr := h.Source(ctx, p.Name); serr != nil {
			return nil, []string{fmt.Sprintf("hub source %s: not in the hub any more", p.Name)}, nil
		}
		if err := h.Remove(ctx, p.Name); err != nil {
			return nil, nil, err
		}
		return []string{"hub source " + p.Name}, nil, nil
	case catalog.PlaceSkill:
		r, l := removeSkillCopies(p.Name)
		removed, left = append(removed, r...), append(left, l...)
		st, serr := skillStore(h)
		if serr != nil {
			return removed, left, serr
		}
		if _, gerr := st.Get(p.Name); errors.Is(gerr, skill.ErrNotFound) {
			return removed, append(left, fmt.Sprintf("hub skill %s: not in the hub any more", p.Name)), nil
		}
		if changed := changedFiles(filepath.Join(st.Dir, p.Name), p.Files); len(changed) > 0 {
			// The hub's copy is the hub's: it goes, but say so.
			left = append(left, fmt.Sprintf("hub skill %s had changed since install (%s); removed all the same", p.Name, strings.Join(changed, ", ")))
		}
		if err := st.Remove(p.Name); err != nil {
			return removed, left, err
		}
		return append(removed, "hub skill "+p.Name), left, nil
	}
	return nil, nil, fmt.Errorf("the lock names a place of kind %q, which this capabilities does not know", p.Kind)
}

// changedFiles are the files of the folder dir that do not hold the
// sha256 recorded for them (or are not recorded), sorted.
func changedFiles(dir string, files map[string]string) []string {
	var out []string
	seen := map[string]bool{}
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		seen[rel] = true
		b, err := os.ReadFile(p)
		sum := sha256.Sum256(b)
		if err != nil || files[rel] != hex.EncodeToString(sum[:]) {
			out = append(out, rel)
		}
		return nil
	})
	for f := range files {
		if !seen[f] {
			out = append(out, f)
		}
	}
	sort.Strings(out)
	return out
}

// removeSkillCopies takes the copies of the skill name that hub connect
// made out of every agent's skills folder: each file that still holds
// what connect wrote, then the folders connect made, once empty. A file
// changed since is left, and named.
func removeSkillCopies(name string) (removed, left []string) {
	dir, err := hubDir()
	if err != nil {
		return nil, nil
	}
	env, err := harness.FromOS()
	if err != nil {
		return nil, nil
	}
	snaps := filepath.Join(dir, "snapshots")
	for _, hs := range harness.All() {
		root := hs.SkillsDir(env)
		if root == "" {
			continue
		}
		top := filepath.Join(root, name)
		recs, made := edit.SkillFiles(snaps, hs.Name)
		n := 0
		for _, rec := range recs {
			if rec.Skill != name || !strings.HasPrefix(rec.Path, top+string(filepath.Separator)) {
				continue
			}
			b, err := os.ReadFile(rec.Path)
			switch {
			case errors.Is(err, fs.ErrNotExist):
				continue
			case err != nil || !rec.Holds(b):
				left = append(left, fmt.Sprintf("%s: it changed since hub connect installed it (remove it yourself if it is not needed)", rec.Path))
				continue
			}
			if err := os.Remove(rec.Path); err != nil {
				left = append(left, fmt.Sprintf("%s: %v", rec.Path, err))
				continue
			}
			n++
		}
		// The folders connect made for the skill (and the skills folder
		// itself, when connect made it), deepest first, once empty.
		var dirs []string
		for _, d := range made {
			if d == top || strings.HasPrefix(d, top+string(filepath.Separator)) || strings.HasPrefix(top, d+string(filepath.Separator)) {
				dirs = append(dirs, d)
			}
		}
		if n > 0 {
			// The skill's own folders inside top (connect made top, so
			// what is under it is connect's too).
			_ = filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
				if err == nil && d.IsDir() && p != top {
					dirs = append(dirs, p)
				}
				return nil
			})
			dirs = append(dirs, top)
		}
		sort.Slice(dirs, func(i, j int) bool { return len(dirs[i]) > len(dirs[j]) })
		for _, d := range dirs {
			_ = os.Remove(d) // fails, and stays, when not empty
		}
		if n > 0 {
			removed = append(removed, fmt.Sprintf("%s's copy of the skill %s (%s)", hs.Name, name, top))
		}
	}
	return removed, left
}
