package hub

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/capabilities-sh/capabilities/engine/index"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/skill"
	"github.com/capabilities-sh/capabilities/engine/typegen"
)

// SkillPrefix marks a describe target that names a skill: "skill:<name>".
const SkillPrefix = "skill:"

// maxSkillHits is the most skills a search lists beside its tools.
const maxSkillHits = 5

// Skills is the hub's skill store: Options.SkillsDir, else skills/ in the
// store's folder. ok is false for a store with no folder (in memory).
func (h *Hub) Skills() (st skill.Store, ok bool) {
	if h.opts.SkillsDir != "" {
		return skill.Store{Dir: h.opts.SkillsDir}, true
	}
	if d, isDir := h.store.(interface{ Dir() string }); isDir {
		return skill.Store{Dir: filepath.Join(d.Dir(), "skills")}, true
	}
	return skill.Store{}, false
}

// searchSkills lists the skills whose name or description shares a word
// with the query, best first. Skills are read from their folder on each
// search (a handful of small files), so one added by another process
// shows at once. A namespace-scoped search finds no skills.
func (h *Hub) searchSkills(ctx context.Context, q SearchQuery) []index.SkillHit {
	st, ok := h.Skills()
	if !ok || q.Namespace != "" || strings.TrimSpace(q.Text) == "" {
		return nil
	}
	all, err := st.List()
	if err != nil {
		h.log.Warn("reading skills for search", "err", err)
		return nil
	}
	all = slices.DeleteFunc(all, func(s *skill.Stored) bool { return !h.skillShown(ctx, s.Name) })
	if len(all) == 0 {
		return nil
	}
	tools := make([]model.Tool, len(all))
	byAddr := map[string]*skill.Stored{}
	for i, s := range all {
		addr := "skill." + strings.ReplaceAll(s.Name, "-", "_")
		tools[i] = model.Tool{Address: addr, Name: strings.ReplaceAll(s.Name, "-", " "), Description: s.Description}
		byAddr[addr] = s
	}
	ix := index.New(tools, index.Options{Asks: func(*model.Tool) bool { return false }})
	res, err := ix.Search(index.Query{Text: q.Text, Limit: maxSkillHits})
	if err != nil || res.Fallback != "" {
		return nil
	}
	var out []index.SkillHit
	for _, hit := range res.Hits {
		s := byAddr[hit.Address]
		out = append(out, index.SkillHit{Name: s.Name, Description: typegen.FirstSentence(s.Description)})
	}
	return out
}

// describeSkills renders the skill targets ("skill:<name>"): each one's
// SKILL.md and the files beside it.
func (h *Hub) describeSkills(ctx context.Context, names []string) (string, error) {
	st, ok := h.Skills()
	var parts []string
	for _, n := range names {
		if !ok {
			return "", fmt.Errorf("unknown target %q: %w", SkillPrefix+n, skill.ErrNotFound)
		}
		s, err := st.Get(n)
		if err == nil && !h.skillShown(ctx, n) {
			err = skill.ErrNotFound // outside the served profile: not there
		}
		if errors.Is(err, skill.ErrNotFound) {
			have := []string{}
			if all, lerr := st.List(); lerr == nil {
				for _, a := range all {
					if h.skillShown(ctx, a.Name) {
						have = append(have, SkillPrefix+a.Name)
					}
				}
			}
			if len(have) == 0 {
				return "", fmt.Errorf("unknown target %q: the hub has no skills (add one with `capabilities hub skills add`): %w", SkillPrefix+n, typegen.ErrUnknownTarget)
			}
			return "", fmt.Errorf("unknown target %q: the skills are %s: %w", SkillPrefix+n, strings.Join(have, ", "), typegen.ErrUnknownTarget)
		}
		if err != nil {
			return "", err
		}
		parts = append(parts, s.Describe())
	}
	return strings.Join(parts, "\n"), nil
}

// splitSkillTargets separates "skill:<name>" targets from the others.
func splitSkillTargets(targets []string) (skills, others []string) {
	for _, t := range targets {
		if n, ok := strings.CutPrefix(t, SkillPrefix); ok {
			skills = append(skills, n)
		} else {
			others = append(others, t)
		}
	}
	return skills, others
}
