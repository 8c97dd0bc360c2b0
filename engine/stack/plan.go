package stack

import (
	"sort"

	"github.com/capabilities-sh/capabilities/engine/policy"
)

// Kinds of item a plan changes.
const (
	KindSource  = "source"
	KindRule    = "rule"
	KindProfile = "profile"
	KindSkill   = "skill"
)

// Ops of a change.
const (
	OpAdd    = "add"    // theirs has it, this machine does not
	OpChange = "change" // both have it, theirs differs
	OpRemove = "remove" // theirs removed it
)

// Change is one item the stack repository changed since the commit this
// machine last synced with (or, when Conflict, that both changed
// differently). Base, Mine and Theirs are the item on each side (nil where
// it is absent): a SourceFile, Rule, hub.Profile or Skill.
type Change struct {
	Kind     string
	Name     string
	Op       string
	Conflict bool
	// Loosens: applying theirs would widen what tools may do on this
	// machine (a local deny lifted or removed, an ask made allow, a new
	// allow): never applied without the person (I3).
	Loosens bool
	Base    any
	Mine    any
	Theirs  any
}

// Key names the item: "source github".
func (c Change) Key() string { return c.Kind + " " + c.Name }

// Plan is the three-way change set that brings this machine (mine) to the
// stack repository (theirs), from base, the state this machine last synced
// with (empty when never): an item theirs changed and mine did not is a
// change to apply; one mine changed and theirs did not stays (the next
// push carries it); one both changed, differently, is a conflict. Changes
// are sorted by kind (sources, skills, rules, profiles: the order they
// apply in) then name.
func Plan(base, mine, theirs *State) []Change {
	if base == nil {
		base = NewState()
	}
	var out []Change
	out = planKind(out, KindSource, base.Sources, mine.Sources, theirs.Sources)
	out = planKind(out, KindSkill, base.Skills, mine.Skills, theirs.Skills)
	out = planKind(out, KindRule, base.Rules, mine.Rules, theirs.Rules)
	out = planKind(out, KindProfile, base.Profiles, mine.Profiles, theirs.Profiles)
	for i := range out {
		if out[i].Kind == KindRule {
			out[i].Loosens = loosens(out[i].Mine, out[i].Theirs)
		}
	}
	return out
}

func planKind[T any](out []Change, kind string, base, mine, theirs map[string]T) []Change {
	names := map[string]bool{}
	for _, m := range []map[string]T{base, mine, theirs} {
		for n := range m {
			names[n] = true
		}
	}
	sorted := make([]string, 0, len(names))
	for n := range names {
		sorted = append(sorted, n)
	}
	sort.Strings(sorted)
	for _, n := range sorted {
		b, inB := base[n]
		m, inM := mine[n]
		t, inT := theirs[n]
		bs, ms, ts := sumOf(b, inB), sumOf(m, inM), sumOf(t, inT)
		if ts == bs || ts == ms {
			continue // theirs did not change it, or both made the same change
		}
		c := Change{Kind: kind, Name: n, Conflict: ms != bs}
		switch {
		case !inT:
			c.Op = OpRemove
		case !inM:
			c.Op = OpAdd
		default:
			c.Op = OpChange
		}
		if inB {
			c.Base = b
		}
		if inM {
			c.Mine = m
		}
		if inT {
			c.Theirs = t
		}
		out = append(out, c)
	}
	return out
}

func sumOf[T any](v T, ok bool) string {
	if !ok {
		return ""
	}
	return sum(v)
}

// strictness orders a rule's action; no rule is the tool's default.
func strictness(r any) int {
	rule, ok := r.(Rule)
	if !ok {
		return -1
	}
	switch rule.Action {
	case policy.Deny:
		return 2
	case policy.Ask:
		return 1
	}
	return 0
}

// loosens reports whether replacing the local rule mine (nil: none) with
// theirs (nil: removed) widens what a tool may do here: a deny or an ask
// removed or made less strict, or a new allow.
func loosens(mine, theirs any) bool {
	m, t := strictness(mine), strictness(theirs)
	if t == 0 && m != 0 {
		return true // a new allow, or a deny or ask made allow
	}
	if m > 0 && (t == -1 || t < m) {
		return true
	}
	return false
}
