package hub

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"github.com/capabilities-sh/capabilities/engine/index"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/policy"
	"github.com/capabilities-sh/capabilities/engine/sandbox"
	"github.com/capabilities-sh/capabilities/engine/typegen"
	"github.com/capabilities-sh/capabilities/store"
	"github.com/google/jsonschema-go/jsonschema"
)

// catalog is what search and describe read: the search index and the
// TypeScript describer over every cached tool. It is built from the store
// on first use and rebuilt after Invalidate.
type catalog struct {
	tools   []model.Tool
	byAddr  map[string]*model.Tool
	sources map[string]*model.Source // by namespace
	proto   map[string]string        // negotiated protocol, by namespace
	// The search index and the describer are built on first use (Prepare
	// builds them in the background): execute needs neither.
	searchOnce sync.Once
	newSearch  func() (*index.Index, *typegen.Describer)
	index      *index.Index
	desc       *typegen.Describer

	mu      sync.Mutex
	schemas map[string]*jsonschema.Resolved // input schemas by contract

	nssOnce sync.Once
	nss     *sandbox.Namespaces
	// nsFingerprint is the store's state this catalog was read from, when
	// the store had been quiet (nscache.go); "" otherwise.
	nsFingerprint string

	// credentials is done once every stored credential is in the hub's
	// scrubber (knowEveryCredential).
	credentials sync.Once

	// What a profile's view needs to build its own index (profile_view.go).
	verdicts  map[string]policy.Action
	indexOpts index.Options
	views     views
}

// search builds the search index and the describer once.
func (c *catalog) search() (*index.Index, *typegen.Describer) {
	c.searchOnce.Do(func() { c.index, c.desc = c.newSearch() })
	return c.index, c.desc
}

// namespaces is the set every run sees while this catalog is current: made
// once, so a run's cost does not grow with the number of tools.
func (c *catalog) namespaces() *sandbox.Namespaces {
	c.nssOnce.Do(func() {
		m := map[string][]string{}
		for _, tl := range c.tools {
			ns, name, _ := model.SplitAddress(tl.Address)
			m[ns] = append(m[ns], name)
		}
		c.nss = sandbox.NewNamespaces(m)
	})
	return c.nss
}

// Invalidate drops the cached catalog; the next search or describe rebuilds
// it from the store. Call it when sources or manifests change (the serve
// loop's store watcher does).
//
// What was dropped is current with the store's generation read before it
// (generation.go): the next request reads the store again only when
// another write came since.
func (h *Hub) Invalidate() {
	g, genOK := h.storeGeneration()
	h.catalogGen.Add(1)
	h.catalog.Store(nil)
	h.secrets.mu.Lock()
	h.secrets.refs = nil
	h.secrets.mu.Unlock()
	if genOK {
		h.noteGeneration(g)
	}
	h.notifyChange()
}

func (h *Hub) loadCatalog(ctx context.Context) (*catalog, error) {
	if c := h.catalog.Load(); c != nil {
		return c, nil
	}
	// One build at a time: an execute that comes while Prepare builds waits
	// for that build instead of doing the same work beside it.
	h.catalogMu.Lock()
	defer h.catalogMu.Unlock()
	if c := h.catalog.Load(); c != nil {
		return c, nil
	}
	gen := h.catalogGen.Load()
	fp, quiet, ok := h.nsFingerprint()
	if !ok || !quiet {
		fp = ""
	}
	recs, bad, err := h.readSources(ctx)
	for _, b := range bad {
		h.log.Warn("a source is left out of the hub: its record cannot be read", "namespace", b.Namespace, "err", b.Err)
	}
	if err != nil {
		return nil, err
	}
	var tools []model.Tool
	sources := map[string]*model.Source{}
	proto := map[string]string{}
	for i := range recs {
		ns := recs[i].Source.Namespace
		sources[ns] = &recs[i].Source
		if m := recs[i].Manifest; m != nil {
			tools = append(tools, m.Tools...)
			proto[ns] = m.Protocol
		}
	}
	sort.Slice(tools, func(i, j int) bool { return tools[i].Address < tools[j].Address })
	pol, err := h.Policy(ctx)
	if err != nil {
		return nil, err
	}
	// Search and describe show the policy for the default connection:
	// denied tools are hidden (and counted), the rest marked [asks] when a
	// call would need a person.
	verdicts := make(map[string]policy.Action, len(tools))
	visible := tools[:0:0]
	for i := range tools {
		a := pol.Decide(&tools[i], "").Action
		verdicts[tools[i].Address] = a
		if a != policy.Deny {
			visible = append(visible, tools[i])
		}
	}
	byAddr := make(map[string]*model.Tool, len(tools))
	for i := range tools {
		byAddr[tools[i].Address] = &tools[i]
	}
	conns := h.connectionNames(ctx, sources)
	ixOpts := index.Options{
		Asks:   func(t *model.Tool) bool { return verdicts[t.Address] != policy.Allow },
		Hidden: func(t *model.Tool) bool { return verdicts[t.Address] == policy.Deny },
		Connections: func(ns string) ([]string, string) {
			c := conns[ns]
			return c.names, c.def
		},
	}
	c := &catalog{
		tools:         tools,
		byAddr:        byAddr,
		sources:       sources,
		proto:         proto,
		schemas:       map[string]*jsonschema.Resolved{},
		verdicts:      verdicts,
		indexOpts:     ixOpts,
		nsFingerprint: fp,
		newSearch: func() (*index.Index, *typegen.Describer) {
			return index.New(tools, ixOpts), typegen.NewDescriber(visible)
		},
	}
	// An Invalidate while this build read the store may have come after it
	// read the part that changed: this caller gets the catalog, the next
	// one builds again.
	if h.catalogGen.Load() == gen {
		h.catalog.Store(c)
	}
	return c, nil
}

// connectionNames are a source's connection names and its default one.
type connectionNames struct {
	names []string
	def   string
}

// connectionNames reads, for search's header lines, the connections of
// every source that has a choice of them (two or more): names and the
// default, never a secret. A source with one connection or none gets no
// header; a record that cannot be read is logged and gets none either (a
// call through it says what is wrong).
func (h *Hub) connectionNames(ctx context.Context, sources map[string]*model.Source) map[string]connectionNames {
	ids, err := h.store.List(ctx, store.Connections)
	if err != nil {
		h.log.Warn("reading connections for search", "err", err)
		return nil
	}
	out := map[string]connectionNames{}
	for _, ns := range ids {
		if sources[ns] == nil {
			continue
		}
		c, err := store.Get[model.Connections](ctx, h.store, store.Connections, ns)
		if err != nil {
			h.log.Warn("reading connections for search", "namespace", ns, "err", err)
			continue
		}
		if len(c.Items) < 2 {
			continue
		}
		cn := connectionNames{def: c.Default}
		for _, it := range c.Items {
			cn.names = append(cn.names, it.Name)
		}
		out[ns] = cn
	}
	return out
}

// SearchQuery is a search request.
type SearchQuery = index.Query

// SearchResult is what search found; Text() renders it for the model.
type SearchResult = index.Result

// Search finds tools by intent over the cached manifests. It never waits on
// an upstream.
func (h *Hub) Search(ctx context.Context, q SearchQuery) (SearchResult, error) {
	defer h.busy()()
	h.current()
	c, err := h.loadCatalog(ctx)
	if err != nil {
		return SearchResult{}, fmt.Errorf("searching: %w", err)
	}
	ix, _, v, err := h.searcher(ctx, c)
	if err != nil {
		return SearchResult{}, fmt.Errorf("searching: %w", err)
	}
	skills := h.searchSkills(ctx, q)
	if len(c.tools) == 0 || v != nil && !v.p.All() && len(v.tools) == 0 {
		if len(skills) > 0 {
			return index.SkillsOnly(q, skills), nil
		}
		if len(c.tools) > 0 {
			return SearchResult{}, fmt.Errorf("searching: profile %s shows no tool of the hub (%s)", v.p.Name, v.p.viewText())
		}
		return SearchResult{}, fmt.Errorf("searching: the hub has no tools yet; add a source with `capabilities hub add`")
	}
	res, err := ix.Search(q)
	if err != nil {
		return SearchResult{}, fmt.Errorf("searching: %w", err)
	}
	res.Skills = skills
	return res, nil
}

// Describe renders exact TypeScript declarations for tool addresses,
// namespaces or named types, within a token budget (0: the default).
func (h *Hub) Describe(ctx context.Context, targets []string, budget int) (string, error) {
	defer h.busy()()
	h.current()
	skills, targets := splitSkillTargets(targets)
	var out string
	if len(skills) > 0 {
		s, err := h.describeSkills(ctx, skills)
		if err != nil {
			return "", fmt.Errorf("describing: %w", err)
		}
		out = s
		if len(targets) == 0 {
			return out, nil
		}
	}
	c, err := h.loadCatalog(ctx)
	if err != nil {
		return "", fmt.Errorf("describing: %w", err)
	}
	_, desc, _, err := h.searcher(ctx, c)
	if err != nil {
		return "", fmt.Errorf("describing: %w", err)
	}
	decl, err := desc.Describe(targets, typegen.Options{Budget: budget})
	if err != nil {
		return "", fmt.Errorf("describing: %w", err)
	}
	if out != "" {
		return out + "\n" + decl, nil
	}
	return decl, nil
}

// schema returns the tool's resolved input schema, resolved once per
// contract (nil when the schema cannot be used by the validator).
func (c *catalog) schema(t *model.Tool) *jsonschema.Resolved {
	c.mu.Lock()
	defer c.mu.Unlock()
	if rs, ok := c.schemas[t.Contract]; ok {
		return rs
	}
	rs := resolveSchema(t)
	c.schemas[t.Contract] = rs
	return rs
}
