// Package typegen turns the JSON Schemas of tools into the TypeScript a model
// reads before it writes code: one-line signatures for search, and exact
// declarations for describe.
//
//	sig := typegen.Signature(&tool)        // github.createIssue(input: { owner: string; … }): Promise<CreateIssueResult>
//	d := typegen.NewDescriber(tools)       // once per set of manifests
//	ts, err := d.Describe([]string{"github.createIssue", "github.CreateIssueResult"}, typegen.Options{})
//
// Describe returns, per namespace, a `declare const <namespace>: { … }` block
// with one method per tool, `name(input: {…}, options?: CallOptions):
// Promise<Out>`, and a `declare namespace <namespace> { … }` block with the
// named types the methods use (TypeScript merges a type-only namespace with
// a const of the same name, so `github.Issue` resolves). Named types are:
// `$defs`/`$ref` targets (by their definition name), each tool's output
// (`<Method>Result`, from outputSchema) and every nested object type
// (`<Method><Property>…`, inlined unless the budget says otherwise). Every
// name can be a describe target on its own.
//
// Budget: Options.Budget caps the estimated tokens of the output (default
// DefaultBudget; negative means no limit). Describe tries levels of detail in
// order — full JSDoc with nested objects inlined, then nested objects beyond
// depth 2, 1, 0 replaced by their names, then JSDoc cut to first sentences —
// and takes the first that fits whole. When none does it keeps the most
// compact level, adds tools and then types while they fit, and ends with a
// comment naming what it left out and how to get it. Tokens are estimated
// as bytes/4 (see Tokens), a slight overestimate for this kind of text
// under the o200k tokenizer; not an exact count.
//
// Malformed or unsupported schemas never fail: what cannot be typed becomes
// `unknown`, so the output is always valid TypeScript (a test compiles every
// declaration of the corpus with tsc --strict, and a fuzz test checks the
// generator).
package typegen

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/capabilities-sh/capabilities/engine/model"
)

// DefaultBudget is the token budget of Describe when Options.Budget is 0.
const DefaultBudget = 2500

// MaxTargets is the most targets one Describe call accepts.
const MaxTargets = 10

// ErrUnknownTarget is wrapped by Describe's error for a target that names no
// namespace, tool or type.
var ErrUnknownTarget = errors.New("unknown target")

// Options tune Describe.
type Options struct {
	// Budget is the most tokens the output may take (estimated, see
	// Tokens); 0 means DefaultBudget, negative means no limit.
	Budget int
}

// Tokens estimates the tokens a model spends reading s: one per 4 bytes.
// Measured with the o200k tokenizer on the declarations of the corpus's 19
// namespaces, TypeScript with JSDoc takes 4.0 to 4.8 bytes per token (about
// 4.4 overall), so this errs on the side of spending less than the budget.
func Tokens(s string) int { return (len(s) + 3) / 4 }

// callOptions is declared once in every output that has methods.
const callOptions = "interface CallOptions { connection?: string }\n"

// toolDecl is one tool, converted.
type toolDecl struct {
	address, method, doc string
	input                *typ
	output               *named // nil without an outputSchema
}

// space is one namespace: its tools and named types, converted on first
// use.
type space struct {
	ns       string
	raw      []*model.Tool
	once     sync.Once
	reg      *registry
	tools    []*toolDecl
	byMethod map[string]*toolDecl
}

func (sp *space) load() *space {
	sp.once.Do(func() {
		sp.reg, sp.byMethod = newRegistry(), map[string]*toolDecl{}
		for _, t := range sp.raw {
			sp.add(t)
		}
		sp.raw = nil
	})
	return sp
}

func (sp *space) add(t *model.Tool) {
	_, method, ok := model.SplitAddress(t.Address)
	if !ok || sp.byMethod[method] != nil {
		return
	}
	d := buildTool(sp.reg, t, method)
	sp.tools = append(sp.tools, d)
	sp.byMethod[method] = d
}

func buildTool(reg *registry, t *model.Tool, method string) *toolDecl {
	d := &toolDecl{address: t.Address, method: method, doc: t.Description, input: tUnknown}
	p := pascal(method)
	if root, err := decode(t.InputSchema); err == nil {
		b := &builder{reg: reg, root: root, method: p, refs: map[string]*typ{}}
		d.input = b.conv(root, p, false)
	}
	if len(t.OutputSchema) > 0 {
		if root, err := decode(t.OutputSchema); err == nil {
			b := &builder{reg: reg, root: root, method: p, refs: map[string]*typ{}}
			n := reg.add(nil, docOf(root), p+"Result")
			n.t = b.conv(root, n.name, false)
			if n.t.kind == kObject {
				n.t.name = n.name
			}
			d.output = n
		}
	}
	return d
}

// Signature is the tool's one-line TypeScript signature, as search shows
// it: the address, the input's fields (required first; optional ones while
// the line stays short, then a count), and the output type's name.
//
//	github.createIssue(input: { owner: string; repo: string; title: string; /* 4 more optional */ }): Promise<unknown>
func Signature(t *model.Tool) string {
	_, method, _ := model.SplitAddress(t.Address)
	d := buildTool(newRegistry(), t, method)
	var b strings.Builder
	b.WriteString(t.Address + "(")
	b.WriteString(sigInput(d.input))
	b.WriteString("): Promise<" + outName(d, "") + ">")
	return b.String()
}

const (
	sigWidth     = 150 // input fields shown while the input stays this short
	sigTypeWidth = 48  // a field's type longer than this is shortened
)

func sigInput(in *typ) string {
	if in.kind == kUnknown {
		return ""
	}
	if in.kind != kObject {
		r := &renderer{compact: true}
		r.typ(in, 0, "")
		s := r.b.String()
		if strings.HasPrefix(s, "Record<string, ") {
			return ""
		}
		return "input: " + s
	}
	if len(in.props) == 0 {
		return ""
	}
	var parts []string
	width, more, required := 0, 0, false
	for _, p := range in.props {
		s := sigProp(p)
		if !p.required && width+len(s) > sigWidth {
			more++
			continue
		}
		required = required || p.required
		width += len(s) + 2
		parts = append(parts, s)
	}
	if more > 0 {
		parts = append(parts, fmt.Sprintf("/* %d more optional */", more))
	}
	opt := "?"
	if required {
		opt = ""
	}
	return "input" + opt + ": { " + strings.Join(parts, "; ") + " }"
}

func sigProp(p prop) string {
	render := func(t *typ, depth int) string {
		r := &renderer{compact: true, depth: depth}
		r.typ(t, 1, "")
		return r.b.String()
	}
	s := render(p.t, 1)
	if len(s) > sigTypeWidth {
		s = render(widen(p.t), 0)
	}
	if p.required {
		return propName(p.name) + ": " + s
	}
	return propName(p.name) + "?: " + s
}

func outName(d *toolDecl, qual string) string {
	if d.output == nil || d.output.t.kind == kUnknown {
		return "unknown"
	}
	return qual + d.output.name
}

// Describer renders declarations for a fixed set of tools. Build it once per
// set of manifests; it is safe for concurrent use.
type Describer struct {
	spaces map[string]*space
	names  []string // namespaces, sorted
}

// NewDescriber groups tools by the namespace of their address, keeping
// their order within it. A namespace's schemas are converted the first time
// it is described, so building is cheap. The Describer keeps pointers into
// tools: do not modify them afterwards.
func NewDescriber(tools []model.Tool) *Describer {
	d := &Describer{spaces: map[string]*space{}}
	for i := range tools {
		ns, _, ok := model.SplitAddress(tools[i].Address)
		if !ok {
			continue
		}
		sp := d.spaces[ns]
		if sp == nil {
			sp = &space{ns: ns}
			d.spaces[ns] = sp
			d.names = append(d.names, ns)
		}
		sp.raw = append(sp.raw, &tools[i])
	}
	sort.Strings(d.names)
	return d
}

// group is what one namespace contributes to a Describe output.
type group struct {
	sp    *space
	tools []*toolDecl
	types []string
}

// Describe renders the declarations of targets: tool addresses
// ("github.createIssue"), namespaces ("github") or named types
// ("github.Issue"), 1 to MaxTargets of them, within opts.Budget.
func (d *Describer) Describe(targets []string, opts Options) (string, error) {
	if len(targets) == 0 {
		return "", fmt.Errorf("no targets: pass 1 to %d tool addresses (github.createIssue), namespaces (github) or type names (github.Issue)", MaxTargets)
	}
	if len(targets) > MaxTargets {
		return "", fmt.Errorf("too many targets (%d): pass at most %d and describe the rest in another call", len(targets), MaxTargets)
	}
	var groups []*group
	byNS := map[string]*group{}
	seen := map[string]bool{}
	for _, target := range targets {
		sp, tools, typ, err := d.resolve(strings.TrimSpace(target))
		if err != nil {
			return "", err
		}
		g := byNS[sp.ns]
		if g == nil {
			g = &group{sp: sp}
			byNS[sp.ns] = g
			groups = append(groups, g)
		}
		for _, t := range tools {
			if !seen[t.address] {
				seen[t.address] = true
				g.tools = append(g.tools, t)
			}
		}
		if typ != "" && !seen[sp.ns+"."+typ] {
			seen[sp.ns+"."+typ] = true
			g.types = append(g.types, typ)
		}
	}
	budget := opts.Budget
	if budget == 0 {
		budget = DefaultBudget
	}
	if budget < 0 {
		return assemble(groups, levels[0], -1), nil
	}
	for _, lv := range levels {
		if out := assemble(groups, lv, budget); out != "" {
			return out, nil
		}
	}
	// Fill to a limit, lowering it until the whole output, wrappers and
	// closing comment included, fits.
	for limit := budget; ; {
		out := assembleGreedy(groups, levels[len(levels)-1], budget, limit)
		over := Tokens(out) - budget
		if over <= 0 || limit <= 0 {
			return out, nil
		}
		limit -= over + 8
	}
}

// level is a level of detail.
type level struct {
	depth int  // nested objects deeper than this are referenced by name
	short bool // JSDoc cut to first sentences
}

var levels = []level{{1 << 20, false}, {2, false}, {1, false}, {0, false}, {0, true}}

func (sp *space) renderer(lv level) *renderer {
	return &renderer{qual: sp.ns + ".", depth: lv.depth, short: lv.short}
}

// method renders one tool as a method of the namespace const.
func (sp *space) method(t *toolDecl, lv level) (string, []string) {
	r := sp.renderer(lv)
	r.doc(t.doc, "  ")
	r.b.WriteString("  " + t.method + "(")
	in := t.input
	switch {
	case in.kind == kUnknown:
		r.b.WriteString("input?: Record<string, unknown>")
	case in.kind == kObject && len(in.props) > 0 && in.props[0].required:
		r.b.WriteString("input: ")
		r.typ(in, 0, "  ")
	case in.kind == kObject, in.kind == kLit && strings.HasPrefix(in.text, "Record<"):
		r.b.WriteString("input?: ")
		r.typ(in, 0, "  ")
	default:
		r.b.WriteString("input: ")
		r.typ(in, 0, "  ")
	}
	r.b.WriteString(", options?: CallOptions): Promise<")
	if out := outName(t, ""); out != "unknown" {
		r.ref(out)
	} else {
		r.b.WriteString(out)
	}
	r.b.WriteString(">;\n")
	return r.b.String(), r.used
}

// decl renders a named type inside the namespace block.
func (sp *space) decl(n *named, lv level) (string, []string) {
	r := sp.renderer(lv)
	r.doc(n.doc, "  ")
	t := n.t
	if t == nil || sp.selfAlias(n.name, t, map[string]bool{}) {
		t = tUnknown
	}
	if t.kind == kObject {
		r.b.WriteString("  interface " + n.name + " {\n")
		r.members(t, 0, "    ")
		r.b.WriteString("  }\n")
	} else {
		r.b.WriteString("  type " + n.name + " = ")
		r.typ(t, 0, "  ")
		r.b.WriteString(";\n")
	}
	return r.b.String(), r.used
}

// selfAlias reports whether a type alias would reference itself without an
// object or array in between, which TypeScript rejects.
func (sp *space) selfAlias(name string, t *typ, seen map[string]bool) bool {
	switch t.kind {
	case kRef:
		if t.text == name {
			return true
		}
		if seen[t.text] {
			return false
		}
		seen[t.text] = true
		n := sp.reg.byName[t.text]
		return n != nil && n.t != nil && n.t.kind != kObject && sp.selfAlias(name, n.t, seen)
	case kUnion, kInter:
		for _, it := range t.items {
			if sp.selfAlias(name, it, seen) {
				return true
			}
		}
	}
	return false
}

// assemble renders groups at lv, or returns "" when the result exceeds the
// budget (negative: no limit).
func assemble(groups []*group, lv level, budget int) string {
	var b strings.Builder
	for _, g := range groups {
		if len(g.tools) > 0 {
			b.WriteString(callOptions)
			break
		}
	}
	for _, g := range groups {
		var methods, decls strings.Builder
		var queue []string
		over := func() bool { return budget >= 0 && Tokens(b.String())+(methods.Len()+decls.Len())/4 > budget }
		for _, t := range g.tools {
			s, used := g.sp.method(t, lv)
			methods.WriteString(s)
			queue = append(queue, used...)
			if over() {
				return ""
			}
		}
		queue = append(append([]string(nil), g.types...), queue...)
		declared := map[string]bool{}
		for i := 0; i < len(queue); i++ {
			n := g.sp.reg.byName[queue[i]]
			if n == nil || declared[n.name] {
				continue
			}
			declared[n.name] = true
			s, used := g.sp.decl(n, lv)
			decls.WriteString(s)
			queue = append(queue, used...)
			if over() {
				return ""
			}
		}
		writeGroup(&b, g.sp.ns, methods.String(), decls.String())
		if budget >= 0 && Tokens(b.String()) > budget {
			return ""
		}
	}
	return b.String()
}

func writeGroup(b *strings.Builder, ns, methods, decls string) {
	if methods != "" {
		b.WriteString("declare const " + ns + ": {\n" + methods + "};\n")
	}
	if decls != "" {
		b.WriteString("declare namespace " + ns + " {\n" + decls + "}\n")
	}
}

// trailerReserve is the budget kept for the closing comment.
const trailerReserve = 80

// assembleGreedy renders at lv as much as fits: the first target always,
// then tools, then the types they use, in order.
func assembleGreedy(groups []*group, lv level, budget, limit int) string {
	var b strings.Builder
	tokens := Tokens(callOptions) + trailerReserve
	var left []string // types
	var leftTools []string
	toolsLeft := map[string]int{}
	included := 0
	fits := func(s string) bool {
		c := Tokens(s)
		if included > 0 && tokens+c > limit {
			return false
		}
		tokens += c
		included++
		return true
	}
	hasTools := false
	for _, g := range groups {
		var methods, decls strings.Builder
		var queue []string
		for _, t := range g.tools {
			if toolsLeft[g.sp.ns] > 0 { // keep the shown tools a prefix
				toolsLeft[g.sp.ns]++
				continue
			}
			s, used := g.sp.method(t, lv)
			if !fits(s) {
				if toolsLeft[g.sp.ns] == 0 {
					leftTools = append(leftTools, g.sp.ns)
				}
				toolsLeft[g.sp.ns]++
				continue
			}
			hasTools = true
			methods.WriteString(s)
			queue = append(queue, used...)
		}
		queue = append(append([]string(nil), g.types...), queue...)
		declared := map[string]bool{}
		for i := 0; i < len(queue); i++ {
			n := g.sp.reg.byName[queue[i]]
			if n == nil || declared[n.name] {
				continue
			}
			declared[n.name] = true
			s, used := g.sp.decl(n, lv)
			if !fits(s) {
				left = append(left, g.sp.ns+"."+n.name)
				continue
			}
			decls.WriteString(s)
			queue = append(queue, used...)
		}
		writeGroup(&b, g.sp.ns, methods.String(), decls.String())
	}
	out := b.String()
	if hasTools {
		out = callOptions + out
	}
	for _, ns := range leftTools {
		out += fmt.Sprintf("// %d more tools of %s left out to stay within %d tokens: find them with search (namespace %q) and describe them by address.\n", toolsLeft[ns], ns, budget, ns)
	}
	if len(left) > 0 {
		const show = 12
		list, extra := left, ""
		if len(list) > show {
			extra = fmt.Sprintf(" and %d more", len(list)-show)
			list = list[:show]
		}
		out += fmt.Sprintf("// Left out to stay within %d tokens: %s%s. Describe these types by name to see them.\n", budget, strings.Join(list, ", "), extra)
	}
	return out
}

// resolve finds what a target names.
func (d *Describer) resolve(target string) (*space, []*toolDecl, string, error) {
	ns, rest, hasDot := strings.Cut(target, ".")
	sp := d.spaces[ns]
	if sp != nil {
		sp.load()
	}
	if !hasDot {
		if sp == nil {
			return nil, nil, "", fmt.Errorf("%w %q: no namespace with that name; %s", ErrUnknownTarget, target, closest(target, d.names))
		}
		return sp, sp.tools, "", nil
	}
	if sp == nil {
		return nil, nil, "", fmt.Errorf("%w %q: no namespace %q; %s", ErrUnknownTarget, target, ns, closest(ns, d.names))
	}
	if t := sp.byMethod[rest]; t != nil {
		return sp, []*toolDecl{t}, "", nil
	}
	if t := sp.byMethod[model.ToolIdent(rest)]; t != nil && rest != "" { // an upstream name: github.create_issue
		return sp, []*toolDecl{t}, "", nil
	}
	if n := sp.reg.byName[rest]; n != nil {
		return sp, nil, rest, nil
	}
	cands := make([]string, 0, len(sp.tools)+len(sp.reg.order))
	for _, t := range sp.tools {
		cands = append(cands, t.address)
	}
	for _, n := range sp.reg.order {
		cands = append(cands, ns+"."+n.name)
	}
	return nil, nil, "", fmt.Errorf("%w %q: no tool or type with that address; %s", ErrUnknownTarget, target, closest(target, cands))
}

// closest names up to three candidates nearest to s by edit distance.
func closest(s string, cands []string) string {
	names := model.Closest(s, cands, 3)
	if len(names) == 0 {
		return "there are none"
	}
	return "closest: " + strings.Join(names, ", ")
}
