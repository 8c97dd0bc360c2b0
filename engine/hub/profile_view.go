package hub

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/capabilities-sh/capabilities/engine/index"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/policy"
	"github.com/capabilities-sh/capabilities/engine/sandbox"
	"github.com/capabilities-sh/capabilities/engine/skill"
	"github.com/capabilities-sh/capabilities/engine/typegen"
)

// A code-mode profile narrows search, describe and execute to its view.
// The MCP server serving a profile puts the profile's name in the context
// of each request (WithProfile); the hub reads it where search, describe
// and a run's namespaces are chosen. A context without one (the CLI, the
// console, `hub approve`) sees the whole hub, and so does a profile that
// lists nothing.
//
// The view only selects: a tool outside it is not in the run's namespaces
// (the sandbox refuses a call to it, and its namespace is not a global),
// and a tool inside it is decided by the hub's one policy like any call.

type profileCtxKey struct{}

// WithProfile returns ctx for requests served through the named profile:
// Search, Describe and Execute (and a run's hub.search, hub.describe and
// namespaces) see only the profile's namespaces, tools and skills.
func WithProfile(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, profileCtxKey{}, name)
}

// profileName is the profile ctx was made for, "" for none.
func profileName(ctx context.Context) string {
	n, _ := ctx.Value(profileCtxKey{}).(string)
	return n
}

// view is a narrowed profile's part of one catalog: made on first use and
// dropped with the catalog (a profile's change invalidates it).
type view struct {
	p     *Profile
	tools []model.Tool // visible, by address (denied ones too: a call to one is denied, not unknown)

	nssOnce sync.Once
	nss     *sandbox.Namespaces

	searchOnce sync.Once
	index      *index.Index
	desc       *typegen.Describer
}

// views caches each profile's view in a catalog, by profile name.
type views struct {
	mu sync.Mutex
	m  map[string]*view // nil entry: the profile shows everything
}

// viewOf is the view the request in ctx is served through: nil when it
// sees the whole hub (no profile, or a profile that lists nothing).
func (h *Hub) viewOf(ctx context.Context, c *catalog) (*view, error) {
	name := profileName(ctx)
	if name == "" {
		return nil, nil
	}
	c.views.mu.Lock()
	v, ok := c.views.m[name]
	c.views.mu.Unlock()
	if ok {
		return v, nil
	}
	p, err := h.Profile(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("reading the served profile: %w", err)
	}
	if !p.All() {
		v = &view{p: p}
		for _, t := range c.tools {
			if p.Shows(t.Address) {
				v.tools = append(v.tools, t)
			}
		}
	}
	if v == nil && !p.AllSkills() {
		v = &view{p: p} // every tool (the catalog's own index), some skills
	}
	c.views.mu.Lock()
	defer c.views.mu.Unlock()
	if c.views.m == nil {
		c.views.m = map[string]*view{}
	}
	if old, ok := c.views.m[name]; ok {
		return old, nil
	}
	c.views.m[name] = v
	return v, nil
}

// namespaces is the set a run served through the view sees.
func (v *view) namespaces() *sandbox.Namespaces {
	v.nssOnce.Do(func() {
		m := map[string][]string{}
		for _, tl := range v.tools {
			ns, name, _ := model.SplitAddress(tl.Address)
			m[ns] = append(m[ns], name)
		}
		v.nss = sandbox.NewNamespaces(m)
	})
	return v.nss
}

// search builds the view's search index and describer once, with the
// catalog's policy marks.
func (v *view) search(c *catalog) (*index.Index, *typegen.Describer) {
	v.searchOnce.Do(func() {
		var visible []model.Tool
		for _, t := range v.tools {
			if c.verdicts[t.Address] != policy.Deny {
				visible = append(visible, t)
			}
		}
		v.index = index.New(v.tools, c.indexOpts)
		v.desc = typegen.NewDescriber(visible)
	})
	return v.index, v.desc
}

// searcher is what Search and Describe read for the request in ctx.
func (h *Hub) searcher(ctx context.Context, c *catalog) (*index.Index, *typegen.Describer, *view, error) {
	v, err := h.viewOf(ctx, c)
	if err != nil {
		return nil, nil, nil, err
	}
	if v == nil || v.p.All() {
		ix, d := c.search()
		return ix, d, v, nil
	}
	ix, d := v.search(c)
	return ix, d, v, nil
}

// runNamespaces is the namespace set a new run in ctx sees.
func (h *Hub) runNamespaces(ctx context.Context, c *catalog) (*sandbox.Namespaces, error) {
	v, err := h.viewOf(ctx, c)
	if err != nil {
		return nil, err
	}
	if v == nil || v.p.All() {
		return c.namespaces(), nil
	}
	return v.namespaces(), nil
}

// outsideView refuses a tool the request's profile does not show (the
// sandbox already refuses a call outside the run's namespaces; this holds
// for a run's replay too).
func (h *Hub) outsideView(ctx context.Context, c *catalog, address string) error {
	v, err := h.viewOf(ctx, c)
	if err != nil || v == nil || v.p.All() || v.p.Shows(address) {
		return err
	}
	return fmt.Errorf("%w %q: it is not in profile %s (%s)", ErrUnknownTool, address, v.p.Name, v.p.viewText())
}

// skillShown reports whether the request's profile shows the skill.
func (h *Hub) skillShown(ctx context.Context, name string) bool {
	pn := profileName(ctx)
	if pn == "" {
		return true
	}
	c, err := h.loadCatalog(ctx)
	if err != nil {
		return false
	}
	v, err := h.viewOf(ctx, c)
	if err != nil {
		return false
	}
	return v == nil || v.p.ShowsSkill(name)
}

// notDefined matches QuickJS's message for a global that does not exist.
var notDefined = regexp.MustCompile(`^(?:ReferenceError: )?'?([A-Za-z_$][\w$]*)'? is not defined`)

// explainOutside adds to a failed run's error, when the code used a
// namespace of the hub that the profile does not show, what the profile
// shows: the namespace is not there, which is not a policy decision.
func (h *Hub) explainOutside(ctx context.Context, env *Envelope) {
	if env == nil || env.Error == nil || env.Error.Hint != "" {
		return
	}
	m := notDefined.FindStringSubmatch(env.Error.Message)
	if m == nil {
		return
	}
	c, err := h.loadCatalog(ctx)
	if err != nil {
		return
	}
	if profileName(ctx) == "" {
		// Every namespace is the code's: this one is none of them.
		if c.sources[m[1]] == nil && len(c.sources) > 0 {
			names := slices.Sorted(maps.Keys(c.sources))
			env.Error.Hint = fmt.Sprintf("%s is not a namespace of the hub; its namespaces are %s (hub.search(\"what you need\") finds tools by what they do)", m[1], strings.Join(names, ", "))
		}
		return
	}
	v, err := h.viewOf(ctx, c)
	if err != nil || v == nil || v.p.All() || c.sources[m[1]] == nil {
		return
	}
	env.Error.Hint = fmt.Sprintf("%s is a namespace of the hub, but not of profile %s, which shows %s; a person can add it with `capabilities hub profiles edit %s --add-namespace %s`", m[1], v.p.Name, v.p.viewText(), v.p.Name, m[1])
}

// viewText says what a profile shows, for messages.
func (p *Profile) viewText() string {
	var parts []string
	if p.All() {
		parts = append(parts, "every tool")
	}
	if len(p.Namespaces) > 0 {
		parts = append(parts, "namespaces "+strings.Join(p.Namespaces, ", "))
	}
	if len(p.Tools) > 0 {
		parts = append(parts, "tools "+strings.Join(p.Tools, ", "))
	}
	if len(p.Skills) > 0 {
		parts = append(parts, "skills "+strings.Join(p.Skills, ", "))
	}
	return strings.Join(parts, "; ")
}

// AllSkills reports whether the profile shows every skill of the hub.
func (p *Profile) AllSkills() bool { return len(p.Skills) == 0 }

// ShowsSkill reports whether the skill is in the profile's view.
func (p *Profile) ShowsSkill(name string) bool {
	return p.AllSkills() || slices.Contains(p.Skills, name)
}

// checkProfileSkills checks that every skill a profile lists is in the hub.
func (h *Hub) checkProfileSkills(names []string) error {
	if len(names) == 0 {
		return nil
	}
	st, ok := h.Skills()
	for _, n := range names {
		if !ok {
			return fmt.Errorf("skill %q: %w", n, skill.ErrNotFound)
		}
		if _, err := st.Get(n); err != nil {
			have := []string{}
			if all, lerr := st.List(); lerr == nil {
				for _, s := range all {
					have = append(have, s.Name)
				}
			}
			return fmt.Errorf("skill %q: %w (its skills: %s; see `capabilities hub skills list`)", n, err, listOrNone(have))
		}
	}
	return nil
}

func listOrNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
