package stack

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/skill"
	"github.com/capabilities-sh/capabilities/store"
)

// Channel is how the rules a pull applies are marked.
const Channel = "stack"

// Request is what adding the stack's source asks the hub: the hub starts
// it and lists its tools itself (a pulled tool contract is never trusted).
func Request(sf SourceFile) hub.AddRequest {
	s := sf.Source
	req := hub.AddRequest{Namespace: s.Namespace, Env: s.Env, Cwd: s.Cwd, Headers: s.Headers, SecretEnv: s.SecretEnv, SecretHeader: s.SecretHeader,
		CallTimeout: time.Duration(s.CallTimeoutMs) * time.Millisecond}
	switch s.Kind {
	case model.KindStdio:
		req.Command = append([]string{s.Command}, s.Args...)
	case model.KindHTTP:
		req.URL = s.URL
	case model.KindOpenAPI:
		req.Document, req.Server = s.Document, s.DocumentServer
	}
	return req
}

// SameSource reports whether a and b run the same server the same way
// (their connections aside).
func SameSource(a, b SourceFile) bool {
	return sum(SourceFile{Source: a.Source}) == sum(SourceFile{Source: b.Source})
}

// UpdateSource replaces the source record of sf's namespace with sf's
// (the time it was added kept), for the hub to list its tools again
// (hub.Refresh) and a person to review what changed (hub.PendingReview):
// a changed command is a command not consented to yet.
func UpdateSource(ctx context.Context, st store.Store, h *hub.Hub, sf SourceFile) error {
	err := store.UpdateJSON(ctx, st, store.Sources, sf.Source.Namespace, func(old *model.Source) (*model.Source, error) {
		if old == nil {
			return nil, fmt.Errorf("the source %s was removed meanwhile", sf.Source.Namespace)
		}
		n := sf.Source.Model()
		n.AddedAt = old.AddedAt
		return &n, nil
	})
	if err != nil {
		return fmt.Errorf("updating the source %s: %w", sf.Source.Namespace, err)
	}
	h.Invalidate()
	return nil
}

// ApplyRule sets or removes the rule of a change.
func ApplyRule(ctx context.Context, h *hub.Hub, c Change) error {
	if c.Theirs == nil {
		m, _ := c.Mine.(Rule)
		if err := h.RemoveRule(ctx, m.Target, m.Connection); err != nil {
			return err
		}
		return nil
	}
	t := c.Theirs.(Rule)
	_, err := h.SetRule(ctx, t.Target, t.Action, t.Connection, Channel)
	return err
}

// ApplyProfile writes or removes the profile of a change.
func ApplyProfile(ctx context.Context, h *hub.Hub, c Change) error {
	if c.Theirs == nil {
		return h.RemoveProfile(ctx, c.Name)
	}
	p := c.Theirs.(hub.Profile)
	create := c.Mine == nil && p.Name != hub.DefaultProfile
	return h.PutProfile(ctx, p, create)
}

// ApplySkill adds, replaces or removes the skill of a change. The new
// skill is made ready (fetched, written, read back) before the old one
// goes.
func ApplySkill(ctx context.Context, h *hub.Hub, c Change) error {
	st, err := skillStore(h)
	if err != nil {
		return err
	}
	if c.Theirs == nil {
		return st.Remove(c.Name)
	}
	t := c.Theirs.(Skill)
	var s *skill.Skill
	var origin skill.Origin
	if t.Git != nil {
		dir, full, cleanup, err := skill.FromGit(ctx, st.Dir, t.Git.Repo, t.Git.Commit, t.Git.Path)
		if err != nil {
			return err
		}
		defer cleanup()
		if s, err = skill.Read(dir); err != nil {
			return err
		}
		origin = skill.Origin{Git: t.Git.Repo, Commit: full, Subdir: t.Git.Path}
	} else {
		if err := os.MkdirAll(st.Dir, 0o700); err != nil {
			return fmt.Errorf("adding the skill %s: %w", c.Name, err)
		}
		tmp, err := os.MkdirTemp(st.Dir, ".stack-")
		if err != nil {
			return fmt.Errorf("adding the skill %s: %w", c.Name, err)
		}
		defer os.RemoveAll(tmp)
		for f, data := range t.Files {
			full := filepath.Join(tmp, filepath.FromSlash(f))
			if err := os.MkdirAll(filepath.Dir(full), 0o700); err != nil {
				return fmt.Errorf("adding the skill %s: %w", c.Name, err)
			}
			if err := os.WriteFile(full, data, 0o600); err != nil {
				return fmt.Errorf("adding the skill %s: %w", c.Name, err)
			}
		}
		if s, err = skill.Read(tmp); err != nil {
			return err
		}
	}
	if s.Name != c.Name {
		return fmt.Errorf("adding the skill %s: its SKILL.md names it %q", c.Name, s.Name)
	}
	if c.Mine != nil {
		if err := st.Remove(c.Name); err != nil && !errors.Is(err, skill.ErrNotFound) {
			return err
		}
	}
	return st.Add(s, origin)
}
