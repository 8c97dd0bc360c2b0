package stack

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/store"
)

// A change a person declines at a pull is not applied on this machine, and
// it stays in the stack: the next push from here writes the stack's item
// as the stack holds it, not this machine's, so declining a source here
// never removes it from the other machines. Only once this machine changes
// the item itself does its own version go out again.
//
// The declined items are kept in .git/capabilities-declined (never
// committed): a JSON object from Change.Key to the sum of this machine's
// item when it was declined ("" when it had none).

func (r *Repo) declinedPath() string {
	return filepath.Join(r.Dir, ".git", "capabilities-declined")
}

// Declined reads the items declined here (empty when none).
func (r *Repo) Declined() (map[string]string, error) {
	b, err := os.ReadFile(r.declinedPath())
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the changes declined here: %w", err)
	}
	m := map[string]string{}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("reading the changes declined here: %s: %w; remove it (the stack's items you declined would then be asked again at the next pull only if they change)", r.declinedPath(), err)
	}
	return m, nil
}

// SetDeclined records the items declined here, replacing what was.
func (r *Repo) SetDeclined(m map[string]string) error {
	if len(m) == 0 {
		if err := os.Remove(r.declinedPath()); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("recording the changes declined here: %w", err)
		}
		return nil
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("recording the changes declined here: %w", err)
	}
	if err := store.WriteFileAtomic(r.declinedPath(), append(b, '\n')); err != nil {
		return fmt.Errorf("recording the changes declined here: %w", err)
	}
	return nil
}

// Decline adds the changes to m, each as this machine's item stands now.
func Decline(m map[string]string, changes []Change) {
	for _, c := range changes {
		m[c.Key()] = sumOf(c.Mine, c.Mine != nil)
	}
}

// KeepDeclined puts into mine, the state a push is about to write, the
// stack's own item (from stackState, the state this machine last synced
// with) for every item declined here that this machine has not changed
// since. It returns the keys so kept and the declined items still standing
// (an item changed here since is forgotten: this machine's version goes out).
func KeepDeclined(mine, stackState *State, declined map[string]string) (kept []string, still map[string]string) {
	still = map[string]string{}
	for key, was := range declined {
		kind, name, ok := strings.Cut(key, " ")
		if !ok {
			continue
		}
		v, in := mine.item(kind, name)
		if sumOf(v, in) != was {
			continue // changed here since: this machine's version goes out
		}
		sv, sin := stackState.item(kind, name)
		mine.set(kind, name, sv, sin)
		still[key] = was
		kept = append(kept, key)
	}
	slices.Sort(kept)
	return kept, still
}

// item is the item of the kind and name in s.
func (s *State) item(kind, name string) (any, bool) {
	switch kind {
	case KindSource:
		v, ok := s.Sources[name]
		return v, ok
	case KindRule:
		v, ok := s.Rules[name]
		return v, ok
	case KindProfile:
		v, ok := s.Profiles[name]
		return v, ok
	case KindSkill:
		v, ok := s.Skills[name]
		return v, ok
	}
	return nil, false
}

// set makes the item of the kind and name v, or removes it when !ok.
func (s *State) set(kind, name string, v any, ok bool) {
	switch kind {
	case KindSource:
		delete(s.Sources, name)
		if ok {
			s.Sources[name] = v.(SourceFile)
		}
	case KindRule:
		delete(s.Rules, name)
		if ok {
			s.Rules[name] = v.(Rule)
		}
	case KindProfile:
		delete(s.Profiles, name)
		if ok {
			s.Profiles[name] = v.(hub.Profile)
		}
	case KindSkill:
		delete(s.Skills, name)
		if ok {
			s.Skills[name] = v.(Skill)
		}
	}
}
