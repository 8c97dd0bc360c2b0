package hub

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/store"
)

// A profile is a curated view of the hub: which namespaces and tools an
// agent served through it sees, and whether they are served in code mode
// (search, describe, execute) or as direct tools (one MCP tool each). It
// grants nothing and carries no policy: every call through it goes through
// the same policy, approvals, secrets, scrubbing and journal as any run.
type Profile struct {
	Name string `json:"name"`
	// Mode is ModeCode or ModeDirect.
	Mode string `json:"mode"`
	// Namespaces and Tools (addresses) make the visible set: every tool of
	// each namespace, plus each tool listed. Both empty: every tool.
	Namespaces []string `json:"namespaces,omitempty"`
	Tools      []string `json:"tools,omitempty"`
	// Skills are the skills search and describe show (and hub connect
	// --profile installs in the agents). Empty: every skill of the hub.
	Skills []string `json:"skills,omitempty"`
}

// Profile modes.
const (
	ModeCode   = "code"
	ModeDirect = "direct"
)

// DefaultProfile is served at /mcp and by serve --stdio without --profile:
// code mode over every tool, unless its record says otherwise.
const DefaultProfile = "default"

// ErrUnknownProfile is returned for a profile name with no record.
var ErrUnknownProfile = errors.New("unknown profile")

// ErrProfileExists is returned when adding a profile whose name is taken.
var ErrProfileExists = errors.New("profile exists")

// ValidProfileName checks a profile name: 1 to 64 characters of a-z, 0-9
// and '-', starting with a letter, so it fits a URL path (/mcp/<name>) and
// a harness entry name.
func ValidProfileName(name string) error {
	if name == "" || len(name) > 64 {
		return fmt.Errorf("profile name %q must be 1 to 64 characters", name)
	}
	if name[0] < 'a' || name[0] > 'z' {
		return fmt.Errorf("profile name %q must start with a lowercase letter", name)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
			return fmt.Errorf("profile name %q may contain only lowercase letters, digits and '-'", name)
		}
	}
	return nil
}

// All reports whether the profile shows every tool.
func (p *Profile) All() bool { return len(p.Namespaces) == 0 && len(p.Tools) == 0 }

// Shows reports whether the tool at address is in the profile's view.
func (p *Profile) Shows(address string) bool {
	if p.All() {
		return true
	}
	ns, _, _ := model.SplitAddress(address)
	return slices.Contains(p.Namespaces, ns) || slices.Contains(p.Tools, address)
}

// Profiles lists every profile by name; default is always there.
func (h *Hub) Profiles(ctx context.Context) ([]Profile, error) {
	ids, err := h.store.List(ctx, store.Profiles)
	if err != nil {
		return nil, fmt.Errorf("listing profiles: %w", err)
	}
	if !slices.Contains(ids, DefaultProfile) {
		ids = append(ids, DefaultProfile)
		slices.Sort(ids)
	}
	out := make([]Profile, 0, len(ids))
	for _, id := range ids {
		p, err := h.Profile(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("listing profiles: %w", err)
		}
		out = append(out, *p)
	}
	return out, nil
}

// Profile reads one profile. default without a record is code mode over
// every tool.
func (h *Hub) Profile(ctx context.Context, name string) (*Profile, error) {
	if err := ValidProfileName(name); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnknownProfile, err)
	}
	var raw json.RawMessage
	err := h.store.Get(ctx, store.Profiles, name, &raw)
	if errors.Is(err, store.ErrNotFound) {
		if name == DefaultProfile {
			return &Profile{Name: DefaultProfile, Mode: ModeCode}, nil
		}
		return nil, h.unknownProfile(ctx, name)
	}
	if err != nil {
		return nil, fmt.Errorf("reading profile %s: %w", name, err)
	}
	p, err := decodeProfile(raw)
	if err != nil {
		return nil, fmt.Errorf("reading profile %s: profiles/%s.json: %w; fix the file or remove the profile", name, name, err)
	}
	p.Name = name
	return p, nil
}

// decodeProfile reads a profile record strictly: a field a profile does not
// have (a rule, an allow list) is an error, never silently ignored.
func decodeProfile(raw []byte) (*Profile, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var p Profile
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("decoding the profile: %w (a profile has only name, mode, namespaces, tools and skills: it carries no policy)", err)
	}
	if p.Mode != ModeCode && p.Mode != ModeDirect {
		return nil, fmt.Errorf("mode %q: a profile's mode is %q or %q", p.Mode, ModeCode, ModeDirect)
	}
	return &p, nil
}

func (h *Hub) unknownProfile(ctx context.Context, name string) error {
	ps, _ := h.store.List(ctx, store.Profiles)
	if !slices.Contains(ps, DefaultProfile) {
		ps = append([]string{DefaultProfile}, ps...)
	}
	return fmt.Errorf("%w %q: the hub's profiles are %s (see `capabilities hub profiles list`)", ErrUnknownProfile, name, strings.Join(ps, ", "))
}

// checkProfile validates a profile against the hub: its name, its mode,
// and that every namespace and tool it names exists.
func (h *Hub) checkProfile(ctx context.Context, p *Profile) error {
	if err := ValidProfileName(p.Name); err != nil {
		return err
	}
	if p.Mode != ModeCode && p.Mode != ModeDirect {
		return fmt.Errorf("mode %q: pass %q (search, describe, execute) or %q (one MCP tool per visible tool)", p.Mode, ModeCode, ModeDirect)
	}
	for _, ns := range p.Namespaces {
		if _, err := h.Source(ctx, ns); err != nil {
			return err
		}
	}
	for _, a := range p.Tools {
		if _, _, _, err := h.Tool(ctx, a); err != nil {
			return err
		}
	}
	return h.checkProfileSkills(p.Skills)
}

// PutProfile validates p and writes it. create refuses a name that exists
// (default counts as existing); otherwise the profile must exist (edit).
// Nothing is written when p is refused.
func (h *Hub) PutProfile(ctx context.Context, p Profile, create bool) error {
	p.Namespaces = sortedSet(p.Namespaces)
	p.Tools = sortedSet(p.Tools)
	p.Skills = sortedSet(p.Skills)
	if err := h.checkProfile(ctx, &p); err != nil {
		return fmt.Errorf("saving profile %s: %w", p.Name, err)
	}
	defer h.Invalidate() // the views made from the old record go
	return store.UpdateJSON(ctx, h.store, store.Profiles, p.Name, func(old *Profile) (*Profile, error) {
		switch {
		case create && (old != nil || p.Name == DefaultProfile):
			return nil, fmt.Errorf("saving profile %s: %w: change it with `capabilities hub profiles edit %s`", p.Name, ErrProfileExists, p.Name)
		case !create && old == nil && p.Name != DefaultProfile:
			return nil, fmt.Errorf("saving profile %s: %w", p.Name, h.unknownProfile(ctx, p.Name))
		}
		return &p, nil
	})
}

// RemoveProfile deletes a profile. default cannot be removed (its record,
// if any, can be edited back).
func (h *Hub) RemoveProfile(ctx context.Context, name string) error {
	if name == DefaultProfile {
		return fmt.Errorf("removing profile default: default is what /mcp and a plain serve --stdio serve; it cannot be removed (edit it instead)")
	}
	if _, err := h.Profile(ctx, name); err != nil {
		return fmt.Errorf("removing profile: %w", err)
	}
	if err := h.store.Delete(ctx, store.Profiles, name); err != nil {
		return fmt.Errorf("removing profile %s: %w", name, err)
	}
	h.Invalidate()
	return nil
}

// VisibleTools returns the tools of the catalog in the profile's view,
// sorted by address. A namespace or tool the profile names that is gone
// from the hub shows nothing.
func (h *Hub) VisibleTools(ctx context.Context, p *Profile) ([]model.Tool, error) {
	c, err := h.loadCatalog(ctx)
	if err != nil {
		return nil, err
	}
	var out []model.Tool
	for _, t := range c.tools {
		if p.Shows(t.Address) {
			out = append(out, t)
		}
	}
	slices.SortFunc(out, func(a, b model.Tool) int { return strings.Compare(a.Address, b.Address) })
	return out, nil
}

// DirectCall calls one tool as a one-call run: the same run engine as
// execute, so policy, approvals, secrets, scrubbing and the journal apply
// exactly as in code mode. The run's code is the call itself, so `hub
// approve` (or any process) resumes it like any run.
//
// A call that waits for a person is owed to the agent: the same call made
// again (the same tool and arguments), from this process or any other,
// continues that run and hands over its outcome once, instead of starting
// another run that a person would approve a second time (see owed.go).
func (h *Hub) DirectCall(ctx context.Context, address string, args json.RawMessage) (*Envelope, error) {
	code, err := DirectCode(address, args)
	if err != nil {
		return nil, err
	}
	if env, err := h.continueOwed(ctx, address, args); env != nil || err != nil {
		return env, err
	}
	env, err := h.Execute(ctx, code)
	if err == nil && strings.HasPrefix(env.Status, "awaiting_") {
		h.NoteDirect(ctx, address, args, env) // a new call has no record to forget
	}
	return env, err
}

// DirectCode is the code of a direct call's run. Its result is
// {value: <the tool's result>} or, when the call failed (the upstream's
// error, a denial, a refused argument), {toolError: {code, message, hint}}.
func DirectCode(address string, args json.RawMessage) (string, error) {
	ns, tool, ok := model.SplitAddress(address)
	if !ok || model.ValidNamespace(ns) != nil {
		return "", fmt.Errorf("calling %q: %w", address, ErrUnknownTool)
	}
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage(`{}`)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(args, &obj); err != nil || obj == nil {
		return "", fmt.Errorf("calling %s: the arguments must be a JSON object", address)
	}
	compact, _ := json.Marshal(obj)
	name, _ := json.Marshal(tool)
	return fmt.Sprintf(`try { return {value: await %s[%s](%s)}; } catch (e) { if (e && e.name === "ToolError") return {toolError: {code: e.code, message: e.message, hint: e.hint}}; throw e; }`, ns, name, compact), nil
}

// changes notifies subscribers when the catalog is invalidated.
type changes struct {
	mu   sync.Mutex
	next int
	fns  map[int]func()
}

// OnChange calls fn (on a goroutine of its own) after each change that
// drops the catalog: a source, manifest, connection, policy or profile
// changed. The returned function stops it.
func (h *Hub) OnChange(fn func()) (stop func()) {
	h.changes.mu.Lock()
	defer h.changes.mu.Unlock()
	if h.changes.fns == nil {
		h.changes.fns = map[int]func(){}
	}
	id := h.changes.next
	h.changes.next++
	h.changes.fns[id] = fn
	return func() {
		h.changes.mu.Lock()
		defer h.changes.mu.Unlock()
		delete(h.changes.fns, id)
	}
}

func (h *Hub) notifyChange() {
	h.changes.mu.Lock()
	defer h.changes.mu.Unlock()
	for _, fn := range h.changes.fns {
		go fn()
	}
}

func sortedSet(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return slices.Compact(s)
}
